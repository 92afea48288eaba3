//! Cancellation points under the fast path: a fiber's cancel hint must never hide a
//! cancellation (whichever thread requests it, whenever the fiber entered its scope), and a
//! stale hint must never unwind a fiber that is no longer cancelled.

use fibra_runtime::{
    checkpoint, is_cancellation, is_cancelled, park, scope_with, shield, CancelCause, CancelToken,
    Runtime, ScopeOptions,
};
use fibra_testing::{on, Counted};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

fn with_token(token: &CancelToken) -> ScopeOptions {
    ScopeOptions::new().token(token.clone())
}

/// Cancels `token` from a plain thread after `delay`.
fn cancel_later(token: &CancelToken, delay: Duration) -> thread::JoinHandle<()> {
    let token = token.clone();
    thread::spawn(move || {
        thread::sleep(delay);
        token.cancel();
    })
}

#[test]
fn a_cancellation_from_another_thread_unwinds_fibers_spinning_on_checkpoint() {
    for workers in [1, 2] {
        for round in 0..20 {
            let token = CancelToken::new();
            let canceller = cancel_later(&token, Duration::from_micros(200 * (round % 5)));
            let (outcome, spawned, unwound) = on(workers, || {
                let spawned = AtomicUsize::new(0);
                let unwound = AtomicUsize::new(0);
                let outcome = scope_with(with_token(&token), |s| {
                    let _body = Counted(&unwound);
                    // Keep spawning while the cancellation is in flight, so some children join
                    // the scope just before it is marked and some just after: none may miss
                    // it, or it spins (and the scope waits) for ever.
                    loop {
                        // Moved in: a child that joins the scope after it is marked is
                        // dropped unstarted.
                        let child = Counted(&unwound);
                        spawned.fetch_add(1, Ordering::SeqCst);
                        s.spawn(move || {
                            let _child = child;
                            loop {
                                checkpoint();
                            }
                        });
                        for _ in 0..50 {
                            checkpoint();
                        }
                    }
                });
                (outcome, spawned.into_inner(), unwound.into_inner())
            });
            canceller.join().unwrap();
            assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
            assert_eq!(
                unwound,
                spawned + 1,
                "{workers} workers: every fiber unwound or was dropped unstarted"
            );
        }
    }
}

#[test]
fn a_shielded_fiber_spinning_on_checkpoint_is_not_unwound_until_the_shield_ends() {
    for workers in [1, 2] {
        on(workers, || {
            let token = CancelToken::new();
            let child_unwound = AtomicBool::new(false);
            let shield_finished = AtomicBool::new(false);
            let outcome = scope_with(with_token(&token), |s| {
                struct SetOnDrop<'a>(&'a AtomicBool);
                impl Drop for SetOnDrop<'_> {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                // Moved in: a child the cancellation reaches before it starts is dropped
                // unstarted.
                let unwound = SetOnDrop(&child_unwound);
                s.spawn(move || {
                    let _unwound = unwound;
                    loop {
                        checkpoint();
                    }
                });
                shield(|| {
                    let canceller = cancel_later(&token, Duration::ZERO);
                    // The unshielded sibling unwinding (or dropped unstarted) shows the scope
                    // is marked.
                    while !child_unwound.load(Ordering::SeqCst) {
                        checkpoint();
                    }
                    for _ in 0..100_000 {
                        checkpoint();
                    }
                    assert!(!is_cancelled());
                    canceller.join().unwrap();
                    shield_finished.store(true, Ordering::SeqCst);
                });
                loop {
                    checkpoint();
                }
            });
            assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
            assert!(shield_finished.load(Ordering::SeqCst));
        });
    }
}

#[test]
fn after_a_cancelled_inner_scope_checkpoint_sees_the_outer_scope() {
    on(2, || {
        let outer_token = CancelToken::new();
        let outer = scope_with(with_token(&outer_token), |_| {
            let inner_token = CancelToken::new();
            let canceller = cancel_later(&inner_token, Duration::from_millis(1));
            let inner = scope_with(with_token(&inner_token), |_| loop {
                checkpoint();
            });
            canceller.join().unwrap();
            assert_eq!(inner.unwrap_err().cause(), CancelCause::Token);
            // The inner cancellation is over: the outer scope is not cancelled.
            for _ in 0..100_000 {
                checkpoint();
            }
            assert!(!is_cancelled());
            assert!(fibra_runtime::check_cancel().is_ok());
            park_briefly();
            // And when it is, the same loop unwinds.
            let canceller = cancel_later(&outer_token, Duration::from_millis(1));
            let spun = panic::catch_unwind(AssertUnwindSafe(|| loop {
                checkpoint();
            }));
            canceller.join().unwrap();
            panic::resume_unwind(spun.unwrap_err());
        });
        assert_eq!(outer.unwrap_err().cause(), CancelCause::Token);
    });
}

/// A park that returns: cancellation points on both sides of the switch must pass.
fn park_briefly() {
    fibra_runtime::current().unpark();
    park();
    fibra_runtime::sleep(Duration::from_millis(1));
}

#[test]
fn fibers_spawned_into_an_already_cancelled_scope_are_dropped_unstarted() {
    on(2, || {
        let token = CancelToken::new();
        token.cancel();
        let (started, dropped) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let outcome = scope_with(with_token(&token), |s| {
            // Spawned into the cancelled scope (shielded, so the body gets to spawn them).
            shield(|| {
                for _ in 0..100 {
                    let (started, child) = (&started, Counted(&dropped));
                    s.spawn(move || {
                        let _child = child;
                        started.fetch_add(1, Ordering::SeqCst);
                        loop {
                            checkpoint();
                        }
                    });
                }
            });
            // A scope entered inside a cancelled one is cancelled on entry, and the
            // cancellation passes through it.
            let inner = scope_with(ScopeOptions::new(), |_| loop {
                checkpoint();
            });
            unreachable!("the outer cancellation stopped at the inner scope: {inner:?}");
        });
        assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
        assert_eq!(started.into_inner(), 0);
        assert_eq!(dropped.into_inner(), 100);
    });
}

#[test]
fn a_caught_cancellation_is_raised_again_at_the_next_point() {
    on(1, || {
        let token = CancelToken::new();
        token.cancel();
        let outcome = scope_with(with_token(&token), |_| {
            for _ in 0..3 {
                let caught = panic::catch_unwind(checkpoint).unwrap_err();
                assert!(is_cancellation(&*caught));
            }
            let caught = panic::catch_unwind(park).unwrap_err();
            assert!(is_cancellation(&*caught));
            checkpoint();
            unreachable!("checkpoint unwinds");
        });
        assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
    });
}

#[test]
fn a_fiber_that_caught_its_cancellation_still_yields_when_its_slice_ends() {
    let order = Arc::new(Mutex::new(Vec::new()));
    Runtime::builder()
        .workers(1)
        .reductions(10)
        .build()
        .unwrap()
        .block_on(|| {
            let token = CancelToken::new();
            token.cancel();
            // Spawned outside the cancelled scope, which would drop it unstarted.
            let theirs = order.clone();
            let other = fibra_runtime::spawn_local(move || theirs.lock().unwrap().push("other"));
            let _ = scope_with(with_token(&token), |_| {
                // Ten checkpoints end the slice, but every one of them unwinds first.
                for _ in 0..10 {
                    assert!(panic::catch_unwind(checkpoint).is_err());
                }
                order.lock().unwrap().push("before");
                // The slice is still used up: the next checkpoint yields (here, under a
                // shield, rather than unwinding).
                shield(checkpoint);
                order.lock().unwrap().push("after");
                shield(|| other.join().unwrap());
            });
        });
    assert_eq!(*order.lock().unwrap(), ["before", "other", "after"]);
}

#[test]
fn plain_threads_pass_cancellation_points() {
    for _ in 0..1000 {
        checkpoint();
    }
    assert!(!is_cancelled());
    assert!(fibra_runtime::check_cancel().is_ok());
    shield(|| {
        checkpoint();
        assert!(!is_cancelled());
    });
    thread::spawn(|| {
        checkpoint();
        assert!(fibra_runtime::check_cancel().is_ok());
    })
    .join()
    .unwrap();
}
