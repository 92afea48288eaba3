//! `mutex_uncontended`: lock / increment / unlock on a mutex nobody else touches, 10 000 000
//! times (1 000 000 with `--quick`). Metric: ns per lock/unlock pair.
//!
//! Variant `1w`: fibra's `Mutex` in a fiber on a 1-worker runtime vs `parking_lot::Mutex` on a
//! plain thread. The fast path of both is an atomic compare-and-swap each way; fibra's lock
//! also charges the fiber a reduction and is a cancellation point (one thread-local access and
//! one load), as tokio's locks spend its cooperative budget. That charge came in at 21.0–21.1
//! → 21.7–22.0 ns per pair against parking_lot's 20.4–20.7 (two alternated runs of each
//! binary, load average 3), and ended the stuck-fiber warnings this bench's fiber drew. Under
//! callgrind (`diag_overhead`'s child job, 2 000 000 pairs, runtime start included) the
//! whole run went from 110.8 M to 187.2 M instructions, about 38 a pair for the charge and
//! the cancellation check; inlining the release's bound check (its panic out of line) then took
//! it to 160.9 M.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::rounds::{checked_elapsed, compare_per_op};
use crate::runtimes;

/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let pairs = if quick { 1_000_000 } else { 10_000_000 };
    compare_per_op(
        "mutex_uncontended",
        "1w",
        pairs,
        ROUNDS,
        &[("fibra", &fibra), ("parking_lot", &parking_lot)],
    );
}

/// fibra: the main fiber of a 1-worker runtime.
pub(crate) fn fibra(pairs: u64) -> Duration {
    runtimes::fibra(1).block_on(move || {
        let counter = black_box(fibra::sync::Mutex::new(0u64));
        let start = Instant::now();
        for _ in 0..pairs {
            *black_box(&counter).lock() += 1;
        }
        checked_elapsed(start, counter.into_inner(), pairs)
    })
}

/// parking_lot: the calling thread.
fn parking_lot(pairs: u64) -> Duration {
    let counter = black_box(parking_lot::Mutex::new(0u64));
    let start = Instant::now();
    for _ in 0..pairs {
        *black_box(&counter).lock() += 1;
    }
    checked_elapsed(start, counter.into_inner(), pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_counts_every_pair() {
        // Each function asserts the final count itself.
        fibra(1000);
        parking_lot(1000);
    }
}
