//! Once, OnceCell and Lazy: one initializer runs, contended callers park (never block the
//! worker), panics poison Once and Lazy but let OnceCell retry, recursion panics.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Lazy, Once, OnceCell};
use fibra_testing::{let_others_run, on, on_each_worker_count};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A panic's message, whether it was formatted or a literal.
fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast::<&str>().map(|m| m.to_string()).unwrap(),
    }
}

#[test]
fn once_runs_one_initializer_and_others_wait_for_it() {
    on_each_worker_count(|_| {
        let (once, runs, after) = (Once::new(), AtomicUsize::new(0), AtomicUsize::new(0));
        fibra_runtime::scope(|s| {
            for _ in 0..10 {
                s.spawn(|| {
                    once.call_once(|| {
                        fibra_runtime::yield_now();
                        runs.fetch_add(1, Ordering::SeqCst);
                    });
                    // Nobody returns before the initializer has finished.
                    assert_eq!(runs.load(Ordering::SeqCst), 1);
                    after.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(after.load(Ordering::SeqCst), 10);
        assert!(once.is_completed());
    });
}

#[test]
fn a_contended_initializer_parks_the_other_fibers_on_one_worker() {
    on(1, || {
        let cell = Arc::new(OnceCell::new());
        let started = Arc::new(AtomicUsize::new(0));
        let initializer = {
            let (cell, started) = (cell.clone(), started.clone());
            fibra_runtime::spawn_local(move || {
                *cell.get_or_init(|| {
                    started.fetch_add(1, Ordering::SeqCst);
                    // Lets the other fibers on this worker run into the cell and park.
                    let_others_run();
                    7
                })
            })
        };
        let_others_run();
        let others: Vec<_> = (0..3)
            .map(|_| {
                let cell = cell.clone();
                fibra_runtime::spawn_local(move || *cell.get_or_init(|| 99))
            })
            .collect();
        assert_eq!(initializer.join().unwrap(), 7);
        for other in others {
            assert_eq!(other.join().unwrap(), 7);
        }
        assert_eq!(started.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn once_is_poisoned_for_good_by_a_panic() {
    let once = Once::new();
    assert!(catch_unwind(|| once.call_once(|| panic!("init failed"))).is_err());
    assert!(!once.is_completed());
    for _ in 0..2 {
        let again = catch_unwind(|| once.call_once(|| {}));
        let text = message(again.unwrap_err());
        assert_eq!(text, "Once instance has previously been poisoned");
    }
}

#[test]
fn once_cell_retries_after_a_panicking_initializer() {
    let cell = OnceCell::new();
    let failed = catch_unwind(AssertUnwindSafe(|| {
        cell.get_or_init(|| panic!("first try"))
    }));
    assert!(failed.is_err());
    assert_eq!(cell.get(), None);
    assert_eq!(*cell.get_or_init(|| 2), 2);
    assert_eq!(cell.set(3), Err(3));
}

#[test]
fn once_cell_get_or_try_init_leaves_it_empty_on_error() {
    let cell: OnceCell<u32> = OnceCell::new();
    assert_eq!(cell.get_or_try_init(|| Err("nope")), Err("nope"));
    assert_eq!(cell.get(), None);
    assert_eq!(cell.get_or_try_init(|| Ok::<_, &str>(4)), Ok(&4));
    assert_eq!(cell.get_or_try_init(|| Err("late")), Ok(&4));
}

#[test]
fn recursive_initialization_panics_instead_of_deadlocking() {
    let cell: OnceCell<u32> = OnceCell::new();
    let recursed = catch_unwind(AssertUnwindSafe(|| {
        cell.get_or_init(|| *cell.get_or_init(|| 1))
    }));
    let text = message(recursed.unwrap_err());
    assert!(text.starts_with("recursive initialization"), "{text}");
    // The outer initializer unwound too: the cell is empty and usable.
    assert_eq!(*cell.get_or_init(|| 5), 5);

    // The same inside a fiber, and for Once.
    on(1, || {
        let once = Once::new();
        let recursed = catch_unwind(AssertUnwindSafe(|| {
            once.call_once(|| once.call_once(|| {}))
        }));
        assert!(recursed.is_err());
    });
}

#[test]
fn once_cell_set_get_mut_into_inner_and_drop() {
    let mut cell = OnceCell::new();
    assert_eq!(cell.get_mut(), None);
    assert_eq!(cell.set(Arc::new(1)), Ok(()));
    let value = cell.get().unwrap().clone();
    assert_eq!(Arc::strong_count(&value), 2);
    drop(cell);
    assert_eq!(
        Arc::strong_count(&value),
        1,
        "dropping the cell drops its value"
    );
    let cell = OnceCell::new();
    cell.set(String::from("x")).unwrap();
    assert_eq!(format!("{cell:?}"), r#"OnceCell(Some("x"))"#);
    assert_eq!(cell.into_inner().as_deref(), Some("x"));
    assert_eq!(OnceCell::<u8>::new().into_inner(), None);
}

#[test]
fn lazy_computes_once_for_many_fibers() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    static VALUE: Lazy<u64> = Lazy::new(|| {
        RUNS.fetch_add(1, Ordering::SeqCst);
        fibra_runtime::yield_now();
        42
    });
    on_each_worker_count(|_| {
        fibra_runtime::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| assert_eq!(*VALUE, 42));
            }
        });
    });
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[test]
fn lazy_is_poisoned_after_a_panic() {
    let lazy: Lazy<u8> = Lazy::new(|| panic!("init failed"));
    assert!(catch_unwind(AssertUnwindSafe(|| *lazy)).is_err());
    let again = catch_unwind(AssertUnwindSafe(|| *lazy));
    let text = message(again.unwrap_err());
    assert_eq!(text, "Lazy instance has previously been poisoned");
    assert_eq!(format!("{lazy:?}"), "Lazy(None)");
}
