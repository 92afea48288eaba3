//! ReentrantMutex: the owning fiber re-locks; other fibers, even on the same worker, wait.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::ReentrantMutex;
use fibra_testing::{let_others_run, on, on_each_worker_count};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_owner_relocks_and_the_lock_is_released_with_its_last_guard() {
    on(1, || {
        let mutex = Arc::new(ReentrantMutex::new(RefCell::new(Vec::new())));
        let outer = mutex.lock();
        let inner = mutex.lock();
        inner.borrow_mut().push("inner");
        let other = {
            let mutex = mutex.clone();
            fibra_runtime::spawn_local(move || mutex.lock().borrow_mut().push("other"))
        };
        let_others_run();
        drop(inner);
        let_others_run();
        // One guard is still held: the other fiber (same worker) still waits.
        assert!(!other.is_finished());
        assert!(mutex.is_locked());
        outer.borrow_mut().push("outer");
        drop(outer);
        other.join().unwrap();
        assert_eq!(*mutex.lock().borrow(), ["inner", "outer", "other"]);
    });
}

#[test]
fn two_fibers_on_one_worker_exclude_each_other() {
    on(1, || {
        let mutex = Arc::new(ReentrantMutex::new(()));
        let _held = mutex.lock();
        let other = {
            let mutex = mutex.clone();
            fibra_runtime::spawn_local(move || {
                (
                    mutex.try_lock().is_some(),
                    mutex.lock_timeout(Duration::from_millis(2)).is_ok(),
                )
            })
        };
        assert_eq!(other.join().unwrap(), (false, false));
        // The owner itself re-locks, by try and with a timeout.
        assert!(mutex.try_lock().is_some());
        assert!(mutex.lock_timeout(Duration::from_millis(2)).is_ok());
    });
}

#[test]
fn counts_are_exact_with_nested_locking() {
    let mutex = ReentrantMutex::new(RefCell::new(0u64));
    on_each_worker_count(|_| {
        *mutex.lock().borrow_mut() = 0;
        fibra_runtime::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for _ in 0..100 {
                        let outer = mutex.lock();
                        let seen = *outer.borrow();
                        fibra_runtime::yield_now();
                        let inner = mutex.lock();
                        *inner.borrow_mut() = seen + 1;
                    }
                });
            }
        });
        assert_eq!(*mutex.lock().borrow(), 1600);
    });
}

#[test]
fn a_thread_and_a_fiber_are_different_owners() {
    let mutex = Arc::new(ReentrantMutex::new(()));
    let held_by_thread = mutex.lock();
    on(1, || {
        let mutex = mutex.clone();
        assert!(mutex.try_lock().is_none(), "the fiber is not the thread");
    });
    drop(held_by_thread);
    assert!(mutex.try_lock().is_some());
}

#[test]
fn get_mut_into_inner_and_debug() {
    let mut mutex = ReentrantMutex::new(1);
    *mutex.get_mut() += 1;
    assert_eq!(format!("{mutex:?}"), "ReentrantMutex { data: 2, .. }");
    assert_eq!(mutex.into_inner(), 2);
}
