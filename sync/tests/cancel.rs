//! Cancellation: a fiber cancelled while it waits unwinds out of the wait, leaves
//! the queue, and passes on whatever it had been granted; guards it held are released.

#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_runtime::wait::WaitKind;
use fibra_runtime::{scope_with, CancelToken, Scope, ScopeOptions};
use fibra_sync::{Condvar, Mutex, Semaphore};
use fibra_testing::{let_others_run, on, on_each_worker_count, parked_wait, until_parked};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Runs `waiters` in a scope that is cancelled once they have all started waiting.
fn cancel_while_waiting<'env>(
    started: &AtomicUsize,
    waiters: usize,
    spawn: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>),
) {
    let token = CancelToken::new();
    let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
        spawn(s);
        while started.load(Ordering::SeqCst) < waiters {
            fibra_runtime::yield_now();
        }
        // Give them time to park; correctness does not depend on it.
        fibra_runtime::sleep(std::time::Duration::from_millis(2));
        token.cancel();
        fibra_runtime::checkpoint();
    });
    assert!(outcome.is_err(), "the scope was cancelled");
}

#[test]
fn cancelled_lock_waiters_leave_the_queue() {
    on_each_worker_count(|_| {
        for mutex in [Mutex::new(0), Mutex::new_unfair(0)] {
            let held = mutex.lock();
            let started = AtomicUsize::new(0);
            cancel_while_waiting(&started, 3, |s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        started.fetch_add(1, Ordering::SeqCst);
                        *mutex.lock() += 1;
                    });
                }
            });
            // Had a cancelled waiter stayed queued, the unlock would hand the lock to nobody.
            drop(held);
            assert_eq!(*mutex.try_lock().expect("free after the unlock"), 0);
        }
    });
}

#[test]
fn a_cancelled_holder_releases_and_the_waiters_go_on() {
    on_each_worker_count(|_| {
        let mutex = Mutex::new(0);
        let started = AtomicUsize::new(0);
        fibra_runtime::scope(|outer| {
            // Waiters outside the cancelled scope, queued behind the doomed holder.
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    outer.spawn(|| {
                        while started.load(Ordering::SeqCst) == 0 {
                            fibra_runtime::yield_now();
                        }
                        *mutex.lock() += 1;
                    })
                })
                .collect();
            cancel_while_waiting(&started, 1, |s| {
                s.spawn(|| {
                    let _guard = mutex.lock();
                    started.fetch_add(1, Ordering::SeqCst);
                    fibra_runtime::sleep(std::time::Duration::from_secs(3600));
                });
            });
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
        assert_eq!(*mutex.lock(), 3);
    });
}

#[test]
fn a_cancelled_large_request_gives_back_its_partial_grant() {
    on_each_worker_count(|_| {
        let sem = Semaphore::new(1);
        let started = AtomicUsize::new(0);
        cancel_while_waiting(&started, 1, |s| {
            s.spawn(|| {
                started.fetch_add(1, Ordering::SeqCst);
                // Collects the one permit at the head of the queue, then waits for a second.
                sem.acquire_n(2).forget();
            });
        });
        assert_eq!(sem.available_permits(), 1);
        assert_eq!(sem.try_acquire_n(1).map(|p| p.count()), Some(1));
    });
}

#[test]
fn a_cancelled_condvar_waiter_leaves_the_queue() {
    on_each_worker_count(|_| {
        let (lock, cv) = (Mutex::new(false), Condvar::new());
        let started = AtomicUsize::new(0);
        fibra_runtime::scope(|outer| {
            let survivor = outer.spawn(|| {
                let guard = cv.wait_while(lock.lock(), |ready| !*ready);
                assert!(*guard);
            });
            cancel_while_waiting(&started, 1, |s| {
                s.spawn(|| {
                    let guard = lock.lock();
                    started.fetch_add(1, Ordering::SeqCst);
                    drop(cv.wait(guard));
                });
            });
            *lock.lock() = true;
            cv.notify_one();
            survivor.join().unwrap();
        });
        assert!(*lock.lock());
    });
}

/// A notified condvar waiter, A, is cancelled before `wait` returns; B waits behind it. The
/// one notification must reach B: A either unwinds from its park (`while_relocking` false: the
/// cancel lands before A runs) or from re-locking the mutex (true: A has left the condvar's
/// queue and waits for the mutex the notifier holds).
fn a_cancelled_notified_condvar_waiter_passes_the_notification_on(while_relocking: bool) {
    on(1, || {
        let (m, cv) = (Mutex::new(()), Condvar::new());
        let token = CancelToken::new();
        fibra_runtime::scope(|s| {
            let a = s.spawn(|| {
                let _ = scope_with(ScopeOptions::new().token(token.clone()), |_| {
                    drop(cv.wait(m.lock()));
                });
            });
            until_parked(a.fiber());
            let b = s.spawn(|| {
                // Bounded, so that a lost notification fails the test instead of hanging it.
                let (_guard, result) = cv.wait_timeout(m.lock(), Duration::from_secs(2));
                !result.timed_out()
            });
            until_parked(b.fiber());
            let held = m.lock();
            cv.notify_one(); // to A, the longest waiter
            if while_relocking {
                let_others_run();
                assert_eq!(parked_wait(a.fiber()).kind, WaitKind::Mutex, "setup");
            }
            token.cancel();
            drop(held);
            a.join().unwrap();
            assert!(
                b.join().unwrap(),
                "the notification died with A; B timed out"
            );
        });
    });
}

#[test]
fn a_condvar_waiter_cancelled_while_relocking_passes_its_notification_on() {
    a_cancelled_notified_condvar_waiter_passes_the_notification_on(true);
}

#[test]
fn a_condvar_waiter_cancelled_before_it_resumes_passes_its_notification_on() {
    a_cancelled_notified_condvar_waiter_passes_the_notification_on(false);
}
