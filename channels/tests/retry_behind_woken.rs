//! A blocked receive whose peer the caller has just woken retries behind the woken fibers
//! instead of parking, however many fibers that yielded wait on the worker: a ping-pong among
//! many yielders parks once per round (the side that waits first), not twice.

use fibra_channels::bounded;
use fibra_runtime::wait::RETRY_TURNS;
use fibra_runtime::{current_worker, spawn_local, yield_now, Handle};
use fibra_testing::{on, WORKER_COUNTS};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const ROUNDS: usize = 20;

/// Parks counted on the caller's worker so far.
fn parks_here() -> u64 {
    let worker = current_worker().expect("on a worker");
    Handle::current().metrics().workers[worker].parks
}

#[test]
fn a_receive_after_waking_its_peer_retries_instead_of_parking() {
    for workers in WORKER_COUNTS {
        let parks = on(workers, || {
            // Everything pinned to this worker, so its park count is this test's alone.
            let done = Arc::new(AtomicBool::new(false));
            let yielders: Vec<_> = (0..2 * RETRY_TURNS)
                .map(|_| {
                    let done = done.clone();
                    spawn_local(move || {
                        while !done.load(Ordering::Relaxed) {
                            yield_now();
                        }
                    })
                })
                .collect();
            let (to_b, from_a) = bounded::<usize>(1);
            let (to_a, from_b) = bounded::<usize>(1);
            let a = spawn_local(move || {
                (0..ROUNDS)
                    .map(|round| {
                        yield_now();
                        to_b.send(round).unwrap();
                        let before = parks_here();
                        assert_eq!(from_b.recv().unwrap(), round);
                        parks_here() - before
                    })
                    .collect::<Vec<u64>>()
            });
            let b = spawn_local(move || {
                for _ in 0..ROUNDS {
                    yield_now();
                    let round = from_a.recv().unwrap();
                    to_a.send(round).unwrap();
                }
            });
            let parks = a.join().unwrap();
            b.join().unwrap();
            done.store(true, Ordering::Relaxed);
            yielders.into_iter().for_each(|y| y.join().unwrap());
            parks
        });
        // The first round B has not reached its receive when A sends, so A parks; from then
        // on B waits first, A's send wakes it, and A's receive retries behind it.
        let mut expected = vec![0; ROUNDS];
        expected[0] = 1;
        assert_eq!(parks, expected, "{workers} workers");
    }
}
