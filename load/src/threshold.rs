//! k6-style pass/fail criteria: `p99<50ms`, `errors<1%`, `rps>1000`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::parse::{parse_duration, ParseError};
use crate::report::Report;
use crate::stats::Latency;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    /// A latency quantile (`max` is 1.0), in milliseconds.
    Quantile(f64),
    Mean,
    /// Failed requests, in percent of all requests.
    Errors,
    Rps,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

/// One criterion a run must meet: `p50|p90|p95|p99|p99.9|max|mean < DURATION`, `errors < N%`,
/// `rps > N` (also `<=`, `>=`, and either direction for any metric).
///
/// A threshold measures the run's HTTP requests: their latency, the share that failed, and
/// how many were made per second. A run that made no HTTP request (a scenario of raw TCP
/// steps) is measured by its step runs instead — the latency of each step run, the share of
/// step runs that returned an error, step runs per second — so that `p99<1s` or `errors<1%`
/// is not met by measuring nothing. Nor is it met when what it measures is empty: a latency
/// threshold when no request got a response (every one timed out, say), any threshold when
/// nothing ran at all. Its result then has no value and the summary says "not measured".
///
/// ```
/// let threshold: fibra_load::Threshold = "p99 < 50ms".parse().unwrap();
/// assert_eq!(threshold.to_string(), "p99<50ms");
/// assert!("p42<1s".parse::<fibra_load::Threshold>().is_err());
/// assert!("errors<1".parse::<fibra_load::Threshold>().is_err()); // needs a `%`
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    text: String,
    metric: Metric,
    op: Op,
    limit: f64,
}

/// The outcome of one [`Threshold`] on one report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// The threshold as written (without spaces).
    pub threshold: String,
    /// The measured value, in the threshold's unit (ms, % or requests per second); `None`
    /// when there was nothing to measure, and the threshold failed.
    pub actual: Option<f64>,
    /// The unit of `actual`.
    pub unit: String,
    /// Whether the run met it.
    pub passed: bool,
}

impl FromStr for Threshold {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Threshold, ParseError> {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let bad = |why: &str| ParseError(format!("invalid threshold `{text}`: {why}"));
        let at = compact
            .find(['<', '>'])
            .ok_or_else(|| bad("expected METRIC<VALUE or METRIC>VALUE"))?;
        let (name, rest) = compact.split_at(at);
        let (op, value) = match rest.as_bytes() {
            [b'<', b'=', ..] => (Op::LessEqual, &rest[2..]),
            [b'>', b'=', ..] => (Op::GreaterEqual, &rest[2..]),
            [b'<', ..] => (Op::Less, &rest[1..]),
            _ => (Op::Greater, &rest[1..]),
        };
        let metric = match name {
            "p50" => Metric::Quantile(0.5),
            "p90" => Metric::Quantile(0.9),
            "p95" => Metric::Quantile(0.95),
            "p99" => Metric::Quantile(0.99),
            "p99.9" => Metric::Quantile(0.999),
            "max" => Metric::Quantile(1.0),
            "mean" => Metric::Mean,
            "errors" => Metric::Errors,
            "rps" => Metric::Rps,
            _ => {
                return Err(bad(
                    "the metric is one of p50, p90, p95, p99, p99.9, max, mean, errors, rps",
                ))
            }
        };
        let limit = match metric {
            Metric::Quantile(_) | Metric::Mean => {
                parse_duration(value)
                    .map_err(|_| bad("expected a duration such as 50ms"))?
                    .as_secs_f64()
                    * 1e3
            }
            Metric::Errors => value
                .strip_suffix('%')
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad("expected a percentage such as 1%"))?,
            Metric::Rps => value
                .parse()
                .map_err(|_| bad("expected a number of requests per second"))?,
        };
        if !f64::is_finite(limit) || limit < 0.0 {
            return Err(bad("the limit must be a non-negative number"));
        }
        Ok(Threshold {
            text: compact,
            metric,
            op,
            limit,
        })
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Threshold {
    /// Checks the threshold against `report`.
    pub fn check(&self, report: &Report) -> ThresholdResult {
        let measured = Measured::of(report);
        let latency = &measured.latency;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        // An empty histogram's quantiles read as zero, which would meet any `<` limit.
        let timed = latency.count() > 0;
        let counted = measured.count > 0;
        let (actual, unit) = match self.metric {
            Metric::Quantile(q) => (timed.then(|| ms(latency.quantile(q))), "ms"),
            Metric::Mean => (timed.then(|| ms(latency.mean())), "ms"),
            Metric::Errors => (counted.then_some(measured.error_percent), "%"),
            Metric::Rps => (counted.then_some(measured.per_second), measured.rate_unit),
        };
        let passed = actual.is_some_and(|actual| match self.op {
            Op::Less => actual < self.limit,
            Op::LessEqual => actual <= self.limit,
            Op::Greater => actual > self.limit,
            Op::GreaterEqual => actual >= self.limit,
        });
        ThresholdResult {
            threshold: self.text.clone(),
            actual,
            unit: unit.to_string(),
            passed,
        }
    }
}

impl ThresholdResult {
    /// `12.50ms`, or `None` when nothing was measured.
    pub(crate) fn show_actual(&self) -> Option<String> {
        self.actual
            .map(|actual| format!("{actual:.2}{}", self.unit))
    }
}

/// What a threshold is checked against (see [`Threshold`]): the HTTP requests, or the step
/// runs of a run that made none.
struct Measured<'a> {
    /// The requests, or step runs, measured.
    count: u64,
    latency: Cow<'a, Latency>,
    error_percent: f64,
    per_second: f64,
    rate_unit: &'static str,
}

impl Measured<'_> {
    fn of(report: &Report) -> Measured<'_> {
        let stats = &report.stats;
        let runs: u64 = stats.steps.iter().map(|step| step.count).sum();
        if stats.requests > 0 || runs == 0 {
            return Measured {
                count: stats.requests,
                latency: Cow::Borrowed(&stats.latency),
                error_percent: report.error_rate() * 100.0,
                per_second: report.rps(),
                rate_unit: "req/s",
            };
        }
        let mut latency = Latency::new();
        for step in &stats.steps {
            latency.merge(&step.latency);
        }
        let failed: u64 = stats.steps.iter().map(|step| step.errors).sum();
        Measured {
            count: runs,
            latency: Cow::Owned(latency),
            error_percent: 100.0 * failed as f64 / runs as f64,
            per_second: if report.duration_s > 0.0 {
                runs as f64 / report.duration_s
            } else {
                0.0
            },
            rate_unit: "steps/s",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_every_metric_and_reject_the_rest() {
        for (text, metric, op, limit) in [
            ("p50<1s", Metric::Quantile(0.5), Op::Less, 1000.0),
            (
                "p99.9 <= 250ms",
                Metric::Quantile(0.999),
                Op::LessEqual,
                250.0,
            ),
            ("max<2s", Metric::Quantile(1.0), Op::Less, 2000.0),
            ("mean<500us", Metric::Mean, Op::Less, 0.5),
            ("errors<1.5%", Metric::Errors, Op::Less, 1.5),
            ("rps>1000", Metric::Rps, Op::Greater, 1000.0),
            ("rps>=10.5", Metric::Rps, Op::GreaterEqual, 10.5),
        ] {
            let t: Threshold = text.parse().unwrap();
            assert_eq!((t.metric, t.op, t.limit), (metric, op, limit), "{text}");
        }
        for bad in [
            "",
            "p99",
            "p99<",
            "p99<fast",
            "p98<1s",
            "errors<x%",
            "rps>many",
            "<1s",
            "p99=1s",
        ] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad} parsed");
        }
    }
}
