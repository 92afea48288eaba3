//! `semaphore`: 1 000 tasks each acquiring and releasing one permit of a 10-permit semaphore
//! 1 000 times (100 with `--quick`), on 2 workers. Metric: ns per acquire/release pair.
//!
//! Variant `2w`: fibra's `Semaphore` (FIFO) in a scope of fibers vs tokio's `sync::Semaphore`
//! (FIFO) with as many tasks on a 2-worker multi-thread runtime. Every task counts its pairs
//! inside the permit, and the total is checked; so is that no more than 10 were ever inside.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// Tasks (fibers, tokio tasks) contending.
const TASKS: u64 = 1000;
/// The semaphore's permits.
const PERMITS: usize = 10;
/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let pairs = TASKS * if quick { 100 } else { 1000 };
    compare_per_op(
        "semaphore",
        "2w",
        pairs,
        ROUNDS,
        &[("fibra", &fibra), ("tokio", &tokio)],
    );
}

/// What the tasks inside a permit update: the pairs done, and how many are inside at most.
#[derive(Default)]
struct Inside {
    pairs: AtomicU64,
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Inside {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.most.fetch_max(now, Ordering::Relaxed);
        self.pairs.fetch_add(1, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    fn check(&self, pairs: u64) {
        assert_eq!(self.pairs.load(Ordering::Relaxed), pairs);
        assert!(self.most.load(Ordering::Relaxed) <= PERMITS);
    }
}

/// fibra: a scope of fibers on a 2-worker runtime, each doing its share of the `pairs`.
fn fibra(pairs: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let (semaphore, inside) = (fibra::sync::Semaphore::new(PERMITS), Inside::default());
        let start = Instant::now();
        fibra::scope(|s| {
            for _ in 0..TASKS {
                s.spawn(|| {
                    for _ in 0..pairs / TASKS {
                        let _permit = semaphore.acquire();
                        inside.enter();
                        inside.leave();
                    }
                });
            }
        });
        let elapsed = start.elapsed();
        inside.check(pairs);
        elapsed
    })
}

/// tokio: tasks on a 2-worker multi-thread runtime, spawned and awaited by a task, each doing
/// its share of the `pairs`.
fn tokio(pairs: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let semaphore = Arc::new(tokio::sync::Semaphore::new(PERMITS));
        let inside = Arc::new(Inside::default());
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (semaphore, inside) = (Arc::clone(&semaphore), Arc::clone(&inside));
                tokio::spawn(async move {
                    for _ in 0..pairs / TASKS {
                        let _permit = semaphore.acquire().await.expect("semaphore closed");
                        inside.enter();
                        inside.leave();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("tokio task panicked");
        }
        let elapsed = start.elapsed();
        inside.check(pairs);
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_does_every_pair_within_the_permits() {
        // Each function checks the counts itself.
        fibra(10 * TASKS);
        tokio(10 * TASKS);
    }
}
