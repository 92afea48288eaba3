//! Every timed wait holds its runtime while it waits, and only then: a fiber waiting on a
//! scope deadline, on a timer channel (blocking or async) shows up in `Handle::holds` as a
//! `Timer` hold, and the hold is gone once the wait ends.

use fibra_channels::{close_after, tick, Reader};
use fibra_runtime::{Handle, HoldInfo, HoldKind, ScopeOptions};
use std::time::Duration;

/// Far beyond the test: the waits end because the test ends them, never by their deadline.
const HOUR: Duration = Duration::from_secs(3600);

fn holds_of(kind: HoldKind) -> Vec<HoldInfo> {
    let mut holds = Handle::current().holds();
    holds.retain(|hold| hold.kind == kind);
    holds
}

/// Yields until `count` holds of `kind` are open; panics (instead of hanging) if they never
/// are.
fn wait_for_holds(kind: HoldKind, count: usize) -> Vec<HoldInfo> {
    for _ in 0..1_000_000 {
        let holds = holds_of(kind);
        if holds.len() == count {
            return holds;
        }
        fibra_runtime::yield_now();
    }
    panic!("expected {count} {kind} holds, found {:?}", holds_of(kind));
}

/// Runs `wait` in a fiber, checks that it holds one timer (and `also` of `extra`) while it
/// waits, ends it with `end`, and checks that nothing is held after.
fn holds_while_waiting(
    workers: usize,
    wait: impl FnOnce() + Send + 'static,
    end: impl FnOnce(),
    extra: Option<HoldKind>,
) {
    fibra_testing::on(workers, || {
        assert!(Handle::current().holds().is_empty());
        let waiting = fibra_runtime::spawn(wait);
        let timers = wait_for_holds(HoldKind::Timer, 1);
        assert!(timers[0].owner.is_some(), "the waiting fiber owns its hold");
        if let Some(kind) = extra {
            wait_for_holds(kind, 1);
        }
        assert!(!waiting.is_finished());
        end();
        waiting.join().unwrap();
        assert_eq!(Handle::current().holds().len(), 0, "the holds are released");
    });
}

#[test]
fn a_scope_deadline_holds_a_timer_while_the_scope_waits() {
    for workers in [1, 2] {
        let (tx, rx) = fibra_channels::bounded::<()>(0);
        holds_while_waiting(
            workers,
            move || {
                let scoped =
                    fibra_runtime::scope_with(ScopeOptions::new().timeout(HOUR), |_| rx.recv());
                assert_eq!(scoped.unwrap(), Some(()));
            },
            || tx.send(()).unwrap(),
            None,
        );
        // The hold names the line that opened the scope.
        fibra_testing::on(workers, || {
            let scope = fibra_runtime::spawn(|| {
                fibra_runtime::scope_with(ScopeOptions::new().timeout(HOUR), |_| {
                    fibra_runtime::park();
                })
            });
            let timers = wait_for_holds(HoldKind::Timer, 1);
            assert!(timers[0].location.file().ends_with("holds.rs"));
            scope.fiber().unpark();
            scope.join().unwrap().unwrap();
            assert!(Handle::current().holds().is_empty());
        });
    }
}

/// A timer reader and a clone of it that the test closes to end the wait early.
fn with_closer<T>(reader: Reader<T>) -> (Reader<T>, Reader<T>) {
    (reader.clone(), reader)
}

#[test]
fn a_blocking_receive_on_a_timer_channel_holds_a_timer_while_it_waits() {
    for workers in [1, 2] {
        let (timeout, closer) = with_closer(close_after(HOUR));
        holds_while_waiting(
            workers,
            move || assert_eq!(timeout.recv(), None),
            || assert!(closer.close()),
            None,
        );
        let (ticks, closer) = with_closer(tick(HOUR));
        holds_while_waiting(
            workers,
            move || assert_eq!(ticks.recv(), None),
            || assert!(closer.close()),
            None,
        );
    }
}

#[test]
fn an_async_receive_on_a_timer_channel_holds_a_timer_while_it_waits() {
    for workers in [1, 2] {
        let (timeout, closer) = with_closer(close_after(HOUR));
        holds_while_waiting(
            workers,
            move || assert_eq!(fibra_runtime::block_on(timeout.recv_async()), None),
            || assert!(closer.close()),
            Some(HoldKind::Future),
        );
    }
}

#[test]
fn a_wait_without_a_deadline_holds_nothing() {
    fibra_testing::on(1, || {
        let (tx, rx) = fibra_channels::bounded::<u8>(0);
        let waiting = fibra_runtime::spawn(move || rx.recv());
        // Past its retries: registered and parked.
        for _ in 0..10 * fibra_runtime::wait::RETRY_TURNS {
            fibra_runtime::yield_now();
        }
        assert!(!waiting.is_finished());
        assert!(Handle::current().holds().is_empty());
        tx.send(1).unwrap();
        assert_eq!(waiting.join().unwrap(), Some(1));
    });
}
