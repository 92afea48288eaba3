//! Alternating rounds: every system runs its round in turn (fibra, peer, peer, fibra, …) so a
//! noisy phase of the shared machine hits all of them alike; the medians are then reported.

use crate::report::{self, Case, Outcome};

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
