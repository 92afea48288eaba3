//! A lock or acquisition that needs no wait is still a runtime operation: it costs the fiber a
//! reduction (a fiber looping on a free lock ends its slice and lets the others run) and it is
//! a cancellation point. The `try_*` forms are neither.

#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_runtime::{scope_with, shield, CancelToken, Runtime, ScopeOptions};
use fibra_sync::{acquire_all, Mutex, ReentrantMutex, RwLock, Semaphore};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

/// The primitives, each behind one blocking operation that finds it free.
struct Free {
    mutex: Mutex<()>,
    reentrant: ReentrantMutex<()>,
    rwlock: RwLock<()>,
    semaphore: Semaphore,
}

/// A blocking operation on one of the [`Free`] primitives, by name.
type Operation = (&'static str, fn(&Free));

/// Every blocking form that takes a free lock or permit at once.
const OPERATIONS: [Operation; 9] = [
    ("Mutex::lock", |f| drop(f.mutex.lock())),
    ("Mutex::lock_timeout", |f| {
        drop(f.mutex.lock_timeout(Duration::from_secs(60)).unwrap())
    }),
    ("ReentrantMutex::lock", |f| drop(f.reentrant.lock())),
    ("ReentrantMutex::lock, re-locked", |f| {
        // The outer lock is a `try_lock` (neither a reduction nor a cancellation point), so
        // only the re-lock counts.
        let _outer = f.reentrant.try_lock().unwrap();
        drop(f.reentrant.lock());
    }),
    ("RwLock::read", |f| drop(f.rwlock.read())),
    ("RwLock::write", |f| drop(f.rwlock.write())),
    ("Semaphore::acquire", |f| drop(f.semaphore.acquire())),
    ("Semaphore::acquire_n", |f| drop(f.semaphore.acquire_n(2))),
    ("acquire_all", |f| drop(acquire_all(&[(&f.semaphore, 1)]))),
];

fn free() -> Free {
    Free {
        mutex: Mutex::new(()),
        reentrant: ReentrantMutex::new(()),
        rwlock: RwLock::new(()),
        semaphore: Semaphore::new(2),
    }
}

#[test]
fn taking_a_free_lock_costs_a_reduction() {
    for (name, operation) in OPERATIONS {
        let order = Arc::new(StdMutex::new(Vec::new()));
        Runtime::builder()
            .workers(1)
            .reductions(4)
            .build()
            .unwrap()
            .block_on(|| {
                let free = free();
                // The spawn is the slice's first reduction.
                let theirs = order.clone();
                let other =
                    fibra_runtime::spawn_local(move || theirs.lock().unwrap().push("other"));
                // Shielded: a shield's operations charge reductions as well.
                shield(|| {
                    operation(&free);
                    operation(&free);
                });
                order.lock().unwrap().push("before");
                // The slice's fourth reduction: the fiber yields here, before it goes on.
                operation(&free);
                order.lock().unwrap().push("after");
                other.join().unwrap();
            });
        assert_eq!(
            *order.lock().unwrap(),
            ["before", "other", "after"],
            "{name} charged no reduction"
        );
    }
}

#[test]
fn taking_a_free_lock_is_a_cancellation_point() {
    for (name, operation) in OPERATIONS {
        fibra_testing::on_each_worker_count(|_| {
            let free = free();
            let token = CancelToken::new();
            token.cancel();
            let mut unwound = false;
            let outcome = scope_with(ScopeOptions::new().token(token), |_| {
                unwound = panic::catch_unwind(AssertUnwindSafe(|| operation(&free))).is_err();
            });
            assert!(outcome.is_err(), "the scope was cancelled");
            assert!(unwound, "{name} did not unwind the cancelled fiber");
            // Nothing was kept by the unwound operation.
            assert!(free.mutex.try_lock().is_some(), "{name}");
            assert!(free.reentrant.try_lock().is_some(), "{name}");
            assert!(free.rwlock.try_write().is_some(), "{name}");
            assert_eq!(free.semaphore.available_permits(), 2, "{name}");
        });
    }
}

#[test]
fn the_try_forms_are_neither() {
    let order = Arc::new(StdMutex::new(Vec::new()));
    Runtime::builder()
        .workers(1)
        .reductions(2)
        .build()
        .unwrap()
        .block_on(|| {
            let free = free();
            let token = CancelToken::new();
            token.cancel();
            let theirs = order.clone();
            let other = fibra_runtime::spawn_local(move || theirs.lock().unwrap().push("other"));
            let _ = scope_with(ScopeOptions::new().token(token), |_| {
                for _ in 0..10 {
                    assert!(free.mutex.try_lock().is_some());
                    assert!(free.reentrant.try_lock().is_some());
                    assert!(free.rwlock.try_read().is_some());
                    assert!(free.rwlock.try_write().is_some());
                    assert!(free.semaphore.try_acquire().is_some());
                }
                order.lock().unwrap().push("tried");
            });
            other.join().unwrap();
        });
    assert_eq!(*order.lock().unwrap(), ["tried", "other"]);
}
