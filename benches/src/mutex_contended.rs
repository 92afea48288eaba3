//! `mutex_contended`: 1 000 tasks each doing 1 000 lock / increment / unlock on one shared
//! mutex (100 each with `--quick`), on 2 workers. Metric: ns per lock/unlock pair.
//!
//! Variant `fair`: fibra's `Mutex::new` (FIFO handoff) vs tokio's `sync::Mutex` (also FIFO) with
//! as many tasks, vs `may`'s mutex with as many coroutines, and `parking_lot::Mutex` on 2
//! plain threads doing the same number of pairs, for reference. Variant `unfair`: fibra's
//! `Mutex::new_unfair` (barging) vs the same peers. The final count is checked every run.
//!
//! # Why fibra's fair rounds vary
//!
//! Each fibra round logs how many of its parked fibers were woken from the other worker. A
//! fair unlock hands the lock to the oldest waiter, who locks again at once behind everyone
//! else, so the order of the queue repeats lap after lap, and with it the workers its
//! owners alternate between: set by how the fibers first arrived, which is timing. Started
//! fibers never move, so a hand-off to a fiber of the other worker waits for that worker to
//! pick it up and touch the lock, the waiter record and the fiber's state, each a cache line
//! coming from the other core; tokio's woken task runs on the waker's worker instead. Fitted
//! over 14 full-size rounds of each build of `diag_overhead` (load average 3): ns per pair ≈
//! 300 + 1 630 × the share of wakes that crossed (recording on), 270 + 1 690 × that share
//! (off), shares from 0.003 (254–387 ns) to 0.80 (1 430–2 250 ns), with rounds in between; a
//! round where the fibers happen to run one after another without meeting costs about 40 ns.
//! The floor under a crossing is the machine's: two threads bouncing one atomic between the two
//! cores took 486 and 776 ns a round trip on a quiet machine, so a hand-off that moves a few
//! lines between cores costs over a microsecond, and a fair round whose queue alternates
//! workers cannot come under tokio's 530–590 ns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// Tasks (fibers, tokio tasks, coroutines) contending.
const TASKS: u64 = 1000;
/// Workers of every multi-worker system, and `parking_lot`'s threads.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs both variants and prints their JSON lines.
pub fn run(quick: bool) {
    let pairs = TASKS * if quick { 100 } else { 1000 };
    for (variant, fair) in [("fair", true), ("unfair", false)] {
        compare_per_op(
            "mutex_contended",
            variant,
            pairs,
            ROUNDS,
            &[
                ("fibra", &|pairs| fibra(fair, pairs)),
                ("tokio", &tokio),
                ("may", &may),
                ("parking_lot", &parking_lot),
            ],
        );
    }
}

/// fibra: a scope of fibers on a 2-worker runtime, each doing its share of the `pairs`. Logs
/// on stderr the share of the waiters' wake-ups that crossed between the workers (see the
/// module docs).
fn fibra(fair: bool, pairs: u64) -> Duration {
    let (elapsed, crossings) = fibra_crossings(fair, pairs);
    eprintln!(
        "mutex_contended fibra: {} of {} parked fibers were woken from the other worker",
        crossings.crossed, crossings.parked
    );
    elapsed
}

/// How many of a round's parked fibers were woken from the other worker.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crossings {
    pub(crate) crossed: u64,
    pub(crate) parked: u64,
}

impl Crossings {
    /// The crossed wakes' share of the parks (0 when nothing parked).
    pub(crate) fn share(self) -> f64 {
        self.crossed as f64 / self.parked.max(1) as f64
    }
}

/// [`fibra`]'s round, returning its crossings instead of logging them.
pub(crate) fn fibra_crossings(fair: bool, pairs: u64) -> (Duration, Crossings) {
    let runtime = runtimes::fibra(WORKERS);
    let handle = runtime.handle();
    let elapsed = runtime.block_on(move || {
        let counter = if fair {
            fibra::sync::Mutex::new(0u64)
        } else {
            fibra::sync::Mutex::new_unfair(0u64)
        };
        let start = Instant::now();
        fibra::scope(|s| {
            for _ in 0..TASKS {
                s.spawn(|| {
                    for _ in 0..pairs / TASKS {
                        *counter.lock() += 1;
                    }
                });
            }
        });
        let elapsed = start.elapsed();
        assert_eq!(counter.into_inner(), pairs);
        elapsed
    });
    let workers = handle.metrics().workers;
    let crossings = Crossings {
        crossed: workers.iter().map(|w| w.inbox_wakes).sum(),
        parked: workers.iter().map(|w| w.parks).sum(),
    };
    (elapsed, crossings)
}

/// tokio: tasks on a 2-worker multi-thread runtime, spawned and awaited by a task, each doing
/// its share of the `pairs`.
fn tokio(pairs: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let counter = Arc::new(tokio::sync::Mutex::new(0u64));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    for _ in 0..pairs / TASKS {
                        *counter.lock().await += 1;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("tokio task panicked");
        }
        let elapsed = start.elapsed();
        assert_eq!(*counter.lock().await, pairs);
        elapsed
    })
}

/// may: coroutines on may's 2-worker scheduler, spawned and joined by a coroutine, each doing
/// its share of the `pairs`.
fn may(pairs: u64) -> Duration {
    let spawner = move || {
        let counter = Arc::new(may::sync::Mutex::new(0u64));
        let start = Instant::now();
        let coroutines: Vec<_> = (0..TASKS)
            .map(|_| {
                let counter = Arc::clone(&counter);
                // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between
                // threads (so a thread-local must not be held across a switch) and has a small
                // fixed stack. This one touches no thread-local, and its guard is may's own,
                // made to be held by coroutines; it uses a few bytes of stack.
                unsafe {
                    may::coroutine::spawn(move || {
                        for _ in 0..pairs / TASKS {
                            *counter.lock().expect("may mutex poisoned") += 1;
                        }
                    })
                }
            })
            .collect();
        for coroutine in coroutines {
            coroutine.join().expect("may coroutine panicked");
        }
        let elapsed = start.elapsed();
        assert_eq!(*counter.lock().expect("may mutex poisoned"), pairs);
        elapsed
    };
    // SAFETY: as for the children: the spawner touches no thread-local (only `Instant`, the
    // allocator and may's own handles and mutex) and its frames are a few hundred bytes.
    let handle = unsafe { may::coroutine::spawn(spawner) };
    handle.join().expect("may spawner panicked")
}

/// parking_lot: the `pairs` split over 2 plain threads.
fn parking_lot(pairs: u64) -> Duration {
    let counter = parking_lot::Mutex::new(0u64);
    let per_thread = pairs / WORKERS as u64;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                for _ in 0..per_thread {
                    *counter.lock() += 1;
                }
            });
        }
    });
    let elapsed = start.elapsed();
    assert_eq!(counter.into_inner(), pairs);
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_counts_every_pair() {
        // Each function asserts the final count itself.
        runtimes::init_may();
        fibra(true, 10 * TASKS);
        fibra(false, 10 * TASKS);
        tokio(10 * TASKS);
        may(10 * TASKS);
        parking_lot(10 * TASKS);
    }
}
