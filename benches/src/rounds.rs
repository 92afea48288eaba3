//! Alternating rounds: every system runs its round in turn (fibra, peer, peer, fibra, …) so a
//! noisy phase of the shared machine hits all of them alike; the medians are then reported.
//!
//! [`compare_timed`] (and its common case [`compare_per_op`], nanoseconds per operation) serves
//! a bench whose rounds each time a fixed amount of work, so that such a bench names only its
//! systems; [`checked_elapsed`] and [`sum_below`] end a round whose operations' results are
//! summed and checked, and [`time_each`] / [`time_round_trips`] (with
//! [`time_round_trips_on_tokio`]) are whole such rounds for operations done one after another.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::report::{self, Case, Metric, Outcome};
use crate::runtimes;

/// One system taking part in a [`Case`]: its name and one round of its measurement.
pub struct Contender<'a> {
    system: &'static str,
    round: Box<dyn FnMut() -> f64 + 'a>,
}

impl std::fmt::Debug for Contender<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contender")
            .field("system", &self.system)
            .finish_non_exhaustive()
    }
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

/// One system of a [`compare_timed`] case: its name and a round of its workload, which does
/// the given amount of work and returns how long it took.
pub type Timed<'a> = (&'static str, &'a dyn Fn(u64) -> Duration);

/// [`compare`] for a case of `bench` under `variant` whose values are times: every round of
/// every system is given `work` (operations, items, tasks) and the time it returns becomes the
/// value in `metric`.
pub fn compare_timed(
    bench: &'static str,
    variant: &'static str,
    metric: Metric,
    work: u64,
    rounds: usize,
    systems: &[Timed<'_>],
) {
    let case = Case {
        bench,
        variant,
        metric,
    };
    let mut contenders: Vec<Contender<'_>> = systems
        .iter()
        .map(|&(system, round)| {
            Contender::new(system, move || timed_value(metric, round(work), work))
        })
        .collect();
    compare(&case, rounds, &mut contenders);
}

/// [`compare_timed`] for a [`Metric::NsPerOp`] case: every round of every system does `ops`
/// operations.
pub fn compare_per_op(
    bench: &'static str,
    variant: &'static str,
    ops: u64,
    rounds: usize,
    systems: &[Timed<'_>],
) {
    compare_timed(bench, variant, Metric::NsPerOp, ops, rounds, systems);
}

/// The value in `metric` of a round whose `work` took `elapsed`.
fn timed_value(metric: Metric, elapsed: Duration, work: u64) -> f64 {
    match metric {
        Metric::NsPerOp => elapsed.as_nanos() as f64 / work as f64,
        Metric::MsTotal | Metric::CpuMs => elapsed.as_secs_f64() * 1e3,
        Metric::BytesPerTask
        | Metric::MaxOverMin
        | Metric::Rps
        | Metric::BytesPerConn
        | Metric::FaultsPerTask
        | Metric::NsPerOpAtMeanCrossing
        | Metric::PercentOfCore => {
            panic!("{} is not a time", metric.name())
        }
    }
}

/// Times `ops` operations done one after another, operation `i` returning `i`, and checks
/// their sum: the round of a bench whose operations are sequential calls.
pub fn time_each(ops: u64, mut op: impl FnMut(u64) -> u64) -> Duration {
    let start = Instant::now();
    let mut sum = 0;
    for i in 0..ops {
        sum += op(i);
    }
    checked_elapsed(start, sum, sum_below(ops))
}

/// [`time_each`] for round trips that are awaited, after one untimed trip that starts whatever
/// they go through (a pool's thread, a runtime's workers).
pub async fn time_round_trips<F: Future<Output = u64>>(
    trips: u64,
    mut trip: impl FnMut(u64) -> F,
) -> Duration {
    trip(0).await;
    let start = Instant::now();
    let mut sum = 0;
    for i in 0..trips {
        sum += trip(i).await;
    }
    checked_elapsed(start, sum, sum_below(trips))
}

/// [`time_round_trips`] by a task on a fresh tokio multi-thread runtime of `workers` workers:
/// tokio's round of a round-trip bench.
pub fn time_round_trips_on_tokio<F>(
    workers: usize,
    trips: u64,
    trip: impl FnMut(u64) -> F + Send + 'static,
) -> Duration
where
    F: Future<Output = u64> + Send + 'static,
{
    let runtime = runtimes::tokio_multi(workers);
    runtimes::tokio_on_worker(&runtime, time_round_trips(trips, trip))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_become_values_in_their_metric() {
        let elapsed = Duration::from_secs(2);
        assert_eq!(timed_value(Metric::NsPerOp, elapsed, 1000), 2e6);
        assert_eq!(timed_value(Metric::MsTotal, elapsed, 1000), 2e3);
        assert_eq!(timed_value(Metric::CpuMs, elapsed, 1), 2e3);
    }

    #[test]
    fn sequential_rounds_check_their_sums() {
        time_each(100, |i| i);
        futures::executor::block_on(time_round_trips(100, |i| async move { i }));
    }
}
