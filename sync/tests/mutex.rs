//! Mutex: mutual exclusion, fair FIFO handoff, unfair barging, timeouts, futures, no poisoning,
//! and that a waiting fiber never blocks its worker.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Mutex, TimedOut};
use fibra_testing::{let_others_run, on, on_each_worker_count, poll_once};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn counts_are_exact_under_contention_fair_and_unfair() {
    for mutex in [Mutex::new(0u64), Mutex::new_unfair(0u64)] {
        on_each_worker_count(|_| {
            *mutex.lock() = 0;
            fibra_runtime::scope(|s| {
                for _ in 0..32 {
                    s.spawn(|| {
                        for _ in 0..200 {
                            let mut guard = mutex.lock();
                            let seen = *guard;
                            fibra_runtime::yield_now(); // hold it across a switch
                            *guard = seen + 1;
                        }
                    });
                }
            });
            assert_eq!(*mutex.lock(), 32 * 200);
        });
    }
}

#[test]
fn two_fibers_on_one_worker_contend_without_blocking_the_thread() {
    on(1, || {
        let mutex = Arc::new(Mutex::new(Vec::new()));
        let held = mutex.lock();
        let other = {
            let mutex = mutex.clone();
            fibra_runtime::spawn_local(move || mutex.lock().push("other"))
        };
        // The other fiber runs on this very thread and parks on the lock; we keep running.
        let_others_run();
        assert!(!other.is_finished());
        assert_eq!(fibra_runtime::current_worker(), Some(0));
        drop(held);
        other.join().unwrap();
        assert_eq!(*mutex.lock(), ["other"]);
    });
}

#[test]
fn fair_lock_is_acquired_in_arrival_order_on_one_worker() {
    on(1, || {
        let mutex = Arc::new(Mutex::new(Vec::new()));
        let held = mutex.lock();
        let fibers: Vec<_> = (0..10)
            .map(|i| {
                let mutex = mutex.clone();
                let fiber = fibra_runtime::spawn_local(move || mutex.lock().push(i));
                // It runs until it parks on the lock: arrivals are exactly in `i` order.
                let_others_run();
                fiber
            })
            .collect();
        drop(held);
        for fiber in fibers {
            fiber.join().unwrap();
        }
        assert_eq!(*mutex.lock(), (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn fair_lock_is_acquired_in_arrival_order_across_workers() {
    on_each_worker_count(|_| {
        let mutex = Mutex::new(Vec::new());
        let held = mutex.lock();
        // Each future queues on its first poll, so the arrival order is the poll order; the
        // fibers that finish them run anywhere.
        let mut arrivals: Vec<_> = (0..16).map(|_| mutex.lock_async()).collect();
        for arrival in &mut arrivals {
            assert!(poll_once(arrival).is_pending());
        }
        fibra_runtime::scope(|s| {
            for (i, arrival) in arrivals.into_iter().enumerate() {
                s.spawn(move || fibra_runtime::block_on(arrival).push(i));
            }
            drop(held);
        });
        assert_eq!(*mutex.lock(), (0..16).collect::<Vec<_>>());
    });
}

#[test]
fn fair_unlock_hands_off_so_the_unlocker_cannot_barge() {
    on(1, || {
        let mutex = Arc::new(Mutex::new(()));
        let held = mutex.lock();
        let waiter = {
            let mutex = mutex.clone();
            fibra_runtime::spawn_local(move || drop(mutex.lock()))
        };
        let_others_run();
        drop(held);
        // The lock now belongs to the parked waiter, although it has not run yet.
        assert!(mutex.is_locked());
        assert!(mutex.try_lock().is_none());
        waiter.join().unwrap();
        assert!(!mutex.is_locked());
    });
}

#[test]
fn unfair_unlock_lets_a_running_fiber_barge() {
    on(1, || {
        let mutex = Arc::new(Mutex::new_unfair(Vec::new()));
        let held = mutex.lock();
        let waiter = {
            let mutex = mutex.clone();
            fibra_runtime::spawn_local(move || mutex.lock().push("waiter"))
        };
        let_others_run();
        drop(held);
        // The waiter was woken but has not run: the lock is free and we take it again.
        mutex.try_lock().expect("barging").push("barger");
        waiter.join().unwrap();
        assert_eq!(*mutex.lock(), ["barger", "waiter"]);
    });
}

#[test]
fn lock_timeout_times_out_while_held_and_succeeds_when_free() {
    on_each_worker_count(|_| {
        let mutex = Mutex::new(1);
        let held = mutex.lock();
        fibra_runtime::scope(|s| {
            s.spawn(|| {
                assert_eq!(
                    mutex.lock_timeout(Duration::from_millis(5)).unwrap_err(),
                    TimedOut
                )
            });
        });
        drop(held);
        assert_eq!(*mutex.lock_timeout(Duration::from_secs(60)).unwrap(), 1);
        // A timed-out waiter left the queue: the lock is free, nobody waits.
        assert!(mutex.try_lock().is_some());
    });
}

#[test]
fn a_timed_out_waiter_in_the_middle_does_not_break_the_handoff() {
    on(1, || {
        let mutex = Arc::new(Mutex::new(Vec::new()));
        let held = mutex.lock();
        let spawn = |name: &'static str, timeout: Option<Duration>| {
            let mutex = mutex.clone();
            let fiber = fibra_runtime::spawn_local(move || match timeout {
                Some(t) => mutex.lock_timeout(t).is_ok(),
                None => {
                    mutex.lock().push(name);
                    true
                }
            });
            let_others_run();
            fiber
        };
        let first = spawn("first", None);
        let impatient = spawn("impatient", Some(Duration::from_millis(5)));
        let last = spawn("last", None);
        assert!(!impatient.join().unwrap());
        drop(held);
        assert!(first.join().unwrap() && last.join().unwrap());
        assert_eq!(*mutex.lock(), ["first", "last"]);
    });
}

#[test]
fn a_dropped_lock_future_leaves_the_queue_or_passes_the_lock_on() {
    for mutex in [Mutex::new(0), Mutex::new_unfair(0)] {
        // Dropped while queued.
        let held = mutex.lock();
        let mut queued = mutex.lock_async();
        assert!(poll_once(&mut queued).is_pending());
        drop(queued);
        drop(held);
        assert!(mutex.try_lock().is_some());

        // Dropped after the lock was handed to it, before it was polled again.
        let held = mutex.lock();
        let mut granted = mutex.lock_async();
        assert!(poll_once(&mut granted).is_pending());
        let mut next = mutex.lock_async();
        assert!(poll_once(&mut next).is_pending());
        drop(held);
        drop(granted);
        // The lock reached the next waiter (fair: handed; unfair: it was woken to retry).
        *futures::executor::block_on(next) += 1;
        assert_eq!(*mutex.lock(), 1);
    }
}

#[test]
fn lock_async_waits_on_a_plain_executor_thread() {
    let mutex = Arc::new(Mutex::new(0));
    let held = mutex.lock();
    let waiter = {
        let mutex = mutex.clone();
        std::thread::spawn(move || {
            futures::executor::block_on(async { *mutex.lock_async().await += 1 });
        })
    };
    // Give the waiter a chance to queue; correctness does not depend on it.
    std::thread::sleep(Duration::from_millis(5));
    drop(held);
    waiter.join().unwrap();
    assert_eq!(*mutex.lock(), 1);
}

#[test]
fn plain_threads_and_fibers_share_one_mutex() {
    let mutex = Arc::new(Mutex::new(0u64));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mutex = mutex.clone();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    *mutex.lock() += 1;
                }
            })
        })
        .collect();
    on(2, || {
        fibra_runtime::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        *mutex.lock() += 1;
                    }
                });
            }
        });
    });
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(*mutex.lock(), 3000);
}

#[test]
fn a_panic_while_locked_releases_without_poisoning() {
    let mutex = Mutex::new(5);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _guard = mutex.lock();
        panic!("while holding the lock");
    }));
    assert!(caught.is_err());
    assert!(!mutex.is_locked());
    assert_eq!(*mutex.lock(), 5);
}

#[test]
fn a_panicking_fiber_releases_the_lock_for_its_waiters() {
    on_each_worker_count(|_| {
        let mutex = Arc::new(Mutex::new(0));
        let entered = Arc::new(AtomicUsize::new(0));
        let crashing = {
            let (mutex, entered) = (mutex.clone(), entered.clone());
            fibra_runtime::spawn(move || {
                let _guard = mutex.lock();
                entered.fetch_add(1, Ordering::SeqCst);
                fibra_runtime::yield_now();
                panic!("in the critical section");
            })
        };
        fibra_runtime::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| *mutex.lock() += 1);
            }
        });
        assert!(crashing.join().is_err());
        assert_eq!(entered.load(Ordering::SeqCst), 1);
        assert_eq!(*mutex.lock(), 4);
    });
}

#[test]
fn get_mut_into_inner_and_is_locked() {
    let mut mutex = Mutex::new(vec![1]);
    mutex.get_mut().push(2);
    assert!(!mutex.is_locked());
    {
        let guard = mutex.lock();
        assert!(mutex.is_locked());
        assert_eq!(format!("{:?}", mutex), "Mutex { data: <locked>, .. }");
        drop(guard);
    }
    assert_eq!(format!("{:?}", mutex), "Mutex { data: [1, 2], .. }");
    assert_eq!(mutex.into_inner(), [1, 2]);
}

#[test]
fn unsized_values_and_default() {
    let mutex: &Mutex<[u8]> = &Mutex::new([1, 2, 3]);
    mutex.lock()[0] = 9;
    assert_eq!(&*mutex.lock(), &[9, 2, 3]);
    assert_eq!(Mutex::<u8>::default().into_inner(), 0);
}
