//! What diagnostics keep per worker, each worker's slot in its own cache lines: the fiber it
//! runs (one store per resume), its counters (see `metrics`), its thread, and when to look for
//! a global deadlock again; and the worker's recent time, kept in its thread's state
//! ([`tick`]).

use crate::metrics::{bump, Counters};
use crate::sched::Shared;
use fibra_driver::{Deadline, Timer};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

/// The first delay before a global deadlock check is made again, and the longest.
const LOOK_AGAIN: (Duration, Duration) = (Duration::from_millis(25), Duration::from_secs(1));

/// `repr(C)`: what a resume writes (the running fiber, the slice count) shares a line.
#[repr(C, align(128))]
#[derive(Default)]
pub(crate) struct WorkerSlot {
    running: AtomicU64,
    counters: Counters,
    /// The worker thread's kernel id, once its loop runs (0 before).
    tid: AtomicI32,
    /// Set by the monitor thread once a tick while the worker runs fibers: the worker then
    /// arms its older timed waits at its next scheduling step, so a worker whose slices are
    /// long does not leave them unarmed for dozens of slices (see `wait::LazyTimers`).
    arm_due: AtomicBool,
    /// When to look for a global deadlock again, and the delay after that.
    look_again: Mutex<Option<(Timer, Duration)>>,
}

/// The worker on this thread looks at the clock: every few dozen scheduling steps and when it
/// goes idle or wakes, so a wait's start costs no clock read. The time is kept in the thread's
/// own state, where a wait that begins reads it (`sched::with_running_clock`). Returns it.
pub(crate) fn tick() -> u64 {
    let now = super::record::coarse_now();
    crate::sched::set_clock(now);
    now
}

/// See the module docs.
pub(crate) struct WorkerSlots {
    running: Box<[WorkerSlot]>,
    /// Fibers spawned from outside the workers (from plain threads).
    spawned_outside: AtomicU64,
}

impl WorkerSlots {
    pub(crate) fn new(workers: usize) -> WorkerSlots {
        WorkerSlots {
            running: (0..workers).map(|_| WorkerSlot::default()).collect(),
            spawned_outside: AtomicU64::new(0),
        }
    }

    /// Worker `index`'s slot, which its loop looks up once.
    #[inline]
    pub(crate) fn slot(&self, index: usize) -> &WorkerSlot {
        &self.running[index]
    }

    /// Worker `index`'s counters; written only by that worker.
    #[inline]
    pub(crate) fn counters(&self, index: usize) -> &Counters {
        &self.running[index].counters
    }

    /// A fiber was spawned from outside the workers.
    pub(crate) fn count_outside_spawn(&self) {
        self.spawned_outside.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn spawned_outside(&self) -> u64 {
        self.spawned_outside.load(Ordering::Relaxed)
    }

    /// The fiber worker `index` runs, if any.
    pub(crate) fn running(&self, index: usize) -> Option<u64> {
        match self.running[index].running.load(Ordering::Relaxed) {
            0 => None,
            id => Some(id),
        }
    }

    /// Worker `index`'s loop starts on the calling thread.
    pub(crate) fn enter(&self, index: usize) {
        tick();
        self.running[index]
            .tid
            .store(super::current_tid(), Ordering::SeqCst);
    }

    /// Asks worker `index` to arm its older timed waits at its next scheduling step.
    pub(crate) fn request_arm(&self, index: usize) {
        let due = &self.running[index].arm_due;
        // Read first: the worker's line is written only when the request is new.
        if !due.load(Ordering::Relaxed) {
            due.store(true, Ordering::Relaxed);
        }
    }

    /// Worker `index`'s thread, once its loop runs.
    pub(crate) fn tid(&self, index: usize) -> Option<i32> {
        match self.running[index].tid.load(Ordering::SeqCst) {
            0 => None,
            tid => Some(tid),
        }
    }

    /// Arms (or disarms) a wake-up of worker `index` to check for a global deadlock again,
    /// backing off while nothing changes. On the driver's timer wheel, without a hold: it must
    /// not count as something that could wake a fiber.
    pub(crate) fn look_again(&self, shared: &Arc<Shared>, index: usize, again: bool) {
        let mut slot = self.running[index]
            .look_again
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let delay = match slot.take() {
            Some((_, delay)) if again => (delay * 2).min(LOOK_AGAIN.1),
            _ => LOOK_AGAIN.0,
        };
        if !again {
            return;
        }
        let mut timer = Timer::at(Deadline::after(delay));
        let waker = Waker::from(Arc::new(WakeWorker {
            shared: Arc::downgrade(shared),
            index,
        }));
        if Pin::new(&mut timer)
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
        {
            *slot = Some((timer, delay));
        }
    }
}

impl WorkerSlot {
    /// Whether the monitor asked this worker to arm its older timed waits, clearing the
    /// request; called by that worker only.
    #[inline]
    pub(crate) fn take_arm_request(&self) -> bool {
        self.arm_due.load(Ordering::Relaxed) && self.arm_due.swap(false, Ordering::Relaxed)
    }

    /// The worker starts a slice of fiber `id`; called by that worker only. The slot is
    /// handed back so the end of the slice reaches it.
    #[inline]
    pub(crate) fn start_slice(&self, id: u64) -> Slice<'_> {
        self.running.store(id, Ordering::Relaxed);
        bump(&self.counters.slices, 1);
        Slice(self)
    }
}

/// A worker's slice, from [`WorkerSlot::start_slice`].
pub(crate) struct Slice<'a>(&'a WorkerSlot);

impl<'a> Slice<'a> {
    /// The slice has ended: the worker runs no fiber. Returns the worker's counters.
    #[inline]
    pub(crate) fn end(self) -> &'a Counters {
        self.0.running.store(0, Ordering::Relaxed);
        &self.0.counters
    }
}

/// Unparks a worker when its look-again timer fires.
struct WakeWorker {
    shared: Weak<Shared>,
    index: usize,
}

impl Wake for WakeWorker {
    fn wake(self: Arc<Self>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.unpark_worker(self.index);
        }
    }
}
