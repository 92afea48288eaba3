//! Runtime metrics: counts of fibers, per-worker scheduling events, stacks and driver work.
//!
//! Each worker's counters sit in its diagnostics slot (its own cache line, beside the id of
//! the fiber it runs, which it writes on every resume anyway) and are written only by that
//! worker: a relaxed load of the counter, plus one, stored back relaxed. That is a plain load
//! and store on x86-64 and AArch64 (no locked instruction, no fence), costs what a `Cell`
//! counter would, and lets any thread read an exact value at any time. A `Cell` counter
//! published now and then would cost the same per event plus the publishing, and readers
//! would see stale counts. Counters bumped from outside the workers (a spawn from a plain
//! thread, a blocking job) are shared atomics: those paths cost a thread hand-off anyway.

use crate::sched::Shared;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A snapshot of a runtime's counters, from [`Runtime::metrics`](crate::Runtime::metrics) or
/// [`Handle::metrics`](crate::Handle::metrics).
///
/// Each counter is read on its own while the runtime runs, so counters that change together
/// may be read a step apart.
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
/// let handle = runtime.handle();
/// runtime.block_on(move || {
///     for _ in 0..3 {
///         fibra::spawn(|| ()).join().unwrap();
///     }
///     let metrics = handle.metrics();
///     // The main fiber and its three children.
///     assert_eq!(metrics.spawned, 4);
///     assert_eq!(metrics.finished, 3);
///     assert_eq!(metrics.live, 1);
///     let json = serde_json::to_string(&metrics).unwrap();
///     assert!(json.contains("\"spawned\":4"));
/// });
/// ```
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct RuntimeMetrics {
    /// Fibers spawned and not finished (started or not).
    pub live: u64,
    /// Fibers spawned, the main fiber included.
    pub spawned: u64,
    /// Fibers that have finished (returned, panicked, unwound, or could not start), counted
    /// by a fiber's worker once the fiber has switched back to it: a joiner on another worker
    /// may see the fiber's result a moment before it is counted here.
    pub finished: u64,
    /// Each worker's counters, by index.
    pub workers: Vec<WorkerMetrics>,
    /// The stacks of every worker's pool.
    pub stacks: StackMetrics,
    /// The driver's pending work.
    pub driver: DriverMetrics,
    /// Deadlocks reported: cycles of fibers waiting for each other, and times every fiber
    /// was found asleep (none under [`Deadlock::Off`](crate::Deadlock::Off)).
    pub deadlocks: u64,
}

/// One worker's counters in [`RuntimeMetrics`], counted since the runtime started.
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
/// let handle = runtime.handle();
/// runtime.block_on(move || {
///     let before = handle.metrics().workers[0].slices;
///     fibra::yield_now();
///     assert_eq!(handle.metrics().workers[0].slices, before + 1);
/// });
/// ```
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct WorkerMetrics {
    /// Its index ([`current_worker`](crate::current_worker)).
    pub index: usize,
    /// Slices run: each time it resumed (or started) a fiber.
    pub slices: u64,
    /// Fibers it took from other workers' queues (one per successful steal).
    pub steals: u64,
    /// Times a fiber running on it parked.
    pub parks: u64,
    /// Wakes of its fibers that came from other threads, through its inbox.
    pub inbox_wakes: u64,
    /// Times it went to sleep for lack of work.
    pub idle_sleeps: u64,
}

/// The fiber stacks of a [`RuntimeMetrics`], summed over the workers' pools.
///
/// ```
/// fibra::run(|| {
///     let stacks = fibra::Handle::current().metrics().stacks;
///     // The main fiber's stack is in use.
///     assert_eq!(stacks.in_use, 1);
///     assert!(stacks.committed_bytes >= 8 << 20);
/// });
/// ```
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct StackMetrics {
    /// Stacks of finished fibers kept for reuse with their memory.
    pub warm: u64,
    /// Stacks of fibers that have started and not finished.
    pub in_use: u64,
    /// Usable bytes of the warm and in-use stacks: the most their memory can take (a stack's
    /// pages take memory once touched). Stacks beyond the warm limit have given theirs back.
    pub committed_bytes: u64,
}

/// The driver's pending work in a [`RuntimeMetrics`].
///
/// Only fibra's own waits are counted: timers and blocking jobs that futures run by
/// [`block_on`](crate::block_on) (or tokio tasks) register directly with tokio are not.
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
/// let handle = runtime.handle();
/// runtime.block_on(move || {
///     let (started, wait) = fibra::chan::bounded(1);
///     let (finish, finished) = fibra::chan::bounded::<()>(1);
///     let job = fibra::spawn(move || {
///         fibra::blocking(move || {
///             started.send(()).unwrap();
///             assert!(finished.recv().is_none()); // until `finish` is dropped
///         })
///     });
///     wait.recv().unwrap();
///     assert_eq!(handle.metrics().driver.blocking_running, 1);
///     drop(finish);
///     job.join().unwrap();
///     assert_eq!(handle.metrics().driver.blocking_running, 0);
/// });
/// ```
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct DriverMetrics {
    /// Timed waits of fibers and fibra futures on the driver's timer wheel (sleeps, waits with
    /// a timeout, scope deadlines).
    pub timers_pending: u64,
    /// Jobs of [`blocking`](crate::blocking) waiting for a blocking-pool thread.
    pub blocking_queued: u64,
    /// Jobs of [`blocking`](crate::blocking) running on the blocking pool.
    pub blocking_running: u64,
}

/// One worker's counters, in its diagnostics slot; written only by that worker.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) slices: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) inbox_wakes: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) idle_sleeps: AtomicU64,
    pub(crate) spawned: AtomicU64,
    pub(crate) finished: AtomicU64,
    stacks_warm: AtomicU64,
    stacks_in_use: AtomicU64,
    stacks_committed: AtomicU64,
}

/// Adds `n` to a counter only the calling worker writes: a plain load and store.
#[inline(always)]
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

impl Counters {
    /// The worker's stack pool changed: its warm and in-use stacks, and their usable bytes.
    pub(crate) fn set_stacks(&self, stacks: crate::stack::PoolStats) {
        self.stacks_warm.store(stacks.warm, Ordering::Relaxed);
        self.stacks_in_use.store(stacks.in_use, Ordering::Relaxed);
        self.stacks_committed
            .store(stacks.committed_bytes, Ordering::Relaxed);
    }
}

/// Counts of `blocking` jobs, shared by every thread that submits or runs one.
#[derive(Default)]
pub(crate) struct BlockingCounts {
    queued: AtomicUsize,
    running: AtomicUsize,
}

/// A `blocking` job that has not started: counted as queued until it starts or is dropped.
pub(crate) struct QueuedJob {
    counts: std::sync::Arc<BlockingCounts>,
    started: bool,
}

/// A `blocking` job running: counted as running until dropped.
pub(crate) struct RunningJob(std::sync::Arc<BlockingCounts>);

impl QueuedJob {
    pub(crate) fn new(counts: &std::sync::Arc<BlockingCounts>) -> QueuedJob {
        counts.queued.fetch_add(1, Ordering::Relaxed);
        QueuedJob {
            counts: counts.clone(),
            started: false,
        }
    }

    /// The job starts on a pool thread.
    pub(crate) fn start(mut self) -> RunningJob {
        self.started = true;
        self.counts.queued.fetch_sub(1, Ordering::Relaxed);
        self.counts.running.fetch_add(1, Ordering::Relaxed);
        RunningJob(self.counts.clone())
    }
}

impl Drop for QueuedJob {
    fn drop(&mut self) {
        if !self.started {
            self.counts.queued.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for RunningJob {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Reads every counter of `shared`.
pub(crate) fn snapshot(shared: &Shared) -> RuntimeMetrics {
    let slots = &shared.running;
    // Finishes before spawns: a fiber's spawn is counted before its finish, so this order
    // keeps `spawned >= finished` for the fibers this snapshot saw finish on their worker.
    let finished: u64 = (0..shared.workers())
        .map(|index| slots.counters(index).finished.load(Ordering::Relaxed))
        .sum();
    let spawned = slots.spawned_outside()
        + (0..shared.workers())
            .map(|index| slots.counters(index).spawned.load(Ordering::Relaxed))
            .sum::<u64>();
    let workers = (0..shared.workers())
        .map(|index| {
            let counters = slots.counters(index);
            let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
            WorkerMetrics {
                index,
                slices: read(&counters.slices),
                steals: read(&counters.steals),
                parks: read(&counters.parks),
                inbox_wakes: read(&counters.inbox_wakes),
                idle_sleeps: read(&counters.idle_sleeps),
            }
        })
        .collect();
    let sum = |field: fn(&Counters) -> &AtomicU64| -> u64 {
        (0..shared.workers())
            .map(|index| field(slots.counters(index)).load(Ordering::Relaxed))
            .sum()
    };
    let stacks = StackMetrics {
        warm: sum(|c| &c.stacks_warm),
        in_use: sum(|c| &c.stacks_in_use),
        committed_bytes: sum(|c| &c.stacks_committed),
    };
    let driver = DriverMetrics {
        timers_pending: shared.holds.count(fibra_driver::HoldKind::Timer) as u64,
        blocking_queued: shared.blocking.queued.load(Ordering::Relaxed) as u64,
        blocking_running: shared.blocking.running.load(Ordering::Relaxed) as u64,
    };
    RuntimeMetrics {
        live: spawned.saturating_sub(finished),
        spawned,
        finished,
        workers,
        stacks,
        driver,
        deadlocks: shared.deadlocks.load(Ordering::Relaxed),
    }
}
