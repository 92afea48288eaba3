//! Alternating rounds: every system runs its round in turn (fibra, peer, peer, fibra, …) so a
//! noisy phase of the shared machine hits all of them alike; the medians are then reported.
//!
//! [`compare_per_op`] is the common case of a bench that times a fixed number of operations a
//! round and reports nanoseconds per operation, so that such a bench names only its systems;
//! [`checked_elapsed`] and [`sum_below`] end a round whose operations' results are summed and
//! checked.

use std::time::{Duration, Instant};

use crate::report::{self, Case, Metric, Outcome};

/// One system taking part in a [`Case`]: its name and one round of its measurement.
pub struct Contender<'a> {
    system: &'static str,
    round: Box<dyn FnMut() -> f64 + 'a>,
}

impl<'a> Contender<'a> {
    /// `round` runs the workload once and returns the measured value in the case's metric.
    pub fn new(system: &'static str, round: impl FnMut() -> f64 + 'a) -> Self {
        Contender {
            system,
            round: Box::new(round),
        }
    }
}

/// Runs `rounds` alternating rounds of every contender, logs each round on stderr and prints
/// the case's JSON lines on stdout.
pub fn compare(case: &Case, rounds: usize, contenders: &mut [Contender<'_>]) {
    let mut values = vec![Vec::with_capacity(rounds); contenders.len()];
    for round in 1..=rounds {
        for (contender, values) in contenders.iter_mut().zip(&mut values) {
            let value = (contender.round)();
            eprintln!(
                "{}/{} round {round}/{rounds} {}: {value:.2} {}",
                case.bench,
                case.variant,
                contender.system,
                case.metric.name()
            );
            values.push(value);
        }
    }
    let outcomes: Vec<Outcome> = contenders
        .iter()
        .zip(&values)
        .map(|(contender, values)| Outcome {
            system: contender.system,
            value: report::median(values),
            runs: values.len(),
        })
        .collect();
    for line in report::lines(case, &outcomes) {
        println!("{line}");
    }
}

/// One system of a [`compare_per_op`] case: its name and a round of its workload, which does
/// the given number of operations and returns how long they took.
pub type Timed<'a> = (&'static str, &'a dyn Fn(u64) -> Duration);

/// [`compare`] for a [`Metric::NsPerOp`] case of `bench` under `variant`: every round of every
/// system does `ops` operations and its value is the time per operation.
pub fn compare_per_op(
    bench: &'static str,
    variant: &'static str,
    ops: u64,
    rounds: usize,
    systems: &[Timed<'_>],
) {
    let case = Case {
        bench,
        variant,
        metric: Metric::NsPerOp,
    };
    let mut contenders: Vec<Contender<'_>> = systems
        .iter()
        .map(|&(system, round)| {
            Contender::new(system, move || round(ops).as_nanos() as f64 / ops as f64)
        })
        .collect();
    compare(&case, rounds, &mut contenders);
}

/// The time since `start`, read before `sum` is checked against `expected` so that the check
/// stays out of the timed region: the end of every summing workload's round.
pub fn checked_elapsed(start: Instant, sum: u64, expected: u64) -> Duration {
    let elapsed = start.elapsed();
    assert_eq!(sum, expected, "the workload's results are off");
    elapsed
}

/// `0 + 1 + … + n - 1`: what a workload whose `n` operations return their own index must sum to.
pub fn sum_below(n: u64) -> u64 {
    n * (n - 1) / 2
}
