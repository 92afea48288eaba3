//! `block_on_ready`: the cost of `block_on` of a future that is ready at its first poll, in a
//! loop; ns per `block_on`.
//!
//! Variant `1w` (10 000 000 calls, 1 000 000 with `--quick`): `fibra::block_on` in the main fiber
//! of a 1-worker runtime vs `futures::executor::block_on` on a plain thread (the calling one).
//! The future is `std::future::ready(i)` behind `black_box`, so neither side can see through it;
//! the sum of the outputs is checked.

use std::future::ready;
use std::hint::black_box;
use std::time::Duration;

use crate::rounds::{compare_per_op, time_each};
use crate::runtimes;

/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let calls = if quick { 1_000_000 } else { 10_000_000 };
    compare_per_op(
        "block_on_ready",
        "1w",
        calls,
        ROUNDS,
        &[("fibra", &fibra), ("futures", &futures)],
    );
}

/// fibra: `fibra::block_on` in the main fiber of a 1-worker runtime.
fn fibra(calls: u64) -> Duration {
    runtimes::fibra(1).block_on(move || time_each(calls, |i| fibra::block_on(black_box(ready(i)))))
}

/// futures: `futures::executor::block_on` on the calling thread.
fn futures(calls: u64) -> Duration {
    time_each(calls, |i| futures::executor::block_on(black_box(ready(i))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_call() {
        // Each function asserts the sum itself.
        fibra(1000);
        futures(1000);
    }
}
