//! The JSON lines on stdout: one per system and variant, then the ratio line.
//!
//! The JSON is written by hand: every key and string value is one of this binary's own
//! identifiers, and numbers are finite or written as `null`.

use std::fmt::Write as _;

/// What a bench measures; every metric but [`Metric::Rps`] is better when lower.
#[derive(Clone, Copy, Debug)]
pub enum Metric {
    /// Nanoseconds per operation.
    NsPerOp,
    /// Milliseconds for the whole workload.
    MsTotal,
    /// Resident memory per task, in bytes.
    BytesPerTask,
    /// CPU time of the whole process (user + system) for the whole workload, in milliseconds.
    CpuMs,
    /// The largest of several shares over the smallest (1.0 is even).
    MaxOverMin,
    /// Requests per second (better when higher).
    Rps,
    /// Resident memory per open connection, in bytes.
    BytesPerConn,
    /// Minor page faults of the whole process per task, over the whole workload.
    FaultsPerTask,
    /// Nanoseconds per operation, read off a system's least-squares line of its rounds' times
    /// over the share of their wakes that crossed between workers, at the mean share of every
    /// system's rounds.
    NsPerOpAtMeanCrossing,
    /// One thread's CPU time over the wall time, in percent of one core.
    PercentOfCore,
}

impl Metric {
    /// The metric's name in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Metric::NsPerOp => "ns_per_op",
            Metric::MsTotal => "ms_total",
            Metric::BytesPerTask => "bytes_per_task",
            Metric::CpuMs => "cpu_ms",
            Metric::MaxOverMin => "max_over_min",
            Metric::Rps => "rps",
            Metric::BytesPerConn => "bytes_per_conn",
            Metric::FaultsPerTask => "faults_per_task",
            Metric::NsPerOpAtMeanCrossing => "ns_per_op_at_mean_crossing",
            Metric::PercentOfCore => "percent_of_core",
        }
    }

    /// Which direction wins, as the ratio line's `better` says it.
    pub fn better(self) -> &'static str {
        match self {
            Metric::Rps => "higher",
            _ => "lower",
        }
    }
}

/// One configuration of one bench: the systems measured under it are compared with each other.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The bench's name.
    pub bench: &'static str,
    /// The configuration, the same string for fibra and the peers it is compared with.
    pub variant: &'static str,
    /// What the value means.
    pub metric: Metric,
}

/// One system's result under a [`Case`]: the median of its rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The system's name, e.g. `fibra` or `tokio`.
    pub system: &'static str,
    /// The median over the rounds.
    pub value: f64,
    /// How many rounds the median is taken over.
    pub runs: usize,
}

/// The system the ratios are taken for.
const FIBRA: &str = "fibra";

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "median of no rounds");
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The JSON lines for `outcomes` under `case`: one per system, then the ratio line when fibra
/// and at least one peer were measured.
pub fn lines(case: &Case, outcomes: &[Outcome]) -> Vec<String> {
    let mut out: Vec<String> = outcomes
        .iter()
        .map(|o| {
            format!(
                r#"{{"bench":"{}","system":"{}","variant":"{}","metric":"{}","value":{},"runs":{}}}"#,
                case.bench,
                o.system,
                case.variant,
                case.metric.name(),
                number(o.value, value_decimals(o.value)),
                o.runs
            )
        })
        .collect();
    if let Some(fibra) = outcomes.iter().find(|o| o.system == FIBRA) {
        let mut ratios = String::new();
        for peer in outcomes.iter().filter(|o| o.system != FIBRA) {
            let sep = if ratios.is_empty() { "" } else { "," };
            let ratio = number(fibra.value / peer.value, 3);
            let _ = write!(ratios, r#"{sep}"{}":{ratio}"#, peer.system);
        }
        if !ratios.is_empty() {
            out.push(format!(
                r#"{{"bench":"{}","ratio":{{{ratios}}},"metric":"{}","better":"{}","variant":"{}"}}"#,
                case.bench,
                case.metric.name(),
                case.metric.better(),
                case.variant
            ));
        }
    }
    out
}

/// Decimals for a value: enough to keep about four significant digits on small numbers.
fn value_decimals(value: f64) -> usize {
    match value.abs() {
        v if v >= 100.0 => 1,
        v if v >= 1.0 => 2,
        _ => 3,
    }
}

/// A JSON number with `decimals` decimals, or `null` when it is not finite.
fn number(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "null".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn lines_match_the_documented_shape() {
        let case = Case {
            bench: "spawn_join",
            variant: "2w",
            metric: Metric::NsPerOp,
        };
        let outcomes = [
            Outcome {
                system: "fibra",
                value: 712.4,
                runs: 5,
            },
            Outcome {
                system: "tokio",
                value: 955.0,
                runs: 5,
            },
            Outcome {
                system: "may",
                value: 0.0,
                runs: 5,
            },
        ];
        assert_eq!(
            lines(&case, &outcomes),
            [
                r#"{"bench":"spawn_join","system":"fibra","variant":"2w","metric":"ns_per_op","value":712.4,"runs":5}"#,
                r#"{"bench":"spawn_join","system":"tokio","variant":"2w","metric":"ns_per_op","value":955.0,"runs":5}"#,
                r#"{"bench":"spawn_join","system":"may","variant":"2w","metric":"ns_per_op","value":0.000,"runs":5}"#,
                r#"{"bench":"spawn_join","ratio":{"tokio":0.746,"may":null},"metric":"ns_per_op","better":"lower","variant":"2w"}"#,
            ]
        );
    }

    #[test]
    fn requests_per_second_are_better_higher() {
        let case = Case {
            bench: "http_hello",
            variant: "100c",
            metric: Metric::Rps,
        };
        let outcome = |system, value| Outcome {
            system,
            value,
            runs: 3,
        };
        let lines = lines(&case, &[outcome("fibra", 150.0), outcome("hyper", 100.0)]);
        assert_eq!(
            lines[2],
            r#"{"bench":"http_hello","ratio":{"hyper":1.500},"metric":"rps","better":"higher","variant":"100c"}"#
        );
    }

    #[test]
    fn no_ratio_line_without_fibra_or_peers() {
        let case = Case {
            bench: "skynet",
            variant: "2w",
            metric: Metric::MsTotal,
        };
        let fibra = Outcome {
            system: "fibra",
            value: 1.0,
            runs: 1,
        };
        assert_eq!(lines(&case, std::slice::from_ref(&fibra)).len(), 1);
        let tokio = Outcome {
            system: "tokio",
            ..fibra
        };
        assert_eq!(lines(&case, &[tokio]).len(), 1);
    }
}
