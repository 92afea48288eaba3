//! The classic synchronization problems, each under 1, 2 and 4 workers with exact invariant
//! checks: bounded buffer, dining philosophers, sleeping barber, readers-writers without writer
//! starvation, single-lane bridge, precedence graph.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{acquire_all, Condvar, Mutex, RwLock, Semaphore};
use fibra_testing::on_each_worker_count;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

#[test]
fn bounded_buffer_with_a_mutex_and_two_condvars() {
    const CAPACITY: usize = 4;
    const PRODUCERS: usize = 4;
    const CONSUMERS: usize = 3;
    const ITEMS: usize = 300; // per producer
    on_each_worker_count(|_| {
        let buffer = Mutex::new(VecDeque::with_capacity(CAPACITY));
        let (not_full, not_empty) = (Condvar::new(), Condvar::new());
        let consumed = StdMutex::new(Vec::new());
        let remaining = AtomicUsize::new(PRODUCERS * ITEMS);
        fibra_runtime::scope(|s| {
            for p in 0..PRODUCERS {
                let (buffer, not_full, not_empty) = (&buffer, &not_full, &not_empty);
                s.spawn(move || {
                    for i in 0..ITEMS {
                        let mut guard = not_full.wait_while(buffer.lock(), |b| b.len() == CAPACITY);
                        guard.push_back(p * ITEMS + i);
                        assert!(guard.len() <= CAPACITY);
                        drop(guard);
                        not_empty.notify_one();
                    }
                });
            }
            for _ in 0..CONSUMERS {
                let (buffer, not_full, not_empty) = (&buffer, &not_full, &not_empty);
                let (consumed, remaining) = (&consumed, &remaining);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let mut guard = not_empty.wait_while(buffer.lock(), |b| {
                            b.is_empty() && remaining.load(Ordering::SeqCst) > 0
                        });
                        let Some(item) = guard.pop_front() else { break };
                        if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                            // The last item: wake the consumers waiting for more to leave.
                            not_empty.notify_all();
                        }
                        drop(guard);
                        not_full.notify_one();
                        mine.push(item);
                    }
                    consumed.lock().unwrap().extend(mine);
                });
            }
        });
        let mut consumed = consumed.into_inner().unwrap();
        consumed.sort_unstable();
        assert_eq!(consumed, (0..PRODUCERS * ITEMS).collect::<Vec<_>>());
        assert!(buffer.lock().is_empty());
    });
}

#[test]
fn five_dining_philosophers_all_eat_without_deadlock() {
    const PHILOSOPHERS: usize = 5;
    const MEALS: usize = 100;
    on_each_worker_count(|_| {
        let forks: Vec<_> = (0..PHILOSOPHERS).map(|_| Semaphore::new(1)).collect();
        let in_hand: Vec<_> = (0..PHILOSOPHERS).map(|_| AtomicBool::new(false)).collect();
        let meals: Vec<_> = (0..PHILOSOPHERS).map(|_| AtomicUsize::new(0)).collect();
        fibra_runtime::scope(|s| {
            for p in 0..PHILOSOPHERS {
                let (forks, in_hand, meals) = (&forks, &in_hand, &meals);
                s.spawn(move || {
                    let (left, right) = (p, (p + 1) % PHILOSOPHERS);
                    for _ in 0..MEALS {
                        // Everyone names the left fork first: the classic deadlock, unless
                        // both are taken together.
                        let held = acquire_all(&[(&forks[left], 1), (&forks[right], 1)]);
                        for fork in [left, right] {
                            assert!(!in_hand[fork].swap(true, Ordering::SeqCst), "fork shared");
                        }
                        meals[p].fetch_add(1, Ordering::SeqCst);
                        fibra_runtime::yield_now(); // eat
                        for fork in [left, right] {
                            in_hand[fork].store(false, Ordering::SeqCst);
                        }
                        drop(held);
                        fibra_runtime::yield_now(); // think
                    }
                });
            }
        });
        for meal in &meals {
            assert_eq!(meal.load(Ordering::SeqCst), MEALS);
        }
        assert!(forks.iter().all(|f| f.available_permits() == 1));
    });
}

#[test]
fn sleeping_barber() {
    const CHAIRS: usize = 3;
    const CUSTOMERS: usize = 60;

    struct Shop {
        waiting: Mutex<usize>,
        customers: Semaphore,
        barber_ready: Semaphore,
        cut_done: Semaphore,
        closed: AtomicBool,
    }

    on_each_worker_count(|_| {
        let shop = Shop {
            waiting: Mutex::new(0),
            customers: Semaphore::new(0),
            barber_ready: Semaphore::new(0),
            cut_done: Semaphore::new(0),
            closed: AtomicBool::new(false),
        };
        let (served, turned_away, cuts) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        fibra_runtime::scope(|s| {
            let barber = s.spawn(|| loop {
                shop.customers.acquire().forget(); // sleeps until a customer arrives
                if shop.closed.load(Ordering::SeqCst) && *shop.waiting.lock() == 0 {
                    break;
                }
                *shop.waiting.lock() -= 1;
                shop.barber_ready.add_permits(1);
                cuts.fetch_add(1, Ordering::SeqCst);
                fibra_runtime::yield_now(); // cutting
                shop.cut_done.add_permits(1);
            });
            fibra_runtime::scope(|customers| {
                for _ in 0..CUSTOMERS {
                    customers.spawn(|| {
                        let mut waiting = shop.waiting.lock();
                        if *waiting == CHAIRS {
                            turned_away.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        *waiting += 1;
                        assert!(*waiting <= CHAIRS);
                        drop(waiting);
                        shop.customers.add_permits(1);
                        shop.barber_ready.acquire().forget();
                        shop.cut_done.acquire().forget();
                        served.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            shop.closed.store(true, Ordering::SeqCst);
            shop.customers.add_permits(1);
            barber.join().unwrap();
        });
        let (served, turned_away) = (
            served.load(Ordering::SeqCst),
            turned_away.load(Ordering::SeqCst),
        );
        assert_eq!(served + turned_away, CUSTOMERS);
        assert_eq!(cuts.load(Ordering::SeqCst), served);
        assert!(served >= 1);
        assert_eq!(*shop.waiting.lock(), 0);
    });
}

#[test]
fn readers_writers_the_writer_is_never_starved() {
    const READERS: usize = 8;
    const WRITES: usize = 20;
    on_each_worker_count(|_| {
        // Two halves that a writer changes together: a reader must never see them differ.
        let data = RwLock::new((0usize, 0usize));
        let writer_done = AtomicBool::new(false);
        let reads = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            for _ in 0..READERS {
                s.spawn(|| {
                    // Overlapping readers keep the lock read-held all the time; with writer
                    // priority the writer still gets in, else this never ends.
                    while !writer_done.load(Ordering::SeqCst) {
                        let guard = data.read();
                        let (a, b) = *guard;
                        fibra_runtime::yield_now();
                        assert_eq!((a, b), *guard);
                        assert_eq!(a, b, "a torn write");
                        reads.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            s.spawn(|| {
                // Start once the readers are well under way.
                while reads.load(Ordering::SeqCst) < 2 * READERS {
                    fibra_runtime::yield_now();
                }
                for _ in 0..WRITES {
                    let mut guard = data.write();
                    guard.0 += 1;
                    fibra_runtime::yield_now();
                    guard.1 += 1;
                    drop(guard);
                    fibra_runtime::yield_now();
                }
                writer_done.store(true, Ordering::SeqCst);
            });
        });
        assert_eq!(*data.read(), (WRITES, WRITES));
    });
}

#[test]
fn single_lane_bridge_cars_cross_one_direction_at_a_time() {
    const CARS_PER_SIDE: usize = 6;
    const TRIPS: usize = 20;
    const CAPACITY: usize = 3;
    /// Cars in a row one way before a waiting car the other way gets its turn.
    const TURN: usize = 4;

    #[derive(Default)]
    struct Bridge {
        direction: usize,
        on: [usize; 2],
        waiting: [usize; 2],
        in_a_row: usize,
    }

    impl Bridge {
        fn may_enter(&self, d: usize) -> bool {
            let other_turn = self.waiting[1 - d] > 0 && self.in_a_row >= TURN;
            let total = self.on[0] + self.on[1];
            if total == 0 {
                self.direction != d || !other_turn
            } else {
                self.direction == d && total < CAPACITY && !other_turn
            }
        }
    }

    on_each_worker_count(|_| {
        let (bridge, changed) = (Mutex::new(Bridge::default()), Condvar::new());
        let crossings = [AtomicUsize::new(0), AtomicUsize::new(0)];
        fibra_runtime::scope(|s| {
            for d in [0, 1] {
                for _ in 0..CARS_PER_SIDE {
                    let (bridge, changed, crossings) = (&bridge, &changed, &crossings);
                    s.spawn(move || {
                        for _ in 0..TRIPS {
                            let mut b = bridge.lock();
                            b.waiting[d] += 1;
                            let mut b = changed.wait_while(b, |b| !b.may_enter(d));
                            b.waiting[d] -= 1;
                            if b.direction != d {
                                b.direction = d;
                                b.in_a_row = 0;
                            }
                            b.on[d] += 1;
                            b.in_a_row += 1;
                            assert_eq!(b.on[1 - d], 0, "cars in both directions");
                            assert!(b.on[d] <= CAPACITY);
                            drop(b);
                            fibra_runtime::yield_now(); // crossing
                            crossings[d].fetch_add(1, Ordering::SeqCst);
                            bridge.lock().on[d] -= 1;
                            changed.notify_all();
                        }
                    });
                }
            }
        });
        for side in &crossings {
            assert_eq!(side.load(Ordering::SeqCst), CARS_PER_SIDE * TRIPS);
        }
        assert_eq!(bridge.lock().on, [0, 0]);
    });
}

#[test]
fn precedence_graph_from_semaphores() {
    // p1 before p2; p2 and p3 before p4.
    on_each_worker_count(|_| {
        for round in 0..50 {
            let (after_p1, after_p2, after_p3) =
                (Semaphore::new(0), Semaphore::new(0), Semaphore::new(0));
            let log = StdMutex::new(Vec::new());
            let step = |name: &'static str| log.lock().unwrap().push(name);
            let p1 = || {
                step("p1");
                after_p1.add_permits(1);
            };
            let p2 = || {
                after_p1.acquire().forget();
                step("p2");
                after_p2.add_permits(1);
            };
            let p3 = || {
                step("p3");
                after_p3.add_permits(1);
            };
            let p4 = || {
                after_p2.acquire().forget();
                after_p3.acquire().forget();
                step("p4");
            };
            fibra_runtime::scope(|s| {
                // Start them in a different order each round.
                let processes: [&(dyn Fn() + Sync); 4] = [&p1, &p2, &p3, &p4];
                for k in 0..4 {
                    let process = processes[(round + k) % 4];
                    s.spawn(process);
                }
            });
            let log = log.into_inner().unwrap();
            let at = |name| log.iter().position(|&n| n == name).unwrap();
            assert_eq!(log.len(), 4);
            assert!(at("p1") < at("p2"));
            assert!(at("p2") < at("p4"));
            assert!(at("p3") < at("p4"));
        }
    });
}
