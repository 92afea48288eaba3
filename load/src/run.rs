//! Running a load: the builder, what the VUs of a run share, and one iteration of a scenario.
//! The models themselves are in `closed` and `open`, the live sampling in `monitor`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::chan;
use fibra::CancelToken;

use crate::closed::closed_vu;
use crate::connect::BoxConnect;
use crate::monitor::{Monitor, Progress, ProgressFn};
use crate::open::{dispatch, Schedule};
use crate::parse::Stages;
use crate::record::Recorder;
use crate::report::{Model, Report};
use crate::scenario::{Scenario, StepFn};
use crate::vu::Vu;

/// The longest a waiting VU or the dispatcher sleeps before looking at the stop token again.
const POLL: Duration = Duration::from_millis(50);

/// Makes a fresh connector for each VU.
pub(crate) type ConnectorFactory = Arc<dyn Fn() -> BoxConnect + Send + Sync>;

/// A load to run: a scenario, how many VUs, for how long or how many iterations, closed or
/// open model.
///
/// The closed model (the default) runs `vus` VUs that each start their next iteration when
/// the previous one completes. With [`Load::rate`] it is the open model: iterations start on a
/// fixed schedule whatever the completions, drawn from a pool of at most `vus` VUs, and the
/// first request of each iteration is timed from its intended start, so a stalled server shows
/// in the percentiles (coordinated omission corrected as wrk2 does). Starts that could not be
/// handed to a VU on time (every VU busy, or the generator behind) are counted as late; starts
/// still waiting for a busy VU when the run ends are counted as missed, and each enters the
/// latency histogram with the time from its intended start to the end of the run.
///
/// ```
/// use std::time::Duration;
/// use fibra_load::{Load, Model, Scenario};
///
/// fibra::run(|| {
///     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
///     let url = format!("http://{}/", server.local_addr());
///     let scenario = Scenario::new("hello").step("get", move |vu| {
///         vu.get(&url)?;
///         Ok(())
///     });
///     // The open model: 500 starts per second, 25 in all, from at most 5 VUs.
///     let report = Load::new(scenario).vus(5).rate(500.0).iterations(25).run();
///     assert_eq!(report.model, Model::Open);
///     assert_eq!(report.stats.requests, 25);
/// });
/// ```
pub struct Load {
    scenario: Scenario,
    /// `None`: 1, or in the closed model with stages, as many as the stages reach.
    vus: Option<u64>,
    duration: Option<Duration>,
    iterations: Option<u64>,
    rate: Option<f64>,
    stages: Option<Stages>,
    timeout: Duration,
    keep_alive: bool,
    workers: Option<usize>,
    stop: CancelToken,
    progress: Option<ProgressFn>,
    connector: ConnectorFactory,
    target: String,
}

impl std::fmt::Debug for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Load")
            .field("vus", &self.vus)
            .finish_non_exhaustive()
    }
}

impl Load {
    /// A load of `scenario` with 1 VU for 10 s in the closed model, a 5 s request timeout and
    /// keep-alive connections. With [`Load::stages`] in the closed model the default VU count
    /// is the stages' ([`Stages::vus`]).
    pub fn new(scenario: Scenario) -> Load {
        Load {
            target: scenario.name().to_string(),
            scenario,
            vus: None,
            duration: None,
            iterations: None,
            rate: None,
            stages: None,
            timeout: Duration::from_secs(5),
            keep_alive: true,
            workers: None,
            stop: CancelToken::new(),
            progress: None,
            connector: crate::net::connector(None),
        }
    }

    /// The number of VUs (closed model), or the most the pool may grow to (open model).
    ///
    /// # Panics
    ///
    /// When `vus` is 0.
    pub fn vus(mut self, vus: u64) -> Load {
        assert!(vus > 0, "Load::vus: at least one VU is needed");
        self.vus = Some(vus);
        self
    }

    /// Stops starting iterations after `duration`.
    pub fn duration(mut self, duration: Duration) -> Load {
        self.duration = Some(duration);
        self
    }

    /// Runs exactly `iterations` iterations over all VUs (with a duration: at most).
    pub fn iterations(mut self, iterations: u64) -> Load {
        self.iterations = Some(iterations);
        self
    }

    /// The open model: `per_second` iteration starts per second.
    ///
    /// # Panics
    ///
    /// When `per_second` is not a positive finite number.
    pub fn rate(mut self, per_second: f64) -> Load {
        assert!(
            per_second.is_finite() && per_second > 0.0,
            "Load::rate: the rate must be positive, not {per_second}"
        );
        self.rate = Some(per_second);
        self
    }

    /// Ramps the VU count (closed model) or the rate (open model, with [`Load::rate`] set to
    /// any value) through `stages`; the run lasts as long as the stages. The closed model runs
    /// [`Stages::vus`] VUs unless [`Load::vus`] says more.
    pub fn stages(mut self, stages: Stages) -> Load {
        self.stages = Some(stages);
        self
    }

    /// Bounds every request (name lookup, connect, send and receive together).
    ///
    /// # Panics
    ///
    /// When `timeout` is zero.
    pub fn timeout(mut self, timeout: Duration) -> Load {
        assert!(
            !timeout.is_zero(),
            "Load::timeout: the timeout must not be zero"
        );
        self.timeout = timeout;
        self
    }

    /// Keeps connections open between requests (the default) or closes each after one.
    pub fn keep_alive(mut self, keep_alive: bool) -> Load {
        self.keep_alive = keep_alive;
        self
    }

    /// The worker threads of the runtime [`Load::run`] starts when called outside one.
    pub fn workers(mut self, workers: usize) -> Load {
        self.workers = Some(workers);
        self
    }

    /// Ends the run early when `token` is cancelled: no iteration starts after that, the ones
    /// in flight complete, and the report says it was interrupted.
    pub fn stop_on(mut self, token: CancelToken) -> Load {
        self.stop = token;
        self
    }

    /// Calls `f` with the run's progress about four times a second (from a fiber of the run).
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + Send + 'static) -> Load {
        self.progress = Some(Box::new(f));
        self
    }

    /// The TLS configuration for `https://` requests (default: the Mozilla roots); see
    /// [`tls_config`](crate::tls_config).
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Load {
        self.connector = crate::net::connector(Some(config));
        self
    }

    /// The name of the target in the report (default: the scenario's name).
    pub fn target(mut self, target: impl Into<String>) -> Load {
        self.target = target.into();
        self
    }

    #[cfg(test)]
    pub(crate) fn connector(mut self, connector: ConnectorFactory) -> Load {
        self.connector = connector;
        self
    }

    /// Runs the load and returns its report. Inside a fibra runtime the VUs are fibers of that
    /// runtime; elsewhere a runtime is started for the run.
    ///
    /// # Panics
    ///
    /// When the scenario has no steps, when the closed model's stages reach more VUs than
    /// [`Load::vus`] gives, when a step panics (after the other VUs were cancelled), or when
    /// no runtime can be started.
    pub fn run(self) -> Report {
        assert!(
            !self.scenario.step_names().is_empty(),
            "Load::run: the scenario `{}` has no steps",
            self.scenario.name()
        );
        let vus = self.vu_count();
        if fibra::Handle::try_current().is_some() {
            return self.run_here(vus);
        }
        let mut builder = fibra::Runtime::builder();
        if let Some(workers) = self.workers {
            builder = builder.workers(workers);
        }
        let runtime = builder
            .build()
            .unwrap_or_else(|e| panic!("fibra-load: cannot start the runtime: {e}"));
        runtime.block_on(move || self.run_here(vus))
    }

    /// How many VUs the run has (the most, in the open model).
    fn vu_count(&self) -> u64 {
        match (&self.stages, self.rate) {
            (Some(stages), None) => {
                let wanted = stages.vus();
                let vus = self.vus.unwrap_or(wanted.max(1));
                assert!(
                    vus >= wanted,
                    "Load::run: the stages reach {wanted} VUs but Load::vus gives {vus}"
                );
                vus
            }
            _ => self.vus.unwrap_or(1),
        }
    }

    fn run_here(self, vus: u64) -> Report {
        let origin = Instant::now();
        let length = match (&self.stages, self.duration, self.iterations) {
            (Some(stages), _, _) => Some(stages.total()),
            (None, Some(d), _) => Some(d),
            (None, None, Some(_)) => None,
            (None, None, None) => Some(Duration::from_secs(10)),
        };
        let open = self.rate.is_some();
        let shared = Arc::new(Shared {
            recorder: Recorder::new(origin),
            keep_alive: self.keep_alive,
            timeout: self.timeout,
            connector: self.connector,
            stop: self.stop.clone(),
            deadline: length.map(|l| origin + l),
            iterations: self.iterations,
            claimed: AtomicU64::new(0),
            active: AtomicU64::new(0),
            vus_max: AtomicU64::new(0),
            late: AtomicU64::new(0),
        });
        let scenario = &self.scenario;
        let (done_tx, done_rx) = chan::bounded::<()>(0);
        let monitor = Monitor {
            shared: shared.clone(),
            planned: length,
            progress: self.progress,
        };
        let missed = fibra::scope(|s| {
            s.spawn(move || monitor.run(done_rx));
            let missed = if open {
                let schedule = Schedule {
                    rate: self.rate.unwrap_or(1.0),
                    stages: self.stages.clone(),
                    length,
                    iterations: self.iterations,
                };
                dispatch(s, scenario, &shared, &schedule, vus, &done_tx)
            } else {
                for index in 0..vus as usize {
                    let (shared, done) = (shared.clone(), done_tx.clone());
                    let steps = scenario.instances();
                    let stages = self.stages.clone();
                    s.spawn(move || closed_vu(index, &shared, steps, stages, done));
                }
                0
            };
            drop(done_tx);
            missed
        });
        let duration = origin.elapsed();
        let shared = Arc::into_inner(shared).expect("every VU has ended");
        let mut stats = shared.recorder.into_stats();
        for (i, name) in scenario.step_names().into_iter().enumerate() {
            stats.step(i).name = name.to_string();
        }
        Report::new(
            self.target,
            if open { Model::Open } else { Model::Closed },
            vus,
            self.rate.filter(|_| self.stages.is_none()),
            shared.vus_max.into_inner(),
            shared.late.into_inner(),
            missed,
            duration,
            shared.stop.is_cancelled(),
            stats,
        )
    }
}

/// What every VU of a run shares.
pub(crate) struct Shared {
    pub recorder: Recorder,
    pub keep_alive: bool,
    pub timeout: Duration,
    connector: ConnectorFactory,
    /// Cancelled when the run is to end early.
    pub stop: CancelToken,
    deadline: Option<Instant>,
    iterations: Option<u64>,
    claimed: AtomicU64,
    /// VUs running iterations now.
    pub active: AtomicU64,
    vus_max: AtomicU64,
    /// Open model: starts handed out late.
    pub late: AtomicU64,
}

impl Shared {
    pub(crate) fn connector(&self) -> BoxConnect {
        (self.connector)()
    }

    pub(crate) fn over(&self, now: Instant) -> bool {
        self.stop.is_cancelled() || self.deadline.is_some_and(|d| now >= d)
    }

    /// How long until the run's deadline (`Duration::MAX` without one).
    pub(crate) fn left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Takes the right to run one more iteration (all of them, without an iteration count).
    pub(crate) fn claim(&self) -> bool {
        match self.iterations {
            None => true,
            Some(n) => self.claimed.fetch_add(1, Ordering::Relaxed) < n,
        }
    }

    /// Called from a VU's fiber, which flushes the recorder when it ends.
    pub(crate) fn activate(&self) {
        let now = self.active.fetch_add(1, Ordering::Relaxed) + 1;
        self.vus_max.fetch_max(now, Ordering::Relaxed);
        // The monitor samples the VU count four times a second: a shorter run, or a VU active
        // only between two samples, would not show in the series otherwise.
        let second = self.recorder.origin().elapsed().as_secs() as usize;
        self.recorder.with(|s| {
            let second = s.second(second);
            second.vus = second.vus.max(now);
        });
    }

    pub(crate) fn deactivate(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sleeps until `at`; false when `stop` was cancelled first.
pub(crate) fn wait_until(at: Instant, stop: &CancelToken) -> bool {
    loop {
        if stop.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        fibra::sleep((at - now).min(POLL));
    }
}

/// Runs one iteration of `steps` in `vu`, which the caller began at `begun` (the clock it has
/// just read); `intended` is its scheduled start in the open model.
pub(crate) fn iterate(
    vu: &mut Vu,
    steps: &mut [StepFn],
    shared: &Shared,
    intended: Option<Instant>,
    begun: Instant,
) {
    let recorder = &shared.recorder;
    recorder.with(|s| {
        s.second(begun.duration_since(recorder.origin()).as_secs() as usize)
            .starts += 1
    });
    vu.begin(intended);
    let mut start = intended.unwrap_or(begun);
    for (i, step) in steps.iter_mut().enumerate() {
        let result = step(vu);
        let end = Instant::now();
        recorder.with(|s| {
            let stats = s.step(i);
            stats.count += 1;
            stats.errors += u64::from(result.is_err());
            stats.latency.record(end.duration_since(start));
        });
        start = end;
        // A failed step ends the iteration: the steps after it usually depend on it.
        if result.is_err() {
            break;
        }
    }
    recorder.with(|s| s.iterations += 1);
    vu.end();
    // `start` is the last step's end, a moment ago.
    recorder.flush_if_due(start);
    // Steps that never block would otherwise keep the other fibers of this worker waiting.
    fibra::checkpoint();
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::http::Transport;
    use std::io::{self, Read, Write};
    use std::sync::atomic::AtomicUsize;

    /// An in-memory HTTP server: answers every complete request head written to it at once,
    /// and counts them.
    struct Memory {
        served: Arc<AtomicUsize>,
        inbox: Vec<u8>,
        outbox: io::Cursor<Vec<u8>>,
    }

    impl Write for Memory {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.inbox.extend_from_slice(buf);
            while let Some(end) = self.inbox.windows(4).position(|w| w == b"\r\n\r\n") {
                self.inbox.drain(..end + 4);
                self.served.fetch_add(1, Ordering::SeqCst);
                let mut out = self.outbox.get_ref()[self.outbox.position() as usize..].to_vec();
                out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
                self.outbox = io::Cursor::new(out);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Read for Memory {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.outbox.read(buf)
        }
    }

    impl Transport for Memory {
        fn set_io_timeout(&mut self, _: Option<Duration>) -> io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn memory(served: &Arc<AtomicUsize>) -> ConnectorFactory {
        let served = served.clone();
        Arc::new(move || {
            let served = served.clone();
            BoxConnect::from_fn(move |_, _| {
                Ok(Box::new(Memory {
                    served: served.clone(),
                    inbox: Vec::new(),
                    outbox: io::Cursor::new(Vec::new()),
                }))
            })
        })
    }

    fn hello() -> Scenario {
        Scenario::new("hello").step("get", |vu| {
            let response = vu.get("http://127.0.0.1:1/")?;
            vu.check("body", response.body == b"hello");
            Ok(())
        })
    }

    fn runtime(workers: usize) -> fibra::Runtime {
        fibra::Runtime::builder().workers(workers).build().unwrap()
    }

    #[test]
    fn closed_runs_exactly_n_iterations_under_any_worker_count() {
        for workers in [1, 2, 4] {
            for (vus, n) in [(4, 103), (8, 3), (1, 10)] {
                let served = Arc::new(AtomicUsize::new(0));
                let load = Load::new(hello())
                    .vus(vus)
                    .iterations(n)
                    .connector(memory(&served));
                let report = runtime(workers).block_on(move || load.run());
                assert_eq!(
                    served.load(Ordering::SeqCst),
                    n as usize,
                    "{workers}w {vus} VUs"
                );
                assert_eq!(report.stats.requests, n);
                assert_eq!(report.stats.iterations, n);
                assert_eq!(report.stats.status[&200], n);
                assert_eq!(report.stats.latency.count(), n);
                assert_eq!(report.stats.checks["body"].pass, n);
                assert_eq!(report.stats.steps[0].name, "get");
                assert_eq!(report.stats.steps[0].count, n);
                assert!((1..=vus.min(n)).contains(&report.stats.connections));
                let starts: u64 = report.stats.series.iter().map(|s| s.starts).sum();
                assert_eq!(starts, n);
                assert_eq!(report.model, Model::Closed);
                assert!(report.vus_max <= vus);
            }
        }
    }

    #[test]
    fn open_runs_exactly_n_starts_under_any_worker_count() {
        for workers in [1, 2, 4] {
            let served = Arc::new(AtomicUsize::new(0));
            let load = Load::new(hello())
                .vus(4)
                .rate(2000.0)
                .iterations(57)
                .connector(memory(&served));
            let report = runtime(workers).block_on(move || load.run());
            assert_eq!(served.load(Ordering::SeqCst), 57, "{workers} workers");
            assert_eq!(report.stats.requests, 57);
            assert_eq!(report.model, Model::Open);
            assert!((1..=4).contains(&report.vus_max));
        }
    }

    #[test]
    fn a_failed_step_ends_its_iteration_and_counts() {
        let served = Arc::new(AtomicUsize::new(0));
        let scenario = Scenario::new("two")
            .step("fail", |vu| {
                if vu.iteration() % 2 == 0 {
                    Err(crate::StepError::new("even"))
                } else {
                    Ok(())
                }
            })
            .step("get", |vu| {
                vu.get("http://127.0.0.1:1/").map(drop).map_err(Into::into)
            });
        let load = Load::new(scenario)
            .vus(1)
            .iterations(10)
            .connector(memory(&served));
        let report = load.run();
        assert_eq!(report.stats.steps[0].count, 10);
        assert_eq!(report.stats.steps[0].errors, 5);
        assert_eq!(report.stats.steps[1].count, 5);
        assert_eq!(served.load(Ordering::SeqCst), 5);
        assert!(report.summary().contains("Steps:"));
    }

    #[test]
    fn closed_stages_run_as_many_vus_as_they_reach_by_default() {
        let served = Arc::new(AtomicUsize::new(0));
        let stages = "100ms:3,200ms:3".parse().unwrap();
        let report = Load::new(hello())
            .stages(stages)
            .connector(memory(&served))
            .run();
        assert_eq!(report.vus, 3);
        assert_eq!(report.vus_max, 3);
    }

    #[test]
    #[should_panic(expected = "the stages reach 3 VUs but Load::vus gives 2")]
    fn closed_stages_above_the_vus_given_panic() {
        let stages = "100ms:3".parse().unwrap();
        Load::new(hello()).vus(2).stages(stages).run();
    }

    /// A run far shorter than the monitor's sampling period still shows its VU.
    #[test]
    fn the_series_shows_the_vus_of_a_run_shorter_than_a_sample() {
        let served = Arc::new(AtomicUsize::new(0));
        let load = Load::new(hello())
            .vus(1)
            .iterations(1)
            .connector(memory(&served));
        let report = runtime(1).block_on(move || load.run());
        assert_eq!(served.load(Ordering::SeqCst), 1);
        let vus: Vec<u64> = report.stats.series.iter().map(|s| s.vus).collect();
        assert_eq!(vus, [1]);
    }

    #[test]
    #[should_panic(expected = "has no steps")]
    fn a_scenario_without_steps_panics() {
        Load::new(Scenario::new("empty")).run();
    }

    #[test]
    fn steps_that_never_block_still_let_the_monitor_run() {
        let samples = Arc::new(AtomicUsize::new(0));
        let seen = samples.clone();
        let scenario = Scenario::new("spin").step("spin", |_| Ok(()));
        let load = Load::new(scenario)
            .vus(2)
            .duration(Duration::from_millis(600))
            .on_progress(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
            });
        let report = runtime(1).block_on(move || load.run());
        assert!(samples.load(Ordering::SeqCst) >= 1, "the monitor ran");
        assert!(report.stats.iterations > 0);
    }

    #[test]
    fn a_cancelled_stop_token_ends_the_run_early() {
        let served = Arc::new(AtomicUsize::new(0));
        let stop = CancelToken::new();
        stop.cancel();
        let report = Load::new(hello())
            .vus(2)
            .duration(Duration::from_secs(600))
            .stop_on(stop)
            .connector(memory(&served))
            .run();
        assert!(report.interrupted);
        assert_eq!(report.stats.requests, 0);
    }

    /// Runs the open model with one VU whose iteration outlasts the next start (due after 1
    /// ms), then cancels `stop` if there is one; how many iterations started.
    fn busy_open_model(duration: Duration, stop: Option<CancelToken>) -> usize {
        let (served, started) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let scenario = {
            let (started, stop) = (started.clone(), stop.clone());
            Scenario::new("busy").step("busy", move |_| {
                started.fetch_add(1, Ordering::Relaxed);
                fibra::sleep(Duration::from_millis(50));
                stop.iter().for_each(CancelToken::cancel);
                Ok(())
            })
        };
        let load = Load::new(scenario)
            .vus(1)
            .rate(1000.0)
            .duration(duration)
            .connector(memory(&served));
        match stop {
            Some(stop) => load.stop_on(stop),
            None => load,
        }
        .run();
        started.load(Ordering::Relaxed)
    }

    /// The open model with every VU busy: the next start waits for one, and a stop meanwhile
    /// ends the wait, so nothing more starts.
    #[test]
    fn a_stop_while_every_vu_is_busy_starts_no_more_iterations() {
        let stop = Some(CancelToken::new());
        assert_eq!(busy_open_model(Duration::from_secs(600), stop), 1);
    }

    /// As a stop, the end of the run's duration ends a start's wait for a busy VU.
    #[test]
    fn the_end_of_the_run_while_every_vu_is_busy_starts_no_more_iterations() {
        assert_eq!(busy_open_model(Duration::from_millis(20), None), 1);
    }
}
