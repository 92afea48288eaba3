//! The async forms of OnceCell, Once and Lazy: one initializer runs, whether fibers or futures
//! ask; a dropped initializing future leaves the cell empty and exactly one waiter takes over;
//! panics poison Once and Lazy for async callers too.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Event, Lazy, Once, OnceCell};
use fibra_testing::{let_others_run, on_each_worker_count, poll_once, until_parked};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::Poll;

/// A panic's message, whether it was formatted or a literal.
fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast::<&str>().map(|m| m.to_string()).unwrap(),
    }
}

/// An initializer that counts its runs and, once started, finishes with `value` only after
/// `gate` is set.
async fn gated(runs: &AtomicUsize, gate: &Event, value: u32) -> u32 {
    runs.fetch_add(1, SeqCst);
    gate.wait_async().await;
    value
}

#[test]
fn one_future_initializes_and_the_others_wait_for_it() {
    let (cell, runs, gate) = (OnceCell::new(), AtomicUsize::new(0), Event::new());
    let mut first = cell.get_or_init_async(|| gated(&runs, &gate, 1));
    let mut second = cell.get_or_init_async(|| gated(&runs, &gate, 2));
    assert!(
        poll_once(&mut first).is_pending(),
        "running its initializer"
    );
    assert!(poll_once(&mut second).is_pending(), "waiting for the first");
    gate.set();
    assert_eq!(poll_once(&mut second), Poll::Pending, "not woken yet");
    assert_eq!(poll_once(&mut first), Poll::Ready(&1));
    assert_eq!(poll_once(&mut second), Poll::Ready(&1));
    assert_eq!(runs.load(SeqCst), 1);
}

/// Dropped before its first poll or while waiting, a future leaves no trace; the initializing
/// one dropped mid-init leaves the cell empty, and exactly one of the waiters — not one
/// woken and dropped before it ran again — initializes with its own initializer.
#[test]
fn a_dropped_initializing_future_hands_the_initialization_to_one_waiter() {
    let (cell, runs, gate) = (OnceCell::new(), AtomicUsize::new(0), Event::new());
    drop(cell.get_or_init_async(|| gated(&runs, &gate, 0)));
    let mut first = cell.get_or_init_async(|| gated(&runs, &gate, 1));
    assert!(poll_once(&mut first).is_pending());
    let (runs, gate) = (&runs, &gate);
    let mut waiters: Vec<_> = (2..=5)
        .map(|value| cell.get_or_init_async(move || gated(runs, gate, value)))
        .collect();
    for waiter in &mut waiters {
        assert!(poll_once(waiter).is_pending());
    }
    // Queued, then dropped: nothing to pass on.
    drop(waiters.remove(0));
    drop(first);
    assert_eq!(
        cell.get(),
        None,
        "a dropped initializer leaves the cell empty"
    );
    // Woken by the drop, then dropped before it ran again.
    drop(waiters.remove(0));
    let (mut second, mut others) = (waiters.remove(0), waiters);
    assert!(
        poll_once(&mut second).is_pending(),
        "running its own initializer"
    );
    for other in &mut others {
        assert!(poll_once(other).is_pending(), "waiting for the second");
    }
    gate.set();
    assert_eq!(poll_once(&mut second), Poll::Ready(&4));
    for other in &mut others {
        assert_eq!(poll_once(other), Poll::Ready(&4));
    }
    assert_eq!(runs.load(SeqCst), 2, "the first and the second ran theirs");
}

/// A fiber parked in `get_or_init` behind a future's initializer runs its own when the future is
/// dropped mid-init.
#[test]
fn a_fiber_takes_over_from_a_dropped_initializing_future() {
    on_each_worker_count(|_| {
        let (cell, runs, gate) = (Arc::new(OnceCell::new()), AtomicUsize::new(0), Event::new());
        let mut initializing = cell.get_or_init_async(|| gated(&runs, &gate, 1));
        assert!(poll_once(&mut initializing).is_pending());
        let fiber = {
            let cell = cell.clone();
            fibra_runtime::spawn(move || *cell.get_or_init(|| 2))
        };
        until_parked(fiber.fiber());
        drop(initializing);
        assert_eq!(fiber.join().unwrap(), 2);
        assert_eq!(cell.get(), Some(&2));
    });
}

/// A tokio task waits in `get_or_init_async` while a fiber runs the initializer.
#[test]
fn a_tokio_task_waits_for_a_fibers_initializer() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let cell = Arc::new(OnceCell::new());
        let (started, release) = (Arc::new(Event::new()), Arc::new(Event::new()));
        let fiber = {
            let (cell, started, release) = (cell.clone(), started.clone(), release.clone());
            fibra_runtime::spawn(move || {
                *cell.get_or_init(|| {
                    started.set();
                    release.wait();
                    1
                })
            })
        };
        started.wait();
        let task = tokio.spawn({
            let cell = cell.clone();
            async move { *cell.get_or_init_async(|| async { 2 }).await }
        });
        let_others_run();
        release.set();
        assert_eq!(fiber.join().unwrap(), 1);
        assert_eq!(fibra_runtime::block_on(task).unwrap(), 1);
    });
}

/// A fiber waits in `get_or_init` while a tokio task's future runs the initializer.
#[test]
fn a_fiber_waits_for_a_tokio_tasks_initializer() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let cell = Arc::new(OnceCell::new());
        let (started, release) = (Arc::new(Event::new()), Arc::new(Event::new()));
        let task = tokio.spawn({
            let (cell, started, release) = (cell.clone(), started.clone(), release.clone());
            async move {
                let init = || async {
                    started.set();
                    release.wait_async().await;
                    1
                };
                *cell.get_or_init_async(init).await
            }
        });
        started.wait();
        let fiber = {
            let cell = cell.clone();
            fibra_runtime::spawn(move || *cell.get_or_init(|| 2))
        };
        let_others_run();
        release.set();
        assert_eq!(fibra_runtime::block_on(task).unwrap(), 1);
        assert_eq!(fiber.join().unwrap(), 1);
    });
}

#[test]
fn get_or_try_init_async_leaves_the_cell_empty_on_error_and_after_a_panic() {
    let cell = OnceCell::new();
    let failed = futures::executor::block_on(cell.get_or_try_init_async(|| async { Err("no") }));
    assert_eq!(failed, Err("no"));
    let mut panicking = cell.get_or_init_async(|| async { panic!("init failed") });
    let panicked = catch_unwind(AssertUnwindSafe(|| poll_once(&mut panicking)));
    assert_eq!(message(panicked.unwrap_err()), "init failed");
    assert_eq!(cell.get(), None);
    let set = futures::executor::block_on(cell.get_or_try_init_async(|| async { Ok::<_, ()>(3) }));
    assert_eq!(set, Ok(&3));
}

#[test]
fn call_once_async_runs_once_and_a_fiber_waits_for_it() {
    on_each_worker_count(|_| {
        let (once, runs, gate) = (Arc::new(Once::new()), AtomicUsize::new(0), Event::new());
        let mut first = once.call_once_async(|| async {
            gated(&runs, &gate, 0).await;
        });
        assert!(poll_once(&mut first).is_pending());
        let fiber = {
            let once = once.clone();
            fibra_runtime::spawn(move || once.call_once(|| unreachable!("the future runs it")))
        };
        until_parked(fiber.fiber());
        gate.set();
        assert_eq!(poll_once(&mut first), Poll::Ready(()));
        fiber.join().unwrap();
        assert!(once.is_completed());
        assert_eq!(runs.load(SeqCst), 1);
    });
}

#[test]
fn a_dropped_call_once_async_leaves_the_once_incomplete() {
    let (once, runs, gate) = (Once::new(), AtomicUsize::new(0), Event::new());
    let mut first = once.call_once_async(|| async {
        gated(&runs, &gate, 0).await;
    });
    assert!(poll_once(&mut first).is_pending());
    drop(first);
    assert!(!once.is_completed());
    let mut ran = false;
    once.call_once(|| ran = true);
    assert!(ran);
}

/// A panic in the initializer's future poisons the `Once`: a fiber parked on it meanwhile, later
/// blocking callers and later futures all panic with the message `call_once` uses.
#[test]
fn a_panicking_async_initializer_poisons_the_once_for_everyone() {
    on_each_worker_count(|_| {
        let (once, gate) = (Arc::new(Once::new()), Event::new());
        let mut panicking = once.call_once_async(|| async {
            gate.wait_async().await;
            panic!("init failed");
        });
        assert!(poll_once(&mut panicking).is_pending());
        let parked = {
            let once = once.clone();
            fibra_runtime::spawn(move || {
                catch_unwind(AssertUnwindSafe(|| once.call_once(|| {}))).map_err(message)
            })
        };
        until_parked(parked.fiber());
        gate.set();
        let panicked = catch_unwind(AssertUnwindSafe(|| poll_once(&mut panicking)));
        assert_eq!(message(panicked.unwrap_err()), "init failed");
        let poisoned = "Once instance has previously been poisoned";
        assert_eq!(parked.join().unwrap().unwrap_err(), poisoned);
        let blocking = catch_unwind(AssertUnwindSafe(|| once.call_once(|| {})));
        assert_eq!(message(blocking.unwrap_err()), poisoned);
        let mut later = once.call_once_async(|| async {});
        let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut later)));
        assert_eq!(message(polled.unwrap_err()), poisoned);
    });
}

#[test]
fn a_once_poisoned_by_call_once_panics_for_async_callers_with_the_same_message() {
    let once = Once::new();
    assert!(catch_unwind(|| once.call_once(|| panic!("init failed"))).is_err());
    let blocking = message(catch_unwind(|| once.call_once(|| {})).unwrap_err());
    let mut later = once.call_once_async(|| async {});
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut later)));
    assert_eq!(message(polled.unwrap_err()), blocking);
}

/// A tokio task's `force_async` waits while a fiber runs the initializer, and the reverse; the
/// initializer runs once.
#[test]
fn lazy_force_async_waits_for_a_fiber_and_a_fiber_for_it() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let (started, release) = (Arc::new(Event::new()), Arc::new(Event::new()));
        let runs = Arc::new(AtomicUsize::new(0));
        let lazy = {
            let (started, release, runs) = (started.clone(), release.clone(), runs.clone());
            Arc::new(Lazy::new(move || {
                runs.fetch_add(1, SeqCst);
                started.set();
                release.wait();
                7
            }))
        };
        let fiber = {
            let lazy = lazy.clone();
            fibra_runtime::spawn(move || **lazy)
        };
        started.wait();
        let task = tokio.spawn({
            let lazy = lazy.clone();
            async move { *Lazy::force_async(&lazy).await }
        });
        let_others_run();
        release.set();
        assert_eq!(fiber.join().unwrap(), 7);
        assert_eq!(fibra_runtime::block_on(task).unwrap(), 7);
        assert_eq!(runs.load(SeqCst), 1);
    });
}

#[test]
fn a_poisoned_lazy_panics_for_async_callers_too() {
    let lazy: Lazy<u8> = Lazy::new(|| panic!("init failed"));
    let mut first = Lazy::force_async(&lazy);
    let panicked = catch_unwind(AssertUnwindSafe(|| poll_once(&mut first)));
    assert_eq!(message(panicked.unwrap_err()), "init failed");
    let blocking = message(catch_unwind(AssertUnwindSafe(|| *lazy)).unwrap_err());
    assert_eq!(blocking, "Lazy instance has previously been poisoned");
    let mut later = Lazy::force_async(&lazy);
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut later)));
    assert_eq!(message(polled.unwrap_err()), blocking);
}
