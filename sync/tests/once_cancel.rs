//! A cancellation is not a panic: an initializer of Once, OnceCell or Lazy that unwinds because
//! its fiber was cancelled leaves the cell uninitialized, and the next caller — a fiber parked on
//! the cell meanwhile, or a later one — runs the initializer. A real panic still poisons Once and
//! Lazy, also for the fibers parked on them.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_runtime::{CancelToken, ScopeOptions};
use fibra_sync::{Lazy, Once, OnceCell};
use fibra_testing::{let_others_run, on_each_worker_count};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

/// Longer than any test runs: a wait this long ends only by cancellation.
const FOREVER: Duration = Duration::from_secs(3600);
/// The timeout that cancels an initializer blocked for [`FOREVER`].
const SHORT: Duration = Duration::from_millis(5);

/// An initializer whose first run blocks until it is cancelled; every later run returns 42.
fn first_run_blocks(runs: &AtomicUsize) -> u64 {
    if runs.fetch_add(1, SeqCst) == 0 {
        fibra_runtime::sleep(FOREVER);
    }
    42
}

/// A panic's message, whether it was formatted or a literal.
fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast::<&str>().map(|m| m.to_string()).unwrap(),
    }
}

#[test]
fn a_timeout_around_the_first_access_leaves_a_lazy_uninitialized() {
    on_each_worker_count(|_| {
        let runs = AtomicUsize::new(0);
        let lazy = Lazy::new(|| first_run_blocks(&runs));
        assert!(fibra_runtime::timeout(SHORT, || *lazy).is_err());
        assert_eq!(format!("{lazy:?}"), "Lazy(None)");
        assert_eq!(*lazy, 42, "the next access runs the initializer again");
        assert_eq!(runs.load(SeqCst), 2);
    });
}

#[test]
fn a_cancelled_initializer_leaves_once_and_once_cell_incomplete() {
    on_each_worker_count(|_| {
        let once = Once::new();
        assert!(fibra_runtime::timeout(SHORT, || {
            once.call_once(|| fibra_runtime::sleep(FOREVER))
        })
        .is_err());
        assert!(!once.is_completed());
        let mut ran = false;
        once.call_once(|| ran = true);
        assert!(ran, "the next call runs its closure");
        assert!(once.is_completed());

        let cell = OnceCell::new();
        let cancelled = fibra_runtime::timeout(SHORT, || {
            *cell.get_or_init(|| {
                fibra_runtime::sleep(FOREVER);
                0
            })
        });
        assert!(cancelled.is_err());
        assert_eq!(cell.get(), None);
        assert_eq!(*cell.get_or_init(|| 7), 7);
    });
}

/// Runs `access` in a fiber whose scope is cancelled while `access` runs the cell's initializer
/// (`started` tells when), and meanwhile `access` in a second fiber, which parks on the cell (on
/// one worker it has parked before the cancellation; on more it may come later: both orders
/// must give the same result). Returns the second fiber's result.
fn cancel_the_initializer_with_a_waiter<T: Send>(
    started: impl Fn() -> bool + Sync,
    access: impl Fn() -> T + Sync,
) -> T {
    let token = CancelToken::new();
    fibra_runtime::scope(|s| {
        let cancelled = s.spawn(|| {
            fibra_runtime::scope_with(ScopeOptions::new().token(token.clone()), |_| access())
        });
        while !started() {
            fibra_runtime::yield_now();
        }
        let waiter = s.spawn(&access);
        let_others_run();
        token.cancel();
        assert!(
            cancelled.join().unwrap().is_err(),
            "the first access was cancelled"
        );
        waiter.join().expect("the waiter is not poisoned")
    })
}

#[test]
fn a_fiber_parked_on_a_lazy_runs_the_initializer_after_a_cancelled_one() {
    on_each_worker_count(|_| {
        let runs = AtomicUsize::new(0);
        let lazy = Lazy::new(|| first_run_blocks(&runs));
        let got = cancel_the_initializer_with_a_waiter(|| runs.load(SeqCst) > 0, || *lazy);
        assert_eq!(got, 42);
        assert_eq!(runs.load(SeqCst), 2);
        assert_eq!(*lazy, 42);
    });
}

#[test]
fn a_fiber_parked_on_a_once_runs_its_closure_after_a_cancelled_one() {
    on_each_worker_count(|_| {
        let (once, calls) = (Once::new(), AtomicUsize::new(0));
        let ran = cancel_the_initializer_with_a_waiter(
            || calls.load(SeqCst) > 0,
            || {
                let mut ran = false;
                once.call_once(|| {
                    if calls.fetch_add(1, SeqCst) == 0 {
                        fibra_runtime::sleep(FOREVER);
                    }
                    ran = true;
                });
                ran
            },
        );
        assert!(ran, "the waiter ran its own closure");
        assert!(once.is_completed());
        assert_eq!(calls.load(SeqCst), 2);
    });
}

#[test]
fn a_fiber_parked_on_a_once_cell_gets_the_value_after_a_cancelled_initializer() {
    on_each_worker_count(|_| {
        let (cell, calls) = (OnceCell::new(), AtomicUsize::new(0));
        let got = cancel_the_initializer_with_a_waiter(
            || calls.load(SeqCst) > 0,
            || *cell.get_or_init(|| first_run_blocks(&calls)),
        );
        assert_eq!(got, 42);
        assert_eq!(cell.get(), Some(&42));
    });
}

/// How a panicking initializer waits for a second fiber to come to its cell.
#[derive(Default)]
struct Meeting {
    started: AtomicBool,
    arrived: AtomicBool,
}

impl Meeting {
    /// Called by the initializer: says it runs, then waits until the second fiber is on its
    /// way into the cell and has had the chance to park there.
    fn initializer_runs(&self) {
        self.started.store(true, SeqCst);
        while !self.arrived.load(SeqCst) {
            fibra_runtime::yield_now();
        }
        let_others_run();
    }
}

/// Runs `first` (whose initializer calls [`Meeting::initializer_runs`], then panics with "init
/// failed") and, once that initializer runs, `access` in a second fiber; the second must panic
/// with `poisoned` whichever order the two meet the cell in, and so must a later access.
fn a_panicking_initializer_with_a_waiter(
    meeting: &Meeting,
    first: impl Fn() + Sync,
    access: impl Fn() + Sync,
    poisoned: &str,
) {
    fibra_runtime::scope(|s| {
        let init = s.spawn(|| catch_unwind(AssertUnwindSafe(&first)).map_err(message));
        while !meeting.started.load(SeqCst) {
            fibra_runtime::yield_now();
        }
        let waiter = s.spawn(|| {
            meeting.arrived.store(true, SeqCst);
            catch_unwind(AssertUnwindSafe(&access)).map_err(message)
        });
        assert_eq!(init.join().unwrap(), Err("init failed".to_string()));
        assert_eq!(waiter.join().unwrap(), Err(poisoned.to_string()));
    });
    let later = catch_unwind(AssertUnwindSafe(access)).map_err(message);
    assert_eq!(later, Err(poisoned.to_string()));
}

#[test]
fn a_panic_in_a_fiber_still_poisons_once_and_lazy() {
    on_each_worker_count(|_| {
        let (once, meeting) = (Once::new(), Meeting::default());
        a_panicking_initializer_with_a_waiter(
            &meeting,
            || {
                once.call_once(|| {
                    meeting.initializer_runs();
                    panic!("init failed")
                })
            },
            || once.call_once(|| {}),
            "Once instance has previously been poisoned",
        );
        assert!(!once.is_completed());

        let (runs, meeting) = (AtomicUsize::new(0), Meeting::default());
        let lazy: Lazy<u8, _> = Lazy::new(|| {
            runs.fetch_add(1, SeqCst);
            meeting.initializer_runs();
            panic!("init failed")
        });
        let access = || {
            let _ = *lazy;
        };
        a_panicking_initializer_with_a_waiter(
            &meeting,
            access,
            access,
            "Lazy instance has previously been poisoned",
        );
        assert_eq!(runs.load(SeqCst), 1);
    });
}
