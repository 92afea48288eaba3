//! `blocking_roundtrip`: sequential round trips through the blocking pool; ns per round trip
//! (hand a trivial closure to the pool, wait for its value).
//!
//! Variant `2w` (100 000 round trips, 20 000 with `--quick`): `fibra::blocking(|| i)` from the
//! main fiber of a 2-worker runtime vs `tokio::task::spawn_blocking(|| i).await` from a task on
//! a 2-worker multi-thread runtime. One untimed round trip first starts each pool's thread. The
//! sum of the returned values is checked.

use std::hint::black_box;
use std::time::Duration;

use crate::rounds::{compare_per_op, time_each, time_round_trips_on_tokio};
use crate::runtimes;

/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let trips = if quick { 20_000 } else { 100_000 };
    compare_per_op(
        "blocking_roundtrip",
        "2w",
        trips,
        ROUNDS,
        &[("fibra", &fibra), ("tokio", &tokio)],
    );
}

/// fibra: `fibra::blocking` from the main fiber.
fn fibra(trips: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        assert!(
            fibra::blocking(|| fibra::current_worker().is_none()),
            "ran on a worker"
        );
        time_each(trips, |i| fibra::blocking(move || black_box(i)))
    })
}

/// tokio: `spawn_blocking` + `.await` from a task on one of the runtime's workers.
fn tokio(trips: u64) -> Duration {
    time_round_trips_on_tokio(WORKERS, trips, |i| async move {
        tokio::task::spawn_blocking(move || black_box(i))
            .await
            .expect("blocking job panicked")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_round_trip() {
        // Each function asserts the sum itself.
        fibra(100);
        tokio(100);
    }
}
