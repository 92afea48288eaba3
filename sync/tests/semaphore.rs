//! Semaphore: counting, FIFO (a large request at the head is not overtaken), permits, bounds,
//! timeouts, futures, and acquire_all across semaphores without deadlock.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{acquire_all, acquire_all_timeout, Semaphore};
use fibra_testing::{let_others_run, on, on_each_worker_count, poll_once, until_parked};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

#[test]
fn never_more_holders_than_permits() {
    on_each_worker_count(|_| {
        let sem = Semaphore::new(3);
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        fibra_runtime::scope(|s| {
            for _ in 0..40 {
                s.spawn(|| {
                    for _ in 0..20 {
                        let _permit = sem.acquire();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        fibra_runtime::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 3);
        assert_eq!(sem.available_permits(), 3);
    });
}

#[test]
fn waiters_are_served_in_arrival_order_and_a_large_request_is_not_overtaken() {
    on(1, || {
        let sem = Arc::new(Semaphore::new(0));
        let order = Arc::new(StdMutex::new(Vec::new()));
        let fibers: Vec<_> = [("one", 1), ("big", 3), ("small", 1)]
            .into_iter()
            .map(|(name, n)| {
                let (sem, order) = (sem.clone(), order.clone());
                let fiber = fibra_runtime::spawn_local(move || {
                    let permit = sem.acquire_n(n);
                    order.lock().unwrap().push(name);
                    permit.forget();
                });
                let_others_run();
                fiber
            })
            .collect();
        sem.add_permits(1);
        let_others_run();
        assert_eq!(*order.lock().unwrap(), ["one"]);
        // Two permits: not enough for "big", and "small" must not overtake it.
        sem.add_permits(2);
        let_others_run();
        assert_eq!(*order.lock().unwrap(), ["one"]);
        assert_eq!(sem.available_permits(), 0, "the two are held for the head");
        sem.add_permits(1);
        let_others_run();
        assert_eq!(*order.lock().unwrap(), ["one", "big"]);
        sem.add_permits(1);
        for fiber in fibers {
            fiber.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["one", "big", "small"]);
    });
}

#[test]
fn try_forms_do_not_overtake_waiters() {
    on(1, || {
        let sem = Arc::new(Semaphore::new(1));
        let big = {
            let sem = sem.clone();
            fibra_runtime::spawn_local(move || sem.acquire_n(2).count())
        };
        let_others_run();
        // The head waiter holds the one permit; nobody barges past it.
        assert_eq!(sem.available_permits(), 0);
        assert!(sem.try_acquire().is_none());
        sem.add_permits(1);
        assert_eq!(big.join().unwrap(), 2);
        assert_eq!(sem.available_permits(), 2);
    });
}

#[test]
fn permits_count_forget_and_add() {
    let sem = Semaphore::new(5);
    let three = sem.acquire_n(3);
    assert_eq!(three.count(), 3);
    assert_eq!(sem.available_permits(), 2);
    three.forget();
    assert_eq!(sem.available_permits(), 2);
    sem.add_permits(4);
    assert_eq!(sem.available_permits(), 6);
    assert_eq!(sem.acquire_n(0).count(), 0);
    assert_eq!(
        format!("{:?}", sem.try_acquire_n(6).unwrap()),
        "Permit { count: 6 }"
    );
}

#[test]
fn timeouts_take_nothing_when_they_fail() {
    on_each_worker_count(|_| {
        let sem = Semaphore::new(2);
        let held = sem.acquire();
        assert!(sem.acquire_n_timeout(2, Duration::from_millis(5)).is_err());
        assert_eq!(sem.available_permits(), 1, "the partial grant came back");
        drop(held);
        assert_eq!(
            sem.acquire_n_timeout(2, Duration::from_secs(60))
                .unwrap()
                .count(),
            2
        );
        assert!(sem.acquire_timeout(Duration::from_secs(60)).is_ok());
    });
}

#[test]
fn dropped_futures_leave_the_queue_and_pass_grants_on() {
    let sem = Semaphore::new(0);
    let mut first = sem.acquire_n_async(2);
    assert!(poll_once(&mut first).is_pending());
    let mut second = sem.acquire_async();
    assert!(poll_once(&mut second).is_pending());
    sem.add_permits(2); // all of it goes to `first`
    assert!(poll_once(&mut second).is_pending());
    drop(first); // granted but never polled again: the permits go on
    let permit = poll_once(&mut second).map(|p| p.count());
    assert_eq!(permit, std::task::Poll::Ready(1));
    assert_eq!(sem.available_permits(), 2);
}

#[test]
#[should_panic(expected = "past the semaphore's bound of 2")]
fn bounded_release_past_the_bound_panics() {
    let sem = Semaphore::bounded(2);
    let permit = sem.acquire();
    sem.add_permits(1);
    drop(permit);
}

#[test]
#[should_panic(expected = "Semaphore::bounded(0)")]
fn bounded_zero_panics() {
    let _ = Semaphore::bounded(0);
}

#[test]
#[should_panic(expected = "never holds more than 2")]
fn a_request_beyond_the_bound_panics() {
    let _ = Semaphore::bounded(2).acquire_n(3);
}

#[test]
#[should_panic(expected = "past the semaphore's bound")]
fn overflowing_the_count_panics() {
    let sem = Semaphore::new(Semaphore::MAX_PERMITS);
    sem.add_permits(1);
}

#[test]
#[should_panic(expected = "more permits than a semaphore can hold")]
fn too_many_initial_permits_panic() {
    let _ = Semaphore::new(usize::MAX);
}

#[test]
fn bounded_stays_within_its_bound_under_use() {
    let sem = Semaphore::bounded(3);
    on_each_worker_count(|_| {
        fibra_runtime::scope(|s| {
            for _ in 0..10 {
                s.spawn(|| {
                    for _ in 0..20 {
                        drop(sem.acquire_n(2));
                    }
                });
            }
        });
    });
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn acquire_all_takes_everything_or_nothing() {
    let (a, b) = (Semaphore::new(2), Semaphore::new(1));
    let permits = acquire_all(&[(&a, 1), (&b, 1), (&a, 1)]);
    assert_eq!(
        permits.iter().map(|p| p.count()).collect::<Vec<_>>(),
        [1, 1, 1]
    );
    assert_eq!((a.available_permits(), b.available_permits()), (0, 0));
    drop(permits);
    let _b = b.acquire();
    assert!(acquire_all_timeout(&[(&a, 2), (&b, 1)], Duration::from_millis(5)).is_err());
    assert_eq!(a.available_permits(), 2, "nothing kept after the timeout");
}

/// All or none: while `acquire_all` waits for one semaphore it holds no permit of another, so
/// a fiber holding the one it waits for can still take the others.
#[test]
fn acquire_all_holds_nothing_while_it_waits() {
    on(1, || {
        let (x, y) = (Semaphore::new(1), Semaphore::new(1));
        for (held, other) in [(&x, &y), (&y, &x)] {
            let holding = held.acquire();
            fibra_runtime::scope(|s| {
                let all = s.spawn(|| acquire_all(&[(&x, 1), (&y, 1)]).len());
                until_parked(all.fiber());
                let other_was_free = other.try_acquire().is_some();
                drop(holding);
                assert_eq!(all.join().unwrap(), 2);
                assert!(
                    other_was_free,
                    "acquire_all held a permit while it waited for another"
                );
            });
            assert_eq!((x.available_permits(), y.available_permits()), (1, 1));
        }
    });
}

#[test]
fn acquire_all_in_opposite_orders_never_deadlocks() {
    on_each_worker_count(|_| {
        let (a, b, c) = (Semaphore::new(1), Semaphore::new(1), Semaphore::new(1));
        let done = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            let orders: [[&Semaphore; 3]; 3] = [[&a, &b, &c], [&c, &b, &a], [&b, &c, &a]];
            for order in orders {
                let done = &done;
                s.spawn(move || {
                    for _ in 0..200 {
                        let held = acquire_all(&[(order[0], 1), (order[1], 1), (order[2], 1)]);
                        fibra_runtime::yield_now();
                        drop(held);
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 600);
        assert_eq!(
            [
                a.available_permits(),
                b.available_permits(),
                c.available_permits()
            ],
            [1, 1, 1]
        );
    });
}

#[test]
fn async_acquire_from_an_executor_thread() {
    let sem = Arc::new(Semaphore::new(0));
    let waiter = {
        let sem = sem.clone();
        std::thread::spawn(move || futures::executor::block_on(sem.acquire_n_async(2)).count())
    };
    sem.add_permits(1);
    sem.add_permits(1);
    assert_eq!(waiter.join().unwrap(), 2);
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn an_owned_permit_moves_into_a_spawned_fiber_and_is_given_back_when_it_ends() {
    on_each_worker_count(|_| {
        let sem = Arc::new(Semaphore::new(2));
        let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let permit = sem.acquire_owned();
                let (inside, most) = (inside.clone(), most.clone());
                fibra_runtime::spawn(move || {
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    fibra_runtime::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(permit);
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(sem.available_permits(), 2);
        let two = sem.acquire_n_owned(2);
        assert_eq!(two.count(), 2);
        assert!(Arc::ptr_eq(two.semaphore(), &sem));
        assert!(sem.try_acquire_owned().is_none());
        two.forget();
        assert_eq!(sem.available_permits(), 0);
        sem.release(1);
        assert_eq!(sem.try_acquire_owned().map(|p| p.count()), Some(1));
        assert_eq!(sem.available_permits(), 1);
    });
}

#[test]
fn release_is_the_v_that_wakes_a_waiting_p() {
    on_each_worker_count(|_| {
        let items = Semaphore::new(0);
        let taken = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            s.spawn(|| {
                for _ in 0..5 {
                    items.acquire().forget(); // P
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            });
            for produced in 1..=5 {
                items.release(1); // V
                while taken.load(Ordering::SeqCst) < produced {
                    fibra_runtime::yield_now();
                }
            }
        });
        assert_eq!(taken.load(Ordering::SeqCst), 5);
        assert_eq!(items.available_permits(), 0);
    });
}

#[test]
#[should_panic(expected = "past the semaphore's bound of 1")]
fn release_past_the_bound_panics() {
    Semaphore::bounded(1).release(1);
}
