//! A scoped join of a panicked child: the same outcome whether the child panicked before the
//! join or while the body waited in it, under 1, 2 and 4 workers, also when the panic lands
//! between the join's look at the child and its park; and a recorded panic whose drop parks.

use fibra_runtime::{checkpoint, current_worker, park, scope, yield_now};
use fibra_testing::{on, WORKER_COUNTS};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a body saw and what its scope returned.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// The payload `join` gave.
    joined: String,
    /// How the join of a sibling parked when the panic came ended.
    sibling: String,
    /// A child spawned after the join.
    later_child: u32,
    /// What the scope returned, or the message it panicked with.
    scope: Result<u32, String>,
}

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|m| m.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "another payload".to_owned())
}

/// The body joins a child that panics first (`panic_first`, the body waits for it without a
/// cancellation point) or only once the body has gone into the join.
fn join_a_panicking_child(panic_first: bool) -> Outcome {
    let go = AtomicBool::new(panic_first);
    let mut joined = String::new();
    let mut sibling = String::new();
    let mut later_child = 0;
    let ended = panic::catch_unwind(AssertUnwindSafe(|| {
        scope(|s| {
            let parked = s.spawn(|| loop {
                park();
            });
            let child = s.spawn(|| {
                while !go.load(Ordering::SeqCst) {
                    yield_now();
                }
                panic!("boom");
            });
            if panic_first {
                while !child.is_finished() {
                    yield_now();
                }
            } else {
                go.store(true, Ordering::SeqCst);
            }
            joined = message(&*child.join().unwrap_err().into_panic());
            // Cancellation points: the panic taken above cancels the body no more.
            checkpoint();
            let error = parked.join().unwrap_err();
            sibling = if error.is_cancelled() {
                "cancelled".to_owned()
            } else {
                error.to_string()
            };
            later_child = s.spawn(|| 5).join().unwrap();
            7
        })
    }));
    Outcome {
        joined,
        sibling,
        later_child,
        scope: ended.map_err(|payload| message(&*payload)),
    }
}

#[test]
fn joining_a_panicked_child_ends_the_same_in_both_orders() {
    for workers in WORKER_COUNTS {
        let (first, during) = on(workers, || {
            (join_a_panicking_child(true), join_a_panicking_child(false))
        });
        let expected = Outcome {
            joined: "boom".to_owned(),
            sibling: "cancelled".to_owned(),
            later_child: 5,
            scope: Ok(7),
        };
        assert_eq!(first, expected, "{workers} workers, panic before the join");
        assert_eq!(during, expected, "{workers} workers, panic during the join");
    }
}

#[test]
fn a_panic_nobody_joined_still_makes_the_scope_panic_after_a_joined_one() {
    for workers in WORKER_COUNTS {
        let outcome = on(workers, || {
            panic::catch_unwind(AssertUnwindSafe(|| {
                scope(|s| {
                    let joined = s.spawn(|| panic!("joined"));
                    assert!(joined.join().unwrap_err().is_panic());
                    // A second panic after the first was taken: never joined.
                    let unjoined = s.spawn(|| panic!("unjoined"));
                    while !unjoined.is_finished() {
                        yield_now();
                    }
                })
            }))
        });
        let payload = outcome.expect_err("the scope re-raises the unjoined panic");
        assert_eq!(message(&*payload), "unjoined", "{workers} workers");
    }
}

/// A panic payload whose drop parks its fiber (a shielded sleep), as a payload carrying a
/// value with a blocking cleanup may.
struct ParksOnDrop(u32);

impl Drop for ParksOnDrop {
    fn drop(&mut self) {
        fibra_runtime::shield(|| fibra_runtime::sleep(std::time::Duration::from_millis(20)));
    }
}

/// A recorded panic replaced by an earlier one is dropped outside the scope's lock: its drop
/// parks the body, and a third child that panics on the one worker meanwhile records its
/// panic at the same lock. (Dropped under it, the worker's thread stopped at the lock, the
/// body never ran again, and the run hung.) The earliest panic is the one re-raised.
#[test]
fn a_replaced_panic_that_parks_as_it_drops_stops_no_sibling() {
    use std::time::Duration;
    let sleep = |ms| fibra_runtime::shield(|| fibra_runtime::sleep(Duration::from_millis(ms)));
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let raised = on(1, move || {
            panic::catch_unwind(AssertUnwindSafe(|| {
                scope(|s| {
                    // Panics first (order 0); its handle, kept, holds back its record.
                    let first = s.spawn(move || {
                        sleep(1);
                        panic::panic_any(ParksOnDrop(0))
                    });
                    // Panics second and is recorded at once.
                    drop(s.spawn(move || {
                        sleep(2);
                        panic::panic_any(ParksOnDrop(1))
                    }));
                    // Panics while the second one's payload is being dropped.
                    drop(s.spawn(move || {
                        sleep(6);
                        panic::panic_any(ParksOnDrop(2))
                    }));
                    sleep(4);
                    drop(first);
                })
            }))
            .map_err(|payload| payload.downcast_ref::<ParksOnDrop>().map(|p| p.0))
        });
        done.send(raised).unwrap();
    });
    let raised = outcome
        .recv_timeout(Duration::from_secs(30))
        .expect("the scope ended");
    assert_eq!(raised, Err(Some(0)));
}

/// One scope whose body joins a child that panics on another worker (when it got one) while
/// the body is in its join, `delay` spins after the body let it go: whether the join returned
/// the panic and the scope its value.
fn join_a_child_panicking_elsewhere(delay: u32) -> bool {
    let started = AtomicUsize::new(usize::MAX);
    let go = AtomicBool::new(false);
    let body_worker = current_worker();
    let ended = panic::catch_unwind(AssertUnwindSafe(|| {
        scope(|s| {
            let child = s.spawn(|| {
                let me = current_worker();
                started.store(me.unwrap_or(0), Ordering::SeqCst);
                while !go.load(Ordering::SeqCst) {
                    if me == body_worker {
                        yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                panic::resume_unwind(Box::new("boom"));
            });
            // Spins a while before each yield, so that another worker often takes the child
            // (then it panics while the body runs); after a yield it may start here.
            while started.load(Ordering::SeqCst) == usize::MAX {
                for _ in 0..1_000 {
                    std::hint::spin_loop();
                }
                yield_now();
            }
            go.store(true, Ordering::SeqCst);
            for _ in 0..delay {
                std::hint::spin_loop();
            }
            let joined = child.join().map_err(|error| message(&*error.into_panic()));
            joined == Err("boom".to_owned())
        })
    }));
    ended.unwrap_or(false)
}

#[test]
fn a_panic_between_the_joins_look_and_its_park_is_returned_by_the_join() {
    for workers in WORKER_COUNTS {
        let failed = on(workers, || {
            // Unparks the body all the while, so that it goes round the join's loop (look at
            // the child, then park) again and again as the child panics.
            let stop = Arc::new(AtomicBool::new(false));
            let unparker = {
                let (stop, body) = (stop.clone(), fibra_runtime::current());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        body.unpark();
                    }
                })
            };
            let failed = (0..20_000u32)
                .filter(|round| !join_a_child_panicking_elsewhere(round % 64 * 8))
                .count();
            stop.store(true, Ordering::Relaxed);
            unparker.join().expect("the unparking thread");
            failed
        });
        assert_eq!(
            failed, 0,
            "{workers} workers: scopes unwound by a joined panic"
        );
    }
}
