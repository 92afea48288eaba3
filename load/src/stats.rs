//! What a run measures: HDR latency histograms, counters by status and error kind, a
//! per-second series, per-step and per-check counts. Everything merges exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::http::ErrorKind;

/// A latency histogram in microseconds (HdrHistogram, auto-resizing, so nothing is clipped).
///
/// It serializes as its summary numbers in milliseconds plus `hdr`, the histogram in
/// HdrHistogram's V2 compressed format, base64-encoded; only `hdr` is read back, so merging
/// reports is exact.
///
/// ```
/// use std::time::Duration;
/// let mut a = fibra_load::Latency::new();
/// a.record(Duration::from_millis(1));
/// let mut b = fibra_load::Latency::new();
/// b.record(Duration::from_millis(3));
/// a.merge(&b);
/// assert_eq!(a.count(), 2);
/// assert_eq!(a.max(), b.max());
/// ```
#[derive(Clone, PartialEq)]
pub struct Latency(Histogram<u64>);

impl Latency {
    /// An empty histogram with three significant digits.
    pub fn new() -> Latency {
        Latency::with_precision(3)
    }

    fn with_precision(digits: u8) -> Latency {
        let mut histogram = Histogram::new(digits).expect("1-5 significant digits");
        histogram.auto(true);
        Latency(histogram)
    }

    /// Records one latency.
    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        // `record` grows the auto-resizing histogram; `saturating_record` would clip instead.
        if self.0.record(micros).is_err() {
            self.0.saturating_record(micros);
        }
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Latency) {
        self.0
            .add(&other.0)
            .expect("auto-resizing histograms always add");
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The value at `quantile` (0.0..=1.0); zero when empty.
    pub fn quantile(&self, quantile: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_micros(self.0.value_at_quantile(quantile))
    }

    /// The largest value (to the histogram's precision); zero when empty.
    pub fn max(&self) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_micros(self.0.max())
    }

    /// The smallest value; zero when empty.
    pub fn min(&self) -> Duration {
        Duration::from_micros(self.0.min())
    }

    /// The mean; zero when empty.
    pub fn mean(&self) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(self.0.mean() / 1e6)
    }

    /// `(upper bound, count)` for `buckets` equal-width buckets between min and max.
    pub fn buckets(&self, buckets: usize) -> Vec<(Duration, u64)> {
        if self.0.is_empty() || buckets == 0 {
            return Vec::new();
        }
        let (low, high) = (self.0.min() as f64, self.0.max() as f64);
        let width = ((high - low) / buckets as f64).max(1.0);
        let mut out: Vec<(Duration, u64)> = (1..=buckets)
            .map(|i| (Duration::from_micros((low + width * i as f64) as u64), 0))
            .collect();
        for value in self.0.iter_recorded() {
            let v = self.0.highest_equivalent(value.value_iterated_to()) as f64;
            let at = (((v - low) / width).ceil() as usize).clamp(1, buckets) - 1;
            out[at].1 += value.count_at_value();
        }
        out
    }

    /// The histogram in V2 compressed format, base64-encoded.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .expect("serializing into memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads what [`Latency::to_base64`] wrote.
    pub fn from_base64(text: &str) -> Result<Latency, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        let mut histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))?;
        histogram.auto(true);
        Ok(Latency(histogram))
    }
}

impl Default for Latency {
    fn default() -> Latency {
        Latency::new()
    }
}

impl fmt::Debug for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latency")
            .field("count", &self.count())
            .field("p50", &self.quantile(0.5))
            .field("max", &self.max())
            .finish()
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[derive(Serialize, Deserialize)]
struct LatencyJson {
    #[serde(default)]
    count: u64,
    #[serde(default)]
    mean_ms: f64,
    #[serde(default)]
    min_ms: f64,
    #[serde(default)]
    p50_ms: f64,
    #[serde(default)]
    p90_ms: f64,
    #[serde(default)]
    p95_ms: f64,
    #[serde(default)]
    p99_ms: f64,
    #[serde(default, rename = "p99.9_ms")]
    p999_ms: f64,
    #[serde(default)]
    max_ms: f64,
    hdr: String,
}

impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LatencyJson {
            count: self.count(),
            mean_ms: ms(self.mean()),
            min_ms: ms(self.min()),
            p50_ms: ms(self.quantile(0.5)),
            p90_ms: ms(self.quantile(0.9)),
            p95_ms: ms(self.quantile(0.95)),
            p99_ms: ms(self.quantile(0.99)),
            p999_ms: ms(self.quantile(0.999)),
            max_ms: ms(self.max()),
            hdr: self.to_base64(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Latency, D::Error> {
        let json = LatencyJson::deserialize(d)?;
        Latency::from_base64(&json.hdr).map_err(serde::de::Error::custom)
    }
}

/// Passes and failures of one named check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCount {
    /// Times the check held.
    pub pass: u64,
    /// Times it did not.
    pub fail: u64,
}

/// The measurements of one named step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// The step's name.
    pub name: String,
    /// Runs of the step.
    pub count: u64,
    /// Runs that returned an error.
    pub errors: u64,
    /// How long the step took (from the intended start for the first step in the open model).
    pub latency: Latency,
}

/// One second of the run, counted by completion time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Iterations started in this second.
    #[serde(default)]
    pub starts: u64,
    /// Requests completed in this second (with or without a response).
    pub requests: u64,
    /// Requests that failed in this second.
    pub errors: u64,
    /// The most VUs active in this second.
    #[serde(default)]
    pub vus: u64,
    /// Latencies of the responses in this second (two significant digits).
    pub latency: Latency,
}

impl Second {
    fn new() -> Second {
        Second {
            latency: Latency::with_precision(2),
            ..Second::default()
        }
    }

    fn merge(&mut self, other: &Second) {
        self.starts += other.starts;
        self.requests += other.requests;
        self.errors += other.errors;
        self.vus = self.vus.max(other.vus);
        self.latency.merge(&other.latency);
    }
}

/// Everything counted; many [`Stats`] merge into one with [`Stats::merge`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests completed or failed.
    pub requests: u64,
    /// Scenario iterations completed.
    pub iterations: u64,
    /// Connections opened.
    pub connections: u64,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    /// Requests without a response, by kind.
    pub errors: BTreeMap<ErrorKind, u64>,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Response latencies; in the open model also, for each start missed at the end of the
    /// run, the time from its intended start to the end (see [`Report::missed_starts`](crate::Report::missed_starts)).
    pub latency: Latency,
    /// Per-step measurements, in scenario order.
    pub steps: Vec<StepStats>,
    /// Checks by name.
    pub checks: BTreeMap<String, CheckCount>,
    /// The run second by second.
    pub series: Vec<Second>,
}

impl Stats {
    /// Requests that failed: no response, or a status of 400 or more.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum::<u64>() + self.status.range(400..).map(|(_, n)| n).sum::<u64>()
    }

    /// Adds everything in `other`.
    pub fn merge(&mut self, other: &Stats) {
        self.requests += other.requests;
        self.iterations += other.iterations;
        self.connections += other.connections;
        add_counts(&mut self.status, &other.status);
        add_counts(&mut self.errors, &other.errors);
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.latency.merge(&other.latency);
        for (i, step) in other.steps.iter().enumerate() {
            let mine = self.step(i);
            if mine.name.is_empty() {
                mine.name.clone_from(&step.name);
            }
            mine.count += step.count;
            mine.errors += step.errors;
            mine.latency.merge(&step.latency);
        }
        for (name, check) in &other.checks {
            let mine = self.checks.entry(name.clone()).or_default();
            mine.pass += check.pass;
            mine.fail += check.fail;
        }
        for (i, second) in other.series.iter().enumerate() {
            self.second(i).merge(second);
        }
    }

    pub(crate) fn step(&mut self, index: usize) -> &mut StepStats {
        if self.steps.len() <= index {
            self.steps.resize_with(index + 1, StepStats::default);
        }
        &mut self.steps[index]
    }

    pub(crate) fn second(&mut self, index: usize) -> &mut Second {
        if self.series.len() <= index {
            self.series.resize_with(index + 1, Second::new);
        }
        &mut self.series[index]
    }

    /// Counts a response that completed `at` after the start of the run.
    pub(crate) fn response(&mut self, at: Duration, latency: Duration, status: u16) {
        self.requests += 1;
        *self.status.entry(status).or_default() += 1;
        self.latency.record(latency);
        let second = self.second(at.as_secs() as usize);
        second.requests += 1;
        second.errors += u64::from(status >= 400);
        second.latency.record(latency);
    }

    /// Counts a request that failed `at` after the start of the run.
    pub(crate) fn error(&mut self, at: Duration, kind: ErrorKind) {
        self.requests += 1;
        *self.errors.entry(kind).or_default() += 1;
        let second = self.second(at.as_secs() as usize);
        second.requests += 1;
        second.errors += 1;
    }

    pub(crate) fn check(&mut self, name: &str, ok: bool) {
        let count = match self.checks.get_mut(name) {
            Some(count) => count,
            None => self.checks.entry(name.to_string()).or_default(),
        };
        if ok {
            count.pass += 1;
        } else {
            count.fail += 1;
        }
    }
}

fn add_counts<K: Ord + Clone>(into: &mut BTreeMap<K, u64>, from: &BTreeMap<K, u64>) {
    for (key, n) in from {
        *into.entry(key.clone()).or_default() += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(seed: u64, n: usize) -> Vec<Duration> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Duration::from_micros(50 + x % 200_000)
            })
            .collect()
    }

    #[test]
    fn merged_serialized_histograms_equal_one_fed_both_sets() {
        let (a, b) = (values(1, 5000), values(2, 7000));
        let mut one = Latency::new();
        a.iter().chain(&b).for_each(|v| one.record(*v));
        let mut left = Latency::new();
        a.iter().for_each(|v| left.record(*v));
        let mut right = Latency::new();
        b.iter().for_each(|v| right.record(*v));
        let mut merged = Latency::from_base64(&left.to_base64()).unwrap();
        merged.merge(&Latency::from_base64(&right.to_base64()).unwrap());
        assert_eq!(merged.count(), 12_000);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(merged.quantile(q), one.quantile(q));
        }
        assert_eq!(merged.max(), one.max());
        assert_eq!(merged.mean(), one.mean());
        assert!(merged == one, "every count agrees");
    }

    #[test]
    fn json_keeps_the_histogram_exactly() {
        let mut latency = Latency::new();
        values(3, 1000).iter().for_each(|v| latency.record(*v));
        let json = serde_json::to_value(&latency).unwrap();
        assert_eq!(json["count"], 1000);
        assert!(json["p99_ms"].as_f64().unwrap() > 0.0);
        let back: Latency = serde_json::from_value(json).unwrap();
        assert!(back == latency);
        assert!(Latency::from_base64("not base64!").is_err());
        assert!(Latency::from_base64("AAAA").is_err());
    }

    #[test]
    fn a_late_large_value_is_kept_not_clipped() {
        let mut latency = Latency::new();
        latency.record(Duration::from_micros(20));
        latency.record(Duration::from_secs(3));
        assert!(
            latency.max() >= Duration::from_millis(2990),
            "{:?}",
            latency.max()
        );
    }

    #[test]
    fn buckets_cover_every_value() {
        let mut latency = Latency::new();
        values(4, 999).iter().for_each(|v| latency.record(*v));
        let buckets = latency.buckets(10);
        assert_eq!(buckets.len(), 10);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 999);
        assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(Latency::new().buckets(10).is_empty());
    }

    #[test]
    fn stats_count_failures_and_merge_every_part() {
        let mut a = Stats::default();
        a.response(Duration::from_millis(10), Duration::from_millis(2), 200);
        a.response(Duration::from_millis(1500), Duration::from_millis(2), 503);
        a.error(Duration::from_millis(2500), ErrorKind::Timeout);
        a.check("ok", true);
        a.step(1).count += 1;
        let mut b = a.clone();
        b.check("ok", false);
        b.merge(&a);
        assert_eq!(b.requests, 6);
        assert_eq!(b.failed(), 4);
        assert_eq!(b.status[&200], 2);
        assert_eq!(b.errors[&ErrorKind::Timeout], 2);
        assert_eq!(b.checks["ok"], CheckCount { pass: 2, fail: 1 });
        assert_eq!(b.steps[1].count, 2);
        let per_second: Vec<(u64, u64)> = b.series.iter().map(|s| (s.requests, s.errors)).collect();
        assert_eq!(per_second, [(2, 0), (2, 2), (2, 2)]);
        let json = serde_json::to_string(&b).unwrap();
        let back: Stats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, b);
    }
}
