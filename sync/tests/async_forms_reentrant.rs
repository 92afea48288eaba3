//! ReentrantMutex::lock_async: a future locks as an owner of its own, never re-entering a
//! fiber's or thread's hold nor re-entered by one; dropped at any point it gives its place or
//! the lock it was handed on; fibers and tokio tasks on either side.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Event, ReentrantMutex};
use fibra_testing::{let_others_run, on_each_worker_count, poll_once, until_parked};
use std::sync::Arc;
use std::task::Poll;

#[test]
fn a_lock_future_neither_re_enters_nor_is_re_entered() {
    on_each_worker_count(|_| {
        let m = ReentrantMutex::new(5);
        let held = m.lock();
        let mut future = m.lock_async();
        assert!(
            poll_once(&mut future).is_pending(),
            "the polling fiber's hold is not the future's"
        );
        drop(held);
        let Poll::Ready(guard) = poll_once(&mut future) else {
            panic!("the lock was handed to the future")
        };
        assert_eq!(*guard, 5);
        assert!(
            m.try_lock().is_none(),
            "the fiber does not re-enter the future's hold"
        );
        let mut another = m.lock_async();
        assert!(
            poll_once(&mut another).is_pending(),
            "nor does another future"
        );
        drop(guard);
        assert!(poll_once(&mut another).is_ready());
    });
    // The same on a plain thread.
    let m = ReentrantMutex::new(());
    let held = m.lock();
    let mut future = m.lock_async();
    assert!(poll_once(&mut future).is_pending());
    drop(held);
    let Poll::Ready(_guard) = poll_once(&mut future) else {
        panic!("the lock was handed to the future")
    };
    assert!(m.try_lock().is_none());
}

/// Dropped before its first poll, while queued, or once handed the lock but before it was polled
/// again, the future leaves the lock free or passes it to the next waiter.
#[test]
fn a_dropped_lock_future_gives_its_place_and_its_grant_on() {
    let m = ReentrantMutex::new(());
    drop(m.lock_async());
    assert!(!m.is_locked());

    let held = m.lock();
    let mut queued = m.lock_async();
    assert!(poll_once(&mut queued).is_pending());
    drop(queued);
    drop(held);
    assert!(
        !m.is_locked(),
        "nobody was left in the queue to hand the lock to"
    );

    let held = m.lock();
    let mut granted = m.lock_async();
    assert!(poll_once(&mut granted).is_pending());
    let mut next = m.lock_async();
    assert!(poll_once(&mut next).is_pending());
    drop(held); // hands the lock to `granted`
    assert!(m.is_locked());
    drop(granted);
    let Poll::Ready(guard) = poll_once(&mut next) else {
        panic!("the dropped future's lock went on")
    };
    drop(guard);
    assert!(!m.is_locked());
}

/// A fiber unlocks what a tokio task's `lock_async` waits for.
#[test]
fn a_tokio_task_locks_what_a_fiber_unlocks() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let m = Arc::new(ReentrantMutex::new(3));
        let held = m.lock();
        let task = tokio.spawn({
            let m = m.clone();
            async move { *m.lock_async().await }
        });
        let_others_run();
        drop(held);
        assert_eq!(fibra_runtime::block_on(task).unwrap(), 3);
        assert!(!m.is_locked());
    });
}

/// A fiber waits in `lock` while a task holds the guard across an `.await`, on a current-thread
/// runtime (the guard is not `Send`).
#[test]
fn a_fiber_locks_what_a_tokio_task_unlocks() {
    on_each_worker_count(|_| {
        let m = Arc::new(ReentrantMutex::new(4));
        let (taken, release) = (Arc::new(Event::new()), Arc::new(Event::new()));
        let thread = {
            let (m, taken, release) = (m.clone(), taken.clone(), release.clone());
            std::thread::spawn(move || {
                let tokio = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                tokio.block_on(async {
                    let guard = m.lock_async().await;
                    taken.set();
                    release.wait_async().await;
                    drop(guard);
                });
            })
        };
        taken.wait();
        let fiber = {
            let m = m.clone();
            fibra_runtime::spawn(move || *m.lock())
        };
        until_parked(fiber.fiber());
        release.set();
        assert_eq!(fiber.join().unwrap(), 4);
        thread.join().unwrap();
        assert!(!m.is_locked());
    });
}
