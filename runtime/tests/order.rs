//! The run order on one worker: children of one parent start in spawn order, a batch of
//! children is started before older ones (depth first), and `yield_now` lets every runnable
//! fiber, started or not, run before the yielder runs again.

use fibra_runtime::{scope, spawn, spawn_local, yield_now, JoinHandle};
use fibra_testing::on;
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

fn note(log: &Log, event: impl Into<String>) {
    log.lock().unwrap().push(event.into());
}

fn taken(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[test]
fn a_spawn_then_yield_loop_starts_each_child_before_its_next_slice() {
    let log = on(1, || {
        let log = Log::default();
        let children: Vec<JoinHandle<()>> = (0..50)
            .map(|i| {
                let child_log = log.clone();
                let child = spawn(move || note(&child_log, format!("child {i}")));
                yield_now();
                note(&log, format!("parent {i}"));
                child
            })
            .collect();
        for child in children {
            child.join().unwrap();
        }
        taken(&log)
    });
    let expected: Vec<String> = (0..50)
        .flat_map(|i| [format!("child {i}"), format!("parent {i}")])
        .collect();
    assert_eq!(log, expected);
}

#[test]
fn children_spawned_then_joined_start_in_spawn_order() {
    let log = on(1, || {
        let log = Log::default();
        let children: Vec<_> = (0..10)
            .map(|i| {
                let log = log.clone();
                spawn(move || note(&log, format!("{i}")))
            })
            .collect();
        note(&log, "spawned");
        for child in children {
            child.join().unwrap();
        }
        taken(&log)
    });
    let mut expected = vec!["spawned".to_owned()];
    expected.extend((0..10).map(|i| i.to_string()));
    assert_eq!(log, expected);
}

/// More children than the worker's steps between two periodic checks, which look at the
/// bottom of the unstarted queue for a batch starved by newer ones: with one batch queued,
/// nothing is starved and the batch keeps its order.
#[test]
fn a_batch_longer_than_the_check_interval_starts_in_spawn_order() {
    let started = on(1, || {
        let started = Arc::new(Mutex::new(Vec::new()));
        let children: Vec<_> = (0..200)
            .map(|i| {
                let started = started.clone();
                spawn(move || started.lock().unwrap().push(i))
            })
            .collect();
        for child in children {
            child.join().unwrap();
        }
        let started = started.lock().unwrap().clone();
        started
    });
    assert_eq!(started, (0..200).collect::<Vec<_>>());
}

/// The caller's own new batch starts first (newest batch first), then the fiber woken before
/// the call, then the earlier yielder, then the caller.
#[test]
fn a_yield_runs_its_own_spawns_then_earlier_wakes_then_earlier_yielders() {
    let log = on(1, || {
        let log = Log::default();
        let woken = {
            let log = log.clone();
            spawn(move || {
                fibra_runtime::park();
                note(&log, "woken");
            })
        };
        let yielder = {
            let log = log.clone();
            spawn(move || {
                yield_now();
                note(&log, "earlier yielder");
            })
        };
        // `woken` parks, `yielder` yields.
        yield_now();
        woken.fiber().unpark();
        let spawned = {
            let log = log.clone();
            spawn(move || note(&log, "spawned"))
        };
        yield_now();
        note(&log, "caller");
        for fiber in [woken, yielder, spawned] {
            fiber.join().unwrap();
        }
        taken(&log)
    });
    assert_eq!(log, ["spawned", "woken", "earlier yielder", "caller"]);
}

#[test]
fn a_childs_own_children_start_before_its_younger_siblings() {
    let log = on(1, || {
        let log = Log::default();
        let (a_log, b_log) = (log.clone(), log.clone());
        let a = spawn(move || {
            note(&a_log, "a");
            let grandchildren: Vec<_> = ["a1", "a2"]
                .into_iter()
                .map(|name| {
                    let log = a_log.clone();
                    spawn(move || note(&log, name))
                })
                .collect();
            for grandchild in grandchildren {
                grandchild.join().unwrap();
            }
            note(&a_log, "a joined");
        });
        let b = spawn(move || note(&b_log, "b"));
        a.join().unwrap();
        b.join().unwrap();
        taken(&log)
    });
    assert_eq!(log, ["a", "a1", "a2", "a joined", "b"]);
}

#[test]
fn scoped_children_start_in_spawn_order_and_depth_first() {
    let log = on(1, || {
        let log = Log::default();
        scope(|s| {
            for i in 0..3 {
                let log = &log;
                s.spawn(move || {
                    note(log, format!("{i}"));
                    scope(|inner| {
                        for j in 0..2 {
                            inner.spawn(move || note(log, format!("{i}.{j}")));
                        }
                    });
                });
            }
        });
        taken(&log)
    });
    assert_eq!(
        log,
        ["0", "0.0", "0.1", "1", "1.0", "1.1", "2", "2.0", "2.1"]
    );
}

#[test]
fn a_yielder_runs_again_only_after_every_runnable_fiber_started_or_not() {
    let log = on(1, || {
        let log = Log::default();
        let started: Vec<_> = ["x", "y"]
            .into_iter()
            .map(|name| {
                let log = log.clone();
                spawn_local(move || {
                    note(&log, format!("{name} 1"));
                    yield_now();
                    note(&log, format!("{name} 2"));
                })
            })
            .collect();
        // x and y have started and yielded once.
        yield_now();
        note(&log, "main 1");
        let unstarted: Vec<_> = ["u", "v"]
            .into_iter()
            .map(|name| {
                let log = log.clone();
                spawn(move || note(&log, name))
            })
            .collect();
        yield_now();
        note(&log, "main 2");
        for fiber in started.into_iter().chain(unstarted) {
            fiber.join().unwrap();
        }
        taken(&log)
    });
    assert_eq!(
        log,
        ["x 1", "y 1", "main 1", "u", "v", "x 2", "y 2", "main 2"]
    );
}

#[test]
fn yielders_take_turns_in_yield_order() {
    let log = on(1, || {
        let log = Log::default();
        let fibers: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|name| {
                let log = log.clone();
                spawn(move || {
                    for round in 0..3 {
                        note(&log, format!("{name}{round}"));
                        yield_now();
                    }
                })
            })
            .collect();
        for fiber in fibers {
            fiber.join().unwrap();
        }
        taken(&log)
    });
    assert_eq!(log, ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2"]);
}

#[test]
fn a_parent_joins_after_its_whole_batch_started_and_each_child_finishes_its_subtree_first() {
    let log = on(1, || {
        let log = Log::default();
        let children: Vec<_> = (0..3)
            .map(|i| {
                let log = log.clone();
                spawn(move || {
                    note(&log, format!("c{i}"));
                    let grandchild_log = log.clone();
                    spawn(move || note(&grandchild_log, format!("g{i}")))
                        .join()
                        .unwrap();
                    note(&log, format!("c{i} done"));
                })
            })
            .collect();
        for (i, child) in children.into_iter().enumerate() {
            child.join().unwrap();
            note(&log, format!("joined c{i}"));
        }
        taken(&log)
    });
    assert_eq!(
        log,
        [
            "c0",
            "g0",
            "c0 done",
            "c1",
            "g1",
            "c1 done",
            "c2",
            "g2",
            "c2 done",
            "joined c0",
            "joined c1",
            "joined c2"
        ]
    );
}
