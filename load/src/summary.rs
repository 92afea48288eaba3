//! The text summary printed at the end of a run.

use std::fmt::Write;
use std::time::Duration;

use crate::report::{Model, Report};

/// A latency for people: `850us`, `12.34ms`, `1.23s`.
pub(crate) fn show_duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0}us")
    } else if micros < 1e6 {
        format!("{:.2}ms", micros / 1e3)
    } else {
        format!("{:.2}s", micros / 1e6)
    }
}

/// A byte count for people: `512 B`, `1.50 KiB`, `3.20 MiB`.
pub(crate) fn show_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

impl Report {
    /// The text summary: requests, duration, RPS, latency percentiles, a latency histogram,
    /// status codes, errors by kind, bytes, steps, checks and thresholds.
    pub fn summary(&self) -> String {
        let stats = &self.stats;
        let mut out = String::new();
        let w = &mut out;
        let model = match (self.model, self.rate) {
            (Model::Closed, _) => format!("closed, {} VUs", self.vus),
            (Model::Open, Some(rate)) => format!("open, {rate} starts/s, up to {} VUs", self.vus),
            (Model::Open, None) => format!("open, staged rate, up to {} VUs", self.vus),
        };
        let _ = writeln!(w, "Summary:");
        let _ = writeln!(w, "  Target:       {}", self.target);
        let _ = writeln!(w, "  Model:        {model}");
        if !self.shards.is_empty() {
            let shards: Vec<String> = self.shards.iter().map(|s| s.to_string()).collect();
            let _ = writeln!(w, "  Shards:       {}", shards.join(", "));
        }
        let _ = writeln!(
            w,
            "  Requests:     {}{}",
            stats.requests,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        );
        let _ = writeln!(w, "  Duration:     {:.2}s", self.duration_s);
        let _ = writeln!(w, "  Requests/sec: {:.1}", self.rps);
        let _ = writeln!(
            w,
            "  Success:      {:.2}% ({} failed)",
            100.0 * (1.0 - self.error_rate),
            stats.failed()
        );
        let per_second = |b: u64| show_bytes(b as f64 / self.duration_s.max(1e-9));
        let _ = writeln!(
            w,
            "  Bytes in:     {} ({}/s)",
            show_bytes(stats.bytes_in as f64),
            per_second(stats.bytes_in)
        );
        let _ = writeln!(
            w,
            "  Bytes out:    {} ({}/s)",
            show_bytes(stats.bytes_out as f64),
            per_second(stats.bytes_out)
        );
        let _ = writeln!(w, "  Connections:  {}", stats.connections);
        let _ = writeln!(w, "  VUs (max):    {}", self.vus_max);
        if self.model == Model::Open {
            let _ = writeln!(
                w,
                "  Late starts:  {} (not started on time)",
                self.late_starts
            );
            let _ = writeln!(
                w,
                "  Missed:       {} (due, never started: every VU busy at the end)",
                self.missed_starts
            );
        }
        let latency = &stats.latency;
        let _ = writeln!(w, "\nLatency:");
        for (name, value) in [
            ("mean", latency.mean()),
            ("p50", latency.quantile(0.5)),
            ("p90", latency.quantile(0.9)),
            ("p95", latency.quantile(0.95)),
            ("p99", latency.quantile(0.99)),
            ("p99.9", latency.quantile(0.999)),
            ("max", latency.max()),
        ] {
            let _ = writeln!(w, "  {name:<6} {}", show_duration(value));
        }
        let buckets = latency.buckets(10);
        if let Some(most) = buckets.iter().map(|b| b.1).max() {
            let _ = writeln!(w, "\nLatency histogram:");
            for (upper, count) in &buckets {
                let bar = "■".repeat(((count * 40).div_ceil(most.max(1))) as usize);
                let _ = writeln!(w, "  {:>9} [{count:>8}] |{bar}", show_duration(*upper));
            }
        }
        if !stats.status.is_empty() {
            let _ = writeln!(w, "\nStatus codes:");
            for (status, n) in &stats.status {
                let _ = writeln!(w, "  [{status}] {n} responses");
            }
        }
        if !stats.errors.is_empty() {
            let _ = writeln!(w, "\nErrors:");
            for (kind, n) in &stats.errors {
                let _ = writeln!(w, "  {:<13} {n}", kind.name());
            }
        }
        // Without HTTP requests (raw TCP steps) the steps are the only measurements.
        if stats.steps.len() > 1 || stats.steps.iter().any(|s| s.errors > 0) || stats.requests == 0
        {
            let _ = writeln!(w, "\nSteps:");
            for step in &stats.steps {
                let _ = writeln!(
                    w,
                    "  {:<20} {:>8} runs {:>6} errors  p50 {:>9}  p99 {:>9}",
                    step.name,
                    step.count,
                    step.errors,
                    show_duration(step.latency.quantile(0.5)),
                    show_duration(step.latency.quantile(0.99)),
                );
            }
        }
        if !stats.checks.is_empty() {
            let _ = writeln!(w, "\nChecks:");
            for (name, check) in &stats.checks {
                let mark = if check.fail == 0 { "✓" } else { "✗" };
                let _ = writeln!(
                    w,
                    "  {mark} {name}: {} passed, {} failed",
                    check.pass, check.fail
                );
            }
        }
        if !self.thresholds.is_empty() {
            let _ = writeln!(w, "\nThresholds:");
            for t in &self.thresholds {
                let mark = if t.passed { "✓" } else { "✗" };
                let actual = t
                    .show_actual()
                    .map_or("not measured".into(), |a| format!("actual {a}"));
                let _ = writeln!(w, "  {mark} {:<16} ({actual})", t.threshold);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_bytes_read_well() {
        assert_eq!(show_duration(Duration::from_micros(850)), "850us");
        assert_eq!(show_duration(Duration::from_micros(12_345)), "12.35ms");
        assert_eq!(show_duration(Duration::from_millis(1234)), "1.23s");
        assert_eq!(show_bytes(512.0), "512 B");
        assert_eq!(show_bytes(1536.0), "1.50 KiB");
        assert_eq!(show_bytes(3.0 * 1024.0 * 1024.0), "3.00 MiB");
    }
}
