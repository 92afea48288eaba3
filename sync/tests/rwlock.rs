//! RwLock: shared readers, exclusive writers, writer priority by default (a waiting writer
//! blocks later readers), reader priority by option, timeouts and futures.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::RwLock;
use fibra_testing::{let_others_run, on, on_each_worker_count, poll_once, until_parked};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn readers_share_and_writers_exclude() {
    for lock in [RwLock::new(0u64), RwLock::new_reader_priority(0u64)] {
        on_each_worker_count(|_| {
            *lock.write() = 0;
            let readers = AtomicUsize::new(0);
            fibra_runtime::scope(|s| {
                for i in 0..24 {
                    let (lock, readers) = (&lock, &readers);
                    s.spawn(move || {
                        for _ in 0..50 {
                            if i % 3 == 0 {
                                let mut guard = lock.write();
                                assert_eq!(readers.load(Ordering::SeqCst), 0);
                                let seen = *guard;
                                fibra_runtime::yield_now();
                                *guard = seen + 1;
                            } else {
                                let guard = lock.read();
                                readers.fetch_add(1, Ordering::SeqCst);
                                let seen = *guard;
                                fibra_runtime::yield_now();
                                assert_eq!(*guard, seen, "a writer got in beside a reader");
                                readers.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                    });
                }
            });
            assert_eq!(*lock.read(), 8 * 50);
        });
    }
}

/// A reader holds the lock, a writer queues, then a second reader arrives.
fn later_reader_vs_waiting_writer(lock: RwLock<Vec<&'static str>>) -> Vec<&'static str> {
    on(1, || {
        let lock = Arc::new(lock);
        let first_reader = lock.read();
        let writer = {
            let lock = lock.clone();
            fibra_runtime::spawn_local(move || lock.write().push("writer"))
        };
        let_others_run();
        let later_reader = {
            let lock = lock.clone();
            fibra_runtime::spawn_local(move || {
                let guard = lock.read();
                // What the reader saw: whether the writer went first.
                guard.contains(&"writer")
            })
        };
        let_others_run();
        let reader_is_through = later_reader.is_finished();
        drop(first_reader);
        writer.join().unwrap();
        let saw_writer = later_reader.join().unwrap();
        let mut order = lock.read().clone();
        order.push(if reader_is_through {
            "reader got in while the writer waited"
        } else {
            "reader waited behind the writer"
        });
        order.push(if saw_writer {
            "reader saw the write"
        } else {
            "reader read before the write"
        });
        order
    })
}

#[test]
fn writer_priority_a_waiting_writer_blocks_later_readers() {
    assert_eq!(
        later_reader_vs_waiting_writer(RwLock::new(Vec::new())),
        [
            "writer",
            "reader waited behind the writer",
            "reader saw the write"
        ]
    );
}

#[test]
fn reader_priority_readers_pass_a_waiting_writer() {
    assert_eq!(
        later_reader_vs_waiting_writer(RwLock::new_reader_priority(Vec::new())),
        [
            "writer",
            "reader got in while the writer waited",
            "reader read before the write"
        ]
    );
}

/// A reader-priority lock lets readers in whenever no writer holds it, even past waiting
/// writers: also a reader that queued while a writer held the lock, when a woken writer lost
/// its retry to a barging reader and queued again at the front.
#[test]
fn reader_priority_a_queued_reader_enters_past_a_requeued_writer() {
    on(1, || {
        let lock = RwLock::new_reader_priority(0u32);
        let w1 = lock.write();
        fibra_runtime::scope(|s| {
            let w2 = s.spawn(|| drop(lock.write_timeout(Duration::from_secs(10))));
            until_parked(w2.fiber());
            // Bounded, so that a reader left parked fails the test instead of hanging it.
            let r = s.spawn(|| lock.read_timeout(Duration::from_secs(2)).is_ok());
            until_parked(r.fiber());
            drop(w1); // wakes W2 only: a writer wants every permit
            let reading = lock
                .try_read()
                .expect("setup: no writer holds the lock, so a reader barges in");
            // W2 retries, loses to the reader and queues again at the front, ahead of R.
            let entered = r.join().unwrap();
            drop(reading);
            w2.join().unwrap();
            assert!(
                entered,
                "the queued reader timed out while only a reader held the lock"
            );
        });
    });
}

#[test]
fn readers_queued_behind_a_writer_are_let_in_together() {
    on(1, || {
        let lock = Arc::new(RwLock::new(0));
        let writer_guard = lock.write();
        let inside = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (lock, inside) = (lock.clone(), inside.clone());
                let fiber = fibra_runtime::spawn_local(move || {
                    let _guard = lock.read();
                    inside.fetch_add(1, Ordering::SeqCst);
                    // Stay inside until all three are in together.
                    while inside.load(Ordering::SeqCst) < 3 {
                        fibra_runtime::yield_now();
                    }
                });
                let_others_run();
                fiber
            })
            .collect();
        drop(writer_guard);
        for reader in readers {
            reader.join().unwrap();
        }
        assert_eq!(inside.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn try_and_timeout_forms() {
    let lock = RwLock::new(1);
    let reader = lock.read();
    assert!(lock.try_read().is_some());
    assert!(lock.try_write().is_none());
    assert!(lock.write_timeout(Duration::from_millis(2)).is_err());
    drop(reader);
    let writer = lock.try_write().unwrap();
    assert!(lock.try_read().is_none());
    assert!(lock.read_timeout(Duration::from_millis(2)).is_err());
    drop(writer);
    assert_eq!(*lock.read_timeout(Duration::from_secs(60)).unwrap(), 1);
    *lock.write_timeout(Duration::from_secs(60)).unwrap() = 2;
    assert_eq!(lock.into_inner(), 2);
}

#[test]
fn a_timed_out_writer_lets_the_readers_behind_it_in() {
    on(1, || {
        let lock = Arc::new(RwLock::new(()));
        let reader = lock.read();
        let writer = {
            let lock = lock.clone();
            fibra_runtime::spawn_local(move || lock.write_timeout(Duration::from_millis(5)).is_ok())
        };
        let_others_run();
        let later = {
            let lock = lock.clone();
            fibra_runtime::spawn_local(move || drop(lock.read()))
        };
        let_others_run();
        assert!(!later.is_finished(), "queued behind the writer");
        assert!(!writer.join().unwrap(), "the writer timed out");
        // The writer's partial grant (everything but our reader's permit) went on.
        later.join().unwrap();
        drop(reader);
        assert!(lock.try_write().is_some());
    });
}

#[test]
fn futures_read_and_write_and_give_back_when_dropped() {
    let lock = RwLock::new(0);
    let reader = lock.read();
    let mut write = lock.write_async();
    assert!(poll_once(&mut write).is_pending());
    let mut read = lock.read_async();
    assert!(
        poll_once(&mut read).is_pending(),
        "behind the waiting writer"
    );
    drop(write);
    // With the writer gone the queued reader is let in.
    assert!(poll_once(&mut read).is_ready());
    drop(reader);
    futures::executor::block_on(async {
        *lock.write_async().await += 1;
        assert_eq!(*lock.read_async().await, 1);
    });
}

#[test]
fn get_mut_debug_and_default() {
    let mut lock = RwLock::<Vec<u8>>::default();
    lock.get_mut().push(1);
    let writer = lock.write();
    assert_eq!(format!("{lock:?}"), "RwLock { data: <locked>, .. }");
    drop(writer);
    assert_eq!(format!("{lock:?}"), "RwLock { data: [1], .. }");
}
