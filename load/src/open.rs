//! The open model: iterations start on a schedule whatever the completions, from a pool of VUs
//! that grows as needed; the first request of each is timed from its intended start.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::chan;

use crate::parse::Stages;
use crate::record::FlushOnDrop;
use crate::run::{iterate, wait_until, Shared};
use crate::scenario::{Scenario, StepFn};
use crate::vu::Vu;

/// A start handed to a VU later than this after its scheduled time counts as late (timer
/// wake-ups alone are up to about a millisecond late).
const LATE_AFTER: Duration = Duration::from_millis(10);

/// When the open model's starts are due.
pub(crate) struct Schedule {
    pub rate: f64,
    pub stages: Option<Stages>,
    pub length: Option<Duration>,
    pub iterations: Option<u64>,
}

impl Schedule {
    /// The offset from the start of start number `i`, or `None` when the run has no more.
    fn offset(&self, i: u64) -> Option<Duration> {
        if self.iterations.is_some_and(|n| i >= n) {
            return None;
        }
        let offset = match &self.stages {
            Some(stages) => stages.start_offset(i)?,
            None => Duration::from_secs_f64(i as f64 / self.rate),
        };
        match self.length {
            Some(length) if offset >= length => None,
            _ => Some(offset),
        }
    }
}

/// The open model: hands each scheduled start to an idle VU, spawning VUs while none is idle
/// and the pool is below `vus`, and waiting for one when the pool is full. Returns how many
/// starts were missed: due before the run's end but never begun, because every VU was still
/// busy at the end.
pub(crate) fn dispatch<'scope>(
    s: &'scope fibra::Scope<'scope, '_>,
    scenario: &Scenario,
    shared: &Arc<Shared>,
    schedule: &Schedule,
    vus: u64,
    done: &chan::Writer<()>,
) -> u64 {
    let origin = shared.recorder.origin();
    let (tx, rx) = chan::bounded::<Instant>(0);
    let mut spawned = 0;
    let mut i = 0;
    loop {
        let Some(offset) = schedule.offset(i) else {
            return 0;
        };
        let at = origin + offset;
        if !wait_until(at, &shared.stop) {
            return 0;
        }
        match tx.try_send(at) {
            Ok(()) => {}
            Err(full) if full.is_full() && spawned < vus => {
                let (shared, rx, done) = (shared.clone(), rx.clone(), done.clone());
                let steps = scenario.instances();
                let index = spawned as usize;
                s.spawn(move || open_vu(index, &shared, steps, at, rx, done));
                spawned += 1;
            }
            // Every VU busy and the pool full: wait for one, but not past the run's end, so
            // that no iteration starts after a stop.
            Err(_) => fibra::select! {
                send(tx, at) -> sent => if sent.is_err() {
                    return 0;
                },
                cancelled(shared.stop) => return 0,
                default(shared.left()) => return record_missed(shared, schedule, i),
            },
        }
        if at.elapsed() > LATE_AFTER {
            shared.late.fetch_add(1, Ordering::Relaxed);
        }
        i += 1;
    }
}

/// Counts the starts from number `first` on that the schedule still holds, all due before the
/// end: the run ended while every VU was busy with earlier ones (a stall). Each also enters
/// the latency histogram with the time from its intended start to now, the least it would
/// have waited, so that a stall at the end of the run shows in the percentiles as one in its
/// middle does.
fn record_missed(shared: &Shared, schedule: &Schedule, first: u64) -> u64 {
    let (origin, now) = (shared.recorder.origin(), Instant::now());
    shared.recorder.total(|stats| {
        let mut missed = 0;
        while let Some(offset) = schedule.offset(first + missed) {
            stats
                .latency
                .record(now.saturating_duration_since(origin + offset));
            missed += 1;
        }
        missed
    })
}

fn open_vu(
    index: usize,
    shared: &Arc<Shared>,
    mut steps: Vec<StepFn>,
    first: Instant,
    starts: chan::Reader<Instant>,
    _done: chan::Writer<()>,
) {
    let _flush = FlushOnDrop(&shared.recorder);
    let mut vu = Vu::new(index, shared.clone());
    shared.activate();
    iterate(&mut vu, &mut steps, shared, Some(first), Instant::now());
    while let Some(at) = starts.recv() {
        iterate(&mut vu, &mut steps, shared, Some(at), Instant::now());
    }
    shared.deactivate();
}
