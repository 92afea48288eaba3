//! `block_on_ready`: the cost of `block_on` of a future that is ready at its first poll, in a
//! loop; ns per `block_on`.
//!
//! Variant `1w` (10 000 000 calls, 1 000 000 with `--quick`): `fibra::block_on` in the main fiber
//! of a 1-worker runtime vs `futures::executor::block_on` on a plain thread (the calling one).
//! The future is `std::future::ready(i)` behind `black_box`, so neither side can see through it;
//! the sum of the outputs is checked.

use std::future::ready;
use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::report::{Case, Metric};
use crate::rounds::{compare, Contender};
use crate::runtimes;

/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let calls = if quick { 1_000_000 } else { 10_000_000 };
    let case = Case {
        bench: "block_on_ready",
        variant: "1w",
        metric: Metric::NsPerOp,
    };
    compare(
        &case,
        ROUNDS,
        &mut [
            Contender::new("fibra", || per_op(fibra(calls), calls)),
            Contender::new("futures", || per_op(futures(calls), calls)),
        ],
    );
}

/// Nanoseconds per call.
fn per_op(elapsed: Duration, calls: u64) -> f64 {
    elapsed.as_nanos() as f64 / calls as f64
}

/// The sum every run must reach: `0 + 1 + … + calls - 1`.
fn expected_sum(calls: u64) -> u64 {
    calls * (calls - 1) / 2
}

/// fibra: `fibra::block_on` in the main fiber of a 1-worker runtime.
fn fibra(calls: u64) -> Duration {
    runtimes::fibra(1).block_on(move || {
        let start = Instant::now();
        let mut sum = 0;
        for i in 0..calls {
            sum += fibra::block_on(black_box(ready(i)));
        }
        let elapsed = start.elapsed();
        assert_eq!(sum, expected_sum(calls));
        elapsed
    })
}

/// futures: `futures::executor::block_on` on the calling thread.
fn futures(calls: u64) -> Duration {
    let start = Instant::now();
    let mut sum = 0;
    for i in 0..calls {
        sum += futures::executor::block_on(black_box(ready(i)));
    }
    let elapsed = start.elapsed();
    assert_eq!(sum, expected_sum(calls));
    elapsed
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
