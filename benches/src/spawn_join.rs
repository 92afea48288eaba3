//! `spawn_join`: trivial spawn + join, in batches of `BATCH`: spawn a batch, join it, repeat.
//!
//! Variant `2w` (1 000 000 tasks, 100 000 with `--quick`): a fibra scope per batch with 2 workers
//! vs tokio multi-thread (2 workers, `tokio::spawn` + `.await`) vs `may` (2 workers). Variant
//! `2w_10k` (10 000 tasks in both modes): fibra again vs `std::thread::spawn` + `join`. Each
//! task returns its index and the joined sum is checked. Metric: ns per spawn + join.
//!
//! # Measured
//!
//! Heap allocations per spawn + join (counted by a global allocator in
//! `runtime/tests/spawn_allocations.rs`, batches of 1 000 as here): a scoped child 3 → 2 (its
//! `Core` and its packet; its closure now lives inline in the `Core` when it fits in four
//! words, as this bench's does), a `fibra::spawn` 4 → 3 (plus its own cancel scope, which
//! `JoinHandle::abort` cancels).
//!
//! Callgrind, 1 worker, 100 batches (runtime start included): 3 597 → 3 155 instructions per
//! spawn + join, the allocator's share 33 % → 25 %. Where the 3 155 go: malloc and free 790
//! (the `Core`'s memory is freed only when the scope's cancel scope drops its list of weak
//! member references, a batch at a time, so glibc serves it from its bins, not its thread
//! cache); starting the coroutine and running the child 265; the diagnostics' fiber table 227
//! (insert and remove under a shard lock); freeing the `Core`s from that member list 214; the
//! stack pool 198; joining the cancel scope 79; resizes of the unstarted deque 55 (a batch is
//! popped and pushed back to turn it over, and crossbeam shrinks and regrows the buffer); the
//! rest is the scheduler loop, the packet, the latch and the join's park.
//!
//! `fibra-compare spawn_join`, three runs of the before and after binaries alternated, load
//! average 10.6–15 on the shared 2-core machine: `2w` fibra 1 400 → 1 139 ns (medians of the
//! runs' medians), ratio to tokio 1.11× → 0.92× (per run 1.11/1.58/0.77 before,
//! 1.48/0.77/0.92 after), to may 0.150× → 0.167×; `2w_10k` 936 → 801 ns. At that load the
//! spread of one binary's runs is twice the change; the callgrind count is the measure. Not
//! reached: ≤ 0.6× tokio and ≤ 0.2× may. What is left per spawn is spread over many small
//! costs, the largest being the two allocations and the late free above; the next steps are
//! one allocation for the `Core` and the packet, and cancel-scope membership that lets a
//! finished fiber's memory go at once (the cancellation path's owner).
//!
//! One allocation for the `Core` and the packet (2026-12-06): the packet is now a part of the
//! `Core`, the result kept in place in a few words (boxed when bigger), and the entry finds
//! it through its `Core`. Allocations per spawn + join: a scoped child 2 → 1, a `fibra::spawn`
//! 3 → 2. Callgrind as above: 3 161 → 2 816 instructions per spawn + join; glibc's
//! `malloc_consolidate` (65 per spawn, the packets' small chunks merged back when a bigger
//! request came) is gone, and malloc and free together 772 → 395. `fibra-compare
//! spawn_join`, three alternated runs of the binaries before and after, load average 1.7–1.9:
//! `2w` fibra / tokio 0.774, 0.755, 0.654 before (median 0.755), 0.545, 0.623, 0.648 after
//! (median 0.623); fibra / may 0.183, 0.204, 0.178 before, 0.171, 0.154, 0.155 after. Two
//! more pairs (load average 1.8–2.2): 0.681, 0.802 before, 0.639, 0.568 after (may 0.175, 0.221
//! before, 0.152, 0.158 after). The full `fibra-compare all` run after: 0.609× tokio, 0.182×
//! may.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::rounds::{checked_elapsed, compare_per_op};
use crate::runtimes;

/// Tasks spawned before the spawner joins them.
const BATCH: u64 = 1000;
/// Workers of every multi-worker system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs both variants and prints their JSON lines.
pub fn run(quick: bool) {
    let tasks = if quick { 100_000 } else { 1_000_000 };
    compare_per_op(
        "spawn_join",
        "2w",
        tasks,
        ROUNDS,
        &[("fibra", &fibra), ("tokio", &tokio), ("may", &may)],
    );
    compare_per_op(
        "spawn_join",
        "2w_10k",
        10_000,
        ROUNDS,
        &[("fibra", &fibra), ("std_thread", &std_thread)],
    );
}

/// The sum every run must join: each batch returns `0 + 1 + … + BATCH - 1`.
fn expected_sum(tasks: u64) -> u64 {
    tasks / BATCH * (BATCH * (BATCH - 1) / 2)
}

/// fibra: one scope per batch, children spawned with `s.spawn` and joined in order.
fn fibra(tasks: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let start = Instant::now();
        let mut sum = 0;
        for _ in 0..tasks / BATCH {
            sum += fibra::scope(|s| {
                let handles: Vec<_> = (0..BATCH).map(|i| s.spawn(move || black_box(i))).collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("fibra child panicked"))
                    .sum::<u64>()
            });
        }
        checked_elapsed(start, sum, expected_sum(tasks))
    })
}

/// tokio: the spawner is itself a task on a 2-worker multi-thread runtime.
fn tokio(tasks: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let start = Instant::now();
        let mut sum = 0;
        for _ in 0..tasks / BATCH {
            let handles: Vec<_> = (0..BATCH)
                .map(|i| tokio::spawn(async move { black_box(i) }))
                .collect();
            for handle in handles {
                sum += handle.await.expect("tokio task panicked");
            }
        }
        checked_elapsed(start, sum, expected_sum(tasks))
    })
}

/// may: the spawner is itself a coroutine on may's 2-worker scheduler.
fn may(tasks: u64) -> Duration {
    let spawner = move || {
        let start = Instant::now();
        let mut sum = 0;
        for _ in 0..tasks / BATCH {
            let handles: Vec<_> = (0..BATCH)
                // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between
                // threads (so a thread-local must not be held across a switch) and has a small
                // fixed stack. This child touches no thread-local and uses a few bytes of stack.
                .map(|i| unsafe { may::coroutine::spawn(move || black_box(i)) })
                .collect();
            for handle in handles {
                sum += handle.join().expect("may coroutine panicked");
            }
        }
        checked_elapsed(start, sum, expected_sum(tasks))
    };
    // SAFETY: as for the children above: the spawner touches no thread-local (only `Instant`,
    // the allocator and may's own join handles, which are made for coroutines) and its frames
    // are a few hundred bytes, far within may's default coroutine stack.
    let handle = unsafe { may::coroutine::spawn(spawner) };
    handle.join().expect("may spawner panicked")
}

/// std threads: the spawner is the calling thread.
fn std_thread(tasks: u64) -> Duration {
    let start = Instant::now();
    let mut sum = 0;
    for _ in 0..tasks / BATCH {
        let handles: Vec<_> = (0..BATCH)
            .map(|i| std::thread::spawn(move || black_box(i)))
            .collect();
        for handle in handles {
            sum += handle.join().expect("thread panicked");
        }
    }
    checked_elapsed(start, sum, expected_sum(tasks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_joins_every_task() {
        // Each function asserts the joined sum itself.
        runtimes::init_may();
        fibra(2 * BATCH);
        tokio(2 * BATCH);
        may(2 * BATCH);
        std_thread(BATCH);
    }
}
