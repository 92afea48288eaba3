//! The monitor: samples a run for the live display and the per-second VU counts.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fibra::chan;

use crate::run::Shared;

/// How often the monitor samples the run.
const TICK: Duration = Duration::from_millis(250);

/// The run so far, as the live display sees it (about every quarter second).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Time since the start.
    pub elapsed: Duration,
    /// The planned length of the run, when it has one.
    pub planned: Option<Duration>,
    /// Requests done so far.
    pub requests: u64,
    /// How many of them failed.
    pub failed: u64,
    /// Requests per second over the last sample.
    pub rps: f64,
    /// Median latency so far.
    pub p50: Duration,
    /// 99th percentile latency so far.
    pub p99: Duration,
    /// VUs active now.
    pub vus: u64,
}

pub(crate) type ProgressFn = Box<dyn FnMut(&Progress) + Send>;

/// Samples the run for the live display and the per-second VU counts.
pub(crate) struct Monitor {
    pub shared: Arc<Shared>,
    pub planned: Option<Duration>,
    pub progress: Option<ProgressFn>,
}

impl Monitor {
    pub(crate) fn run(mut self, done: chan::Reader<()>) {
        let origin = self.shared.recorder.origin();
        let (mut last_requests, mut last_at) = (0, Duration::ZERO);
        loop {
            let finished = !matches!(done.recv_timeout(TICK), Err(e) if e.is_timeout());
            let elapsed = origin.elapsed();
            let vus = self.shared.active.load(Ordering::Relaxed);
            let progress = self.shared.recorder.total(|s| {
                let second = s.second(elapsed.as_secs() as usize);
                second.vus = second.vus.max(vus);
                Progress {
                    elapsed,
                    planned: self.planned,
                    requests: s.requests,
                    failed: s.failed(),
                    rps: (s.requests - last_requests) as f64
                        / (elapsed - last_at).as_secs_f64().max(1e-3),
                    p50: s.latency.quantile(0.5),
                    p99: s.latency.quantile(0.99),
                    vus,
                }
            });
            (last_requests, last_at) = (progress.requests, elapsed);
            if finished {
                return;
            }
            if let Some(f) = &mut self.progress {
                f(&progress);
            }
        }
    }
}
