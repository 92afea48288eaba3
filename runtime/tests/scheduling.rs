//! The scheduler's rules: FIFO yields, stealing of unstarted fibers, the pinning rule, and
//! exact counts under stress with 1, 2 and 4 workers.

use fibra_runtime::{current_worker, scope, spawn, spawn_local, yield_now, Runtime};
use fibra_testing::on;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn yields_on_one_worker_run_in_fifo_order() {
    let log = on(1, || {
        let log = Arc::new(Mutex::new(Vec::new()));
        let fibers: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|name| {
                let log = log.clone();
                spawn_local(move || {
                    for round in 0..3 {
                        log.lock().unwrap().push(format!("{name}{round}"));
                        yield_now();
                    }
                })
            })
            .collect();
        for fiber in fibers {
            fiber.join().unwrap();
        }
        Arc::try_unwrap(log).unwrap().into_inner().unwrap()
    });
    assert_eq!(log, ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]);
}

#[test]
fn unstarted_fibers_are_stolen_by_idle_workers() {
    let ran_on = on(2, || {
        const FIBERS: usize = 100;
        let ran_on = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..FIBERS)
            .map(|_| {
                let ran_on = ran_on.clone();
                spawn(move || ran_on.lock().unwrap().push(current_worker().unwrap()))
            })
            .collect();
        // Hold worker 0 with a thread-blocking wait: only worker 1 can start the fibers, and
        // only by stealing them from worker 0's queue.
        while ran_on.lock().unwrap().len() < FIBERS {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for handle in handles {
            handle.join().unwrap();
        }
        Arc::try_unwrap(ran_on).unwrap().into_inner().unwrap()
    });
    assert_eq!(ran_on.len(), 100);
    assert!(ran_on.iter().all(|&w| w == 1), "{ran_on:?}");
}

#[test]
fn work_spreads_over_both_workers() {
    let per_worker = on(2, || {
        let per_worker: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        let seen = AtomicUsize::new(0);
        scope(|s| {
            for _ in 0..64 {
                let (per_worker, seen) = (&per_worker, &seen);
                s.spawn(move || {
                    let me = current_worker().unwrap();
                    per_worker[me].fetch_add(1, Ordering::SeqCst);
                    seen.fetch_or(1 << me, Ordering::SeqCst);
                    // Block this worker's thread until both workers have run a fiber: a lone
                    // worker cannot make progress here, so the other must steal. Bounded so a
                    // failure ends the test instead of hanging it.
                    for _ in 0..10_000 {
                        if seen.load(Ordering::SeqCst) == 0b11 {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                });
            }
        });
        per_worker
            .into_iter()
            .map(AtomicUsize::into_inner)
            .collect::<Vec<_>>()
    });
    assert!(per_worker.iter().all(|&n| n > 0), "{per_worker:?}");
    assert_eq!(per_worker.iter().sum::<usize>(), 64);
}

#[test]
fn a_started_fiber_never_changes_worker() {
    let moved = on(4, || {
        let moved = AtomicUsize::new(0);
        let checked = AtomicUsize::new(0);
        scope(|s| {
            for _ in 0..10_000 {
                let (moved, checked) = (&moved, &checked);
                s.spawn(move || {
                    let first = current_worker().unwrap();
                    for _ in 0..20 {
                        yield_now();
                        if current_worker().unwrap() != first {
                            moved.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    checked.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(checked.load(Ordering::SeqCst), 10_000);
        moved.into_inner()
    });
    assert_eq!(moved, 0);
}

#[test]
fn exact_counts_under_stress() {
    for workers in [1, 2, 4] {
        let (count, sum) = on(workers, || {
            let count = AtomicUsize::new(0);
            let sum = scope(|s| {
                let parents: Vec<_> = (0..200)
                    .map(|p| {
                        let count = &count;
                        s.spawn(move || {
                            let children: Vec<_> = (0..50)
                                .map(|c| {
                                    spawn(move || {
                                        if c % 3 == 0 {
                                            yield_now();
                                        }
                                        p * 50 + c
                                    })
                                })
                                .collect();
                            children
                                .into_iter()
                                .map(|h| {
                                    count.fetch_add(1, Ordering::Relaxed);
                                    h.join().unwrap()
                                })
                                .sum::<usize>()
                        })
                    })
                    .collect();
                parents
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .sum::<usize>()
            });
            (count.into_inner(), sum)
        });
        assert_eq!(count, 10_000, "{workers} workers");
        assert_eq!(sum, (0..10_000).sum::<usize>(), "{workers} workers");
    }
}

#[test]
fn reductions_move_a_busy_fiber_to_the_back() {
    let log = Runtime::builder()
        .workers(1)
        .reductions(10)
        .build()
        .unwrap()
        .block_on(|| {
            let log = Arc::new(Mutex::new(Vec::new()));
            let l = log.clone();
            let busy = spawn_local(move || {
                for i in 0..25 {
                    l.lock().unwrap().push(format!("busy{i}"));
                    fibra_runtime::checkpoint();
                }
            });
            let l = log.clone();
            let other = spawn_local(move || l.lock().unwrap().push("other".to_owned()));
            busy.join().unwrap();
            other.join().unwrap();
            Arc::try_unwrap(log).unwrap().into_inner().unwrap()
        });
    // The 10th checkpoint ends the busy fiber's slice, so `other` runs right after busy9.
    let other = log.iter().position(|entry| entry == "other").unwrap();
    assert_eq!(log[other - 1], "busy9", "{log:?}");
}

#[test]
#[should_panic(expected = "fibra::spawn() called outside a fibra runtime")]
fn spawn_outside_a_runtime_panics() {
    spawn(|| ());
}
