//! Placement of unstarted fibers: a burst of long-lived fibers spawned by one fiber spreads
//! over every worker, also while the machine is busy, and an accept loop's fibers end up within
//! 1.5× of an even share. The outcomes are decided by load counts, not by how fast the other
//! workers wake, so they are asserted exactly.

use fibra_runtime::{current_worker, park, spawn, yield_now, Fiber, Handle};
use fibra_testing::{on, runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How many of `fibers` started on each of `workers` workers, when one fiber spawns them all
/// in a burst and each yields `yields` times.
fn burst_of_yielders(workers: usize, fibers: usize, yields: usize) -> Vec<usize> {
    on(workers, || {
        let started: Arc<Vec<AtomicUsize>> =
            Arc::new((0..workers).map(|_| AtomicUsize::new(0)).collect());
        let spawner = {
            let started = started.clone();
            spawn(move || {
                let children: Vec<_> = (0..fibers)
                    .map(|_| {
                        let started = started.clone();
                        spawn(move || {
                            started[current_worker().unwrap()].fetch_add(1, Ordering::SeqCst);
                            for _ in 0..yields {
                                yield_now();
                            }
                        })
                    })
                    .collect();
                for child in children {
                    child.join().unwrap();
                }
            })
        };
        spawner.join().unwrap();
        started.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    })
}

fn assert_every_worker_started_one(workers: usize) {
    let started = burst_of_yielders(workers, 64, 2000);
    assert_eq!(started.iter().sum::<usize>(), 64, "{started:?}");
    assert!(started.iter().all(|&n| n >= 1), "{started:?}");
}

#[test]
fn a_burst_of_yielders_runs_on_both_of_two_workers() {
    assert_every_worker_started_one(2);
}

#[test]
fn a_burst_of_yielders_runs_on_all_of_four_workers() {
    assert_every_worker_started_one(4);
}

/// Keeps every core of the machine busy with spinning fibers of a second runtime while `f`
/// runs.
fn while_the_machine_is_busy<T>(f: impl FnOnce() -> T) -> T {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hog = runtime(cores).into_background().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..cores)
        .map(|_| {
            let stop = stop.clone();
            hog.handle().spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    // Stops the spinners however `f` ends: the runtime's shutdown waits for them.
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let result = {
        let _stop = Stop(stop);
        f()
    };
    for spinner in spinners {
        futures::executor::block_on(spinner).unwrap();
    }
    result
}

#[test]
fn a_burst_of_yielders_spreads_over_two_workers_on_a_busy_machine() {
    while_the_machine_is_busy(|| assert_every_worker_started_one(2));
}

#[test]
fn a_burst_of_yielders_spreads_over_four_workers_on_a_busy_machine() {
    while_the_machine_is_busy(|| assert_every_worker_started_one(4));
}

/// One fiber spawns `fibers` connection-like fibers; after each spawn it wakes every earlier
/// one (traffic on the open connections), and each parks again. Returns how many started on
/// each worker, and the workers' loads while all of them were alive.
fn accept_loop(workers: usize, fibers: usize) -> (Vec<usize>, Vec<usize>) {
    on(workers, move || {
        let started: Arc<Vec<AtomicUsize>> =
            Arc::new((0..workers).map(|_| AtomicUsize::new(0)).collect());
        let acceptor = {
            let started = started.clone();
            spawn(move || {
                let closed = Arc::new(AtomicBool::new(false));
                let wakes = Arc::new(AtomicUsize::new(0));
                let open: Arc<Mutex<Vec<Fiber>>> = Arc::default();
                let mut connections = Vec::new();
                for _ in 0..fibers {
                    let (started, closed, wakes) = (started.clone(), closed.clone(), wakes.clone());
                    let connection = spawn(move || {
                        started[current_worker().unwrap()].fetch_add(1, Ordering::SeqCst);
                        while !closed.load(Ordering::SeqCst) {
                            park();
                            wakes.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                    for fiber in open.lock().unwrap().iter() {
                        fiber.unpark();
                    }
                    open.lock().unwrap().push(connection.fiber().clone());
                    connections.push(connection);
                    yield_now();
                }
                // Every connection has started once it has counted itself.
                while started
                    .iter()
                    .map(|n| n.load(Ordering::SeqCst))
                    .sum::<usize>()
                    < fibers
                {
                    yield_now();
                }
                let loads = Handle::current().worker_loads();
                closed.store(true, Ordering::SeqCst);
                for fiber in open.lock().unwrap().iter() {
                    fiber.unpark();
                }
                for connection in connections {
                    connection.join().unwrap();
                }
                assert!(wakes.load(Ordering::SeqCst) > 0);
                loads
            })
        };
        let loads = acceptor.join().unwrap();
        let started = started.iter().map(|n| n.load(Ordering::SeqCst)).collect();
        (started, loads)
    })
}

fn assert_accept_loop_is_balanced(workers: usize) {
    const FIBERS: usize = 200;
    let (started, loads) = accept_loop(workers, FIBERS);
    assert_eq!(started.iter().sum::<usize>(), FIBERS, "{started:?}");
    let limit = FIBERS * 3 / (2 * workers);
    assert!(
        started.iter().all(|&n| n <= limit),
        "{started:?} over {limit}"
    );
    // Every connection, the acceptor and the main fiber were alive when the loads were read.
    assert_eq!(loads.iter().sum::<usize>(), FIBERS + 2, "{loads:?}");
}

#[test]
fn an_accept_loops_fibers_stay_within_one_and_a_half_fair_shares_on_two_workers() {
    assert_accept_loop_is_balanced(2);
}

#[test]
fn an_accept_loops_fibers_stay_within_one_and_a_half_fair_shares_on_four_workers() {
    assert_accept_loop_is_balanced(4);
}

#[test]
fn worker_loads_count_live_fibers_where_they_run() {
    let (during, after) = on(2, || {
        let handle = Handle::current();
        let release = Arc::new(AtomicBool::new(false));
        let sleepers: Vec<_> = (0..10)
            .map(|_| {
                let release = release.clone();
                spawn(move || {
                    while !release.load(Ordering::SeqCst) {
                        yield_now();
                    }
                })
            })
            .collect();
        // Let them all start: they stay alive, yielding, until released.
        while handle.worker_loads().iter().sum::<usize>() < 11 {
            yield_now();
        }
        let during = handle.worker_loads();
        release.store(true, Ordering::SeqCst);
        for sleeper in sleepers {
            sleeper.join().unwrap();
        }
        // A joiner may wake before the finished fiber's worker has taken it off its load.
        let mut after = handle.worker_loads();
        for _ in 0..10_000 {
            if after == [1, 0] {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            after = handle.worker_loads();
        }
        (during, after)
    });
    assert_eq!(during.iter().sum::<usize>(), 11, "{during:?}");
    assert!(during.iter().all(|&n| n >= 1), "{during:?}");
    assert_eq!(after, [1, 0]);
}
