//! The report of a run: what was configured, what was measured, and how reports merge.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::parse::Shard;
use crate::stats::Stats;
use crate::threshold::{Threshold, ThresholdResult};

/// The load model of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Each VU starts its next iteration when the previous one completes.
    Closed,
    /// Iterations start on a fixed schedule; latency from the intended start.
    Open,
}

/// The report of a run (or of merged shard runs).
///
/// It serializes to the `--json` format: the configuration, the summary numbers, every
/// histogram in HdrHistogram's V2 compressed format and the per-second series, so reports of
/// shards [`merge`](Report::merge) exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What was loaded (the URL, or the scenario's name).
    pub target: String,
    /// Closed or open model.
    pub model: Model,
    /// VUs configured (closed) or the pool's limit (open); summed over merged shards.
    pub vus: u64,
    /// The most VUs that were active at once; summed over merged shards.
    pub vus_max: u64,
    /// The configured start rate per second of the open model (without stages).
    pub rate: Option<f64>,
    /// The shards this report covers (empty when the run was not sharded).
    #[serde(default)]
    pub shards: Vec<Shard>,
    /// How long the run took, in seconds (the longest shard's, after a merge).
    pub duration_s: f64,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Open model: starts handed to a VU more than 10 ms after their scheduled time.
    pub late_starts: u64,
    /// Open model: starts due before the end of the run that never began, every VU being busy
    /// until the end. Each is in the latency histogram with the time from its intended start to
    /// the end of the run, the least it would have waited.
    #[serde(default)]
    pub missed_starts: u64,
    /// Requests per second over the run.
    pub rps: f64,
    /// Failed requests (no response, or status >= 400) over all requests.
    pub error_rate: f64,
    /// Every measurement.
    pub stats: Stats,
    /// The thresholds checked, if any.
    #[serde(default)]
    pub thresholds: Vec<ThresholdResult>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        target: String,
        model: Model,
        vus: u64,
        rate: Option<f64>,
        vus_max: u64,
        late_starts: u64,
        missed_starts: u64,
        duration: Duration,
        interrupted: bool,
        stats: Stats,
    ) -> Report {
        let mut report = Report {
            target,
            model,
            vus,
            vus_max,
            rate,
            shards: Vec::new(),
            duration_s: duration.as_secs_f64(),
            interrupted,
            late_starts,
            missed_starts,
            rps: 0.0,
            error_rate: 0.0,
            stats,
            thresholds: Vec::new(),
        };
        report.derive();
        report
    }

    fn derive(&mut self) {
        self.rps = if self.duration_s > 0.0 {
            self.stats.requests as f64 / self.duration_s
        } else {
            0.0
        };
        self.error_rate = if self.stats.requests > 0 {
            self.stats.failed() as f64 / self.stats.requests as f64
        } else {
            0.0
        };
    }

    /// Requests per second over the run.
    pub fn rps(&self) -> f64 {
        self.rps
    }

    /// Failed requests over all requests (0.0 when there were none).
    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// The run's length.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration_s)
    }

    /// Checks `thresholds`, keeps the results in the report, and says whether all passed.
    pub fn check(&mut self, thresholds: &[Threshold]) -> bool {
        self.thresholds = thresholds.iter().map(|t| t.check(self)).collect();
        self.thresholds.iter().all(|t| t.passed)
    }

    /// Whether at least one request got a response below 400.
    pub fn any_succeeded(&self) -> bool {
        self.stats.requests > self.stats.failed()
    }

    /// Merges shard reports into one: counters and histograms add exactly, VUs and rates add,
    /// the duration is the longest shard's; thresholds are dropped (check them again). The
    /// shards may be a part of the set ([`Report::missing_shards`] says which are not there).
    ///
    /// # Errors
    ///
    /// When `reports` is empty, mixes targets or models, holds a shard twice, mixes shards of
    /// different counts, or mixes shard reports with reports of runs that were not sharded:
    /// each would count some of the load twice or not at all.
    pub fn merge(reports: &[Report]) -> Result<Report, String> {
        let (first, rest) = reports.split_first().ok_or("no reports to merge")?;
        let mut shards: Vec<Shard> = reports.iter().flat_map(|r| r.shards.clone()).collect();
        shards.sort_by_key(|s| s.index);
        if let Some(&one) = shards.first() {
            if reports.iter().any(|r| r.shards.is_empty()) {
                return Err(
                    "cannot merge the report of a run without --shard with shard reports".into(),
                );
            }
            if let Some(other) = shards.iter().find(|s| s.count != one.count) {
                return Err(format!(
                    "cannot merge shard {other} with shard {one}: they divide the load differently"
                ));
            }
            if let Some(pair) = shards.windows(2).find(|w| w[0].index == w[1].index) {
                return Err(format!("shard {} is given twice", pair[0]));
            }
        }
        let mut merged = first.clone();
        merged.thresholds.clear();
        merged.shards = shards;
        for report in rest {
            if report.target != merged.target || report.model != merged.model {
                return Err(format!(
                    "cannot merge a {:?} run of {} into a {:?} run of {}",
                    report.model, report.target, merged.model, merged.target
                ));
            }
            merged.vus += report.vus;
            merged.vus_max += report.vus_max;
            merged.rate = merged.rate.zip(report.rate).map(|(a, b)| a + b);
            merged.duration_s = merged.duration_s.max(report.duration_s);
            merged.interrupted |= report.interrupted;
            merged.late_starts += report.late_starts;
            merged.missed_starts += report.missed_starts;
            merged.stats.merge(&report.stats);
        }
        merged.derive();
        Ok(merged)
    }

    /// The shards of the set this report covers part of that it does not cover (none when
    /// the run was not sharded).
    ///
    /// ```
    /// use fibra_load::{Load, Scenario, Shard};
    ///
    /// let scenario = Scenario::new("idle").step("idle", |_| Ok(()));
    /// let mut report = Load::new(scenario).iterations(1).run();
    /// assert!(report.missing_shards().is_empty());
    /// report.shards = vec!["1/3".parse().unwrap()];
    /// let missing: Vec<Shard> = ["0/3", "2/3"].iter().map(|s| s.parse().unwrap()).collect();
    /// assert_eq!(report.missing_shards(), missing);
    /// ```
    pub fn missing_shards(&self) -> Vec<Shard> {
        let count = self.shards.first().map_or(0, |s| s.count);
        (0..count)
            .filter(|&index| !self.shards.iter().any(|s| s.index == index))
            .map(|index| Shard { index, count })
            .collect()
    }

    /// The report as pretty-printed JSON (the `--json` format).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// Reads a report written by [`Report::to_json`].
    ///
    /// # Errors
    ///
    /// When `json` is not such a report.
    pub fn from_json(json: &str) -> Result<Report, String> {
        serde_json::from_str(json).map_err(|e| format!("not a fibra-load report: {e}"))
    }
}
