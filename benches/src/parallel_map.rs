//! `parallel_map`: a trivial function (`map`) over 1 000 000 items (100 000 with `--quick`),
//! the results collected in input order. Metric: ms for the whole map.
//!
//! Variant `2w`: `fibra::parallel_map` (one fiber per item) on the main fiber of a 2-worker
//! runtime vs a tokio `JoinSet` fan-out on a 2-worker multi-thread runtime (one task per item,
//! each returning its index with its result, which the spawner puts back in place) vs rayon's
//! `into_par_iter().map().collect()` in a 2-thread pool. Variant `2w_chunks`:
//! `fibra::parallel_chunks` (four fibers per worker taking blocks of items in turn) vs the same
//! rayon map. Every run checks every result, in order, and their sum.
//!
//! # Measured
//!
//! `2w_chunks`, alternated runs of the before and after binaries on the shared 2-core machine
//! (load average 5–13): before, fixed chunks (the items split into eight chunk vectors, each
//! mapped into a new vector, then copied into the result: three passes over 8 MB of fresh
//! memory, two of them on the spawner's thread alone) 5.47 / 9.56 / 6.34 ms vs rayon 0.99 /
//! 1.14 / 1.41 ms, 5.5× / 8.4× / 4.5×; after (the fibers take blocks of up to 1 024 items from
//! the shared iterator and write each result straight into its place in the result vector:
//! one pass, over both workers, as rayon's `collect`) 2.41 / 2.56 / 3.13 ms vs rayon 1.26 /
//! 1.30 / 1.23 ms, 1.9× / 2.0× / 2.6× — within the 3× target. What remains beside rayon is
//! the scope's start (eight fibers, the second worker's wake) and a lock per block.
//!
//! On the AMD EPYC guest (2026-12-06) the same binary measured 2.89 ms against rayon's 0.53
//! ms, 5.5×: fibra's maps got the bench's `map` as a function pointer (`fn(u64) -> u64`),
//! an indirect call per item, while rayon's and tokio's got it as the function item, inlined.
//! Passed as the function item to all three (no change to `parallel_chunks`): three full runs,
//! `2w_chunks` 2.18×, 2.13×, 2.21× rayon (fibra 1.03 ms, rayon 0.46 ms in the last).
//!
//! 2026-12-07, the shared 2-core machine at a load average near 1.5: `parallel_chunks` took
//! its blocks under a std lock, held while the iterator made the items, and a block was at most
//! 1 024 items: for a million items, a thousand takes, each moving the lock's line between the
//! workers, and a fiber that found it taken stopped its whole worker (a deadlock when the
//! iterator parked the holder on that worker). Blocks are now a sixteenth of a fiber's share
//! (at most 64 KiB of items: 7 813 here), the fibers take them in turns as fibers, and a block
//! is written through a `&mut` slice, which the compiler vectorizes. Three alternated probes of
//! 300 maps each on one warm runtime, medians: 1.38, 1.42, 1.38 ms before, 0.77, 1.33, 0.88
//! ms after (rayon 0.25–0.35 ms). The bench itself did not move: four alternated runs each,
//! `2w_chunks` 1.71×, 2.22×, 2.27×, 1.97× before, 1.86×, 1.22×, 2.94×, 2.46× after. Its rounds
//! each start a fresh runtime, and there both workers map for the whole round (a trace of the
//! blocks: both start within 0.1–0.3 ms and end together) at about 2.3 ns an item against 1 ns
//! on a warm runtime, the same whatever the block size: the result vector's memory is cold.
//!
//! `2w` (a fiber per item) stays 180×–400× rayon and 0.46×–0.60× tokio's task per item: a
//! million fibers cost a spawn and a join each; its docs send CPU-bound maps to
//! `parallel_chunks`.

use std::ops::Range;
use std::time::{Duration, Instant};

use rayon::iter::{IntoParallelIterator, ParallelIterator};

use crate::report::Metric;
use crate::rounds::compare_timed;
use crate::runtimes;

/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let items = if quick { 100_000 } else { 1_000_000 };
    compare_timed(
        "parallel_map",
        "2w",
        Metric::MsTotal,
        items,
        ROUNDS,
        &[("fibra", &fibra), ("tokio", &tokio), ("rayon", &rayon)],
    );
    compare_timed(
        "parallel_map",
        "2w_chunks",
        Metric::MsTotal,
        items,
        ROUNDS,
        &[("fibra", &fibra_chunks), ("rayon", &rayon)],
    );
}

/// The work per item: a multiplicative hash.
fn map(x: u64) -> u64 {
    x.wrapping_mul(2_654_435_761) >> 7
}

/// Checks a run's results: one per item, each in its item's place, and their sum.
fn check(results: &[u64], items: u64) {
    assert_eq!(results.len() as u64, items, "results lost");
    for (x, &result) in (0..items).zip(results) {
        assert_eq!(result, map(x), "result {x} out of place");
    }
    let expected = (0..items).map(map).fold(0u64, u64::wrapping_add);
    let sum = results.iter().copied().fold(0u64, u64::wrapping_add);
    assert_eq!(sum, expected, "results' sum");
}

/// fibra: the main fiber of a 2-worker runtime calls `parallel_map`.
fn fibra(items: u64) -> Duration {
    fibra_with(items, |items| fibra::parallel_map(items, map))
}

/// fibra, variant `2w_chunks`: the main fiber calls `parallel_chunks` (a fiber per chunk).
fn fibra_chunks(items: u64) -> Duration {
    fibra_with(items, |items| fibra::parallel_chunks(items, map))
}

/// The main fiber of a 2-worker runtime maps `items` with `parallel`, which passes the bench's
/// `map` on as the function item it is (as rayon's map gets it), not as a pointer: a pointer
/// would cost an indirect call per item that the compiler could not inline.
fn fibra_with(
    items: u64,
    parallel: impl FnOnce(Range<u64>) -> Vec<u64> + Send + 'static,
) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let start = Instant::now();
        let results = parallel(0..items);
        let elapsed = start.elapsed();
        check(&results, items);
        elapsed
    })
}

/// tokio: the spawner is itself a task on a 2-worker multi-thread runtime; it spawns one task
/// per item into a `JoinSet`, then drains the set and puts every result at its index.
fn tokio(items: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let start = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for x in 0..items {
            set.spawn(async move { (x, map(x)) });
        }
        let mut results = vec![0; items as usize];
        while let Some(joined) = set.join_next().await {
            let (x, result) = joined.expect("tokio task panicked");
            results[x as usize] = result;
        }
        let elapsed = start.elapsed();
        check(&results, items);
        elapsed
    })
}

/// rayon: `into_par_iter().map().collect()` run on a 2-thread pool.
fn rayon(items: u64) -> Duration {
    let pool = runtimes::rayon(WORKERS);
    pool.install(move || {
        let start = Instant::now();
        let results: Vec<u64> = (0..items).into_par_iter().map(map).collect();
        let elapsed = start.elapsed();
        check(&results, items);
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_maps_every_item_in_order() {
        // Each function checks the results itself.
        fibra(10_000);
        fibra_chunks(10_000);
        tokio(10_000);
        rayon(10_000);
    }
}
