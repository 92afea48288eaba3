//! The M:N scheduler: workers, their queues, stealing, and sleeping without lost wake-ups.

mod containment;
mod current;
mod exit_barrier;
mod idle;
mod order;
mod parker;
mod placement;
mod spin;
mod steal_grace;
mod worker;

pub(crate) use containment::contain;
pub(crate) use current::{
    charge, describe_running, end_slice, running_ptr, set_clock, with_running,
    with_running_charged, with_running_clock, with_worker,
};
pub(crate) use steal_grace::GRACE as STEAL_GRACE;
pub(crate) use worker::{run_worker, Local};

use crate::config::Config;
use crate::diag::{FiberTable, GlobalCheck, Sysmon, WorkerSlots};
use crate::fiber::{Core, NO_HOME};
use crate::outside::Outside;
use crate::spawn::Supervisor;
use crossbeam_deque::{Injector, Stealer};
use crossbeam_queue::SegQueue;
use exit_barrier::ExitBarrier;
use fibra_driver::{Driver, Holds};
use idle::Idle;
use parker::Parker;
use placement::Loads;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use steal_grace::Queued;

/// The parts of a runtime every thread may touch.
pub(crate) struct Shared {
    remotes: Box<[Remote]>,
    parkers: Box<[Parker]>,
    injector: Injector<Arc<Core>>,
    idle: Idle,
    /// Fibers homed on or handed to each worker (see `placement`).
    pub(crate) loads: Loads,
    shutdown: AtomicBool,
    /// Set once every worker thread has exited, before the queues are drained for good.
    workers_gone: AtomicBool,
    /// Set when shutdown starts unwinding the fibers still running (see `unwind_remaining`).
    unwinding: AtomicBool,
    /// Who waits for the unwinding to end.
    unwind_waiter: Mutex<Option<Waker>>,
    /// Keeps worker threads from exiting while fibers may still run (see `ExitBarrier`).
    exit: ExitBarrier,
    pub(crate) config: Config,
    /// Joiners outside the runtime's fibers, woken at shutdown.
    pub(crate) outside: Outside,
    /// The driver's tokio runtime, entered by every worker for its whole life.
    pub(crate) tokio: tokio::runtime::Handle,
    /// Pending external waits.
    pub(crate) holds: Arc<Holds>,
    /// Detached fibers.
    pub(crate) supervisor: Supervisor,
    /// Every fiber whose `Core` lives, for dumps and deadlock checks.
    pub(crate) fibers: FiberTable,
    /// The fiber each worker runs.
    pub(crate) running: WorkerSlots,
    /// The global deadlock check's state.
    pub(crate) global: GlobalCheck,
    /// Deadlocks reported (see `diag::report`).
    pub(crate) deadlocks: AtomicU64,
    /// How workers wake the monitor thread.
    pub(crate) sysmon: Sysmon,
    /// Jobs of `blocking` queued and running.
    pub(crate) blocking: Arc<crate::metrics::BlockingCounts>,
}

/// The parts of one worker that other threads touch.
struct Remote {
    /// Started fibers of this worker, woken from other threads.
    inbox: SegQueue<Arc<Core>>,
    /// The other end of the worker's queue of unstarted fibers.
    stealer: Stealer<Arc<Core>>,
    /// Unstarted fibers other workers handed to this one (see `placement`); idle workers may
    /// still steal them.
    handoff: Injector<Arc<Core>>,
    /// Fibers the worker queued as unstarted (see `steal_grace`).
    queued: Queued,
}

impl Shared {
    pub(crate) fn new(
        config: Config,
        stealers: Vec<Stealer<Arc<Core>>>,
        driver: &Driver,
    ) -> Shared {
        let workers = stealers.len();
        Shared {
            remotes: stealers
                .into_iter()
                .map(|stealer| Remote {
                    inbox: SegQueue::new(),
                    stealer,
                    handoff: Injector::new(),
                    queued: Queued::default(),
                })
                .collect(),
            parkers: (0..workers).map(|_| Parker::new()).collect(),
            injector: Injector::new(),
            idle: Idle::new(workers),
            loads: Loads::new(workers),
            shutdown: AtomicBool::new(false),
            workers_gone: AtomicBool::new(false),
            unwinding: AtomicBool::new(false),
            unwind_waiter: Mutex::new(None),
            exit: ExitBarrier::default(),
            config,
            outside: Outside::new(),
            tokio: driver.handle().clone(),
            holds: driver.holds().clone(),
            supervisor: Supervisor::new(),
            fibers: FiberTable::new(),
            running: WorkerSlots::new(workers),
            global: GlobalCheck::new(driver.os_thread_id()),
            deadlocks: AtomicU64::new(0),
            blocking: Arc::default(),
            sysmon: Sysmon::default(),
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.remotes.len()
    }

    /// Per worker: the fibers homed on it (started or pinned, not finished) and those handed
    /// to it that have not started yet.
    pub(crate) fn worker_loads(&self) -> Vec<usize> {
        self.loads.snapshot()
    }

    /// Wakes worker `index` if it sleeps (it looks for work and goes back to sleep).
    pub(crate) fn unpark_worker(&self, index: usize) {
        self.parkers[index].unpark();
    }

    /// Whether every worker has registered to sleep.
    pub(crate) fn idle_all_asleep(&self) -> bool {
        self.idle.sleeping() == self.workers()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Queues a fiber spawned from outside the runtime's workers.
    pub(crate) fn inject(&self, core: Arc<Core>) {
        self.running.count_outside_spawn();
        self.injector.push(core);
        if self.is_shut_down() {
            // Raced with shutdown's drain: nobody will run it, and dropping it here (not in the
            // injector) keeps `Core → Shared → injector → Core` from leaking.
            self.drain_injector();
            return;
        }
        self.idle.notify_one(&self.parkers);
    }

    /// Tells sleeping workers that new stealable work exists.
    pub(crate) fn notify_work(&self) {
        self.idle.notify_one(&self.parkers);
    }

    /// Whether shutdown is unwinding the remaining fibers: every cancellation point unwinds
    /// (unless shielded), and unstarted fibers are dropped instead of started.
    pub(crate) fn is_unwinding(&self) -> bool {
        self.unwinding.load(Ordering::Relaxed)
    }

    /// Cancels every fiber still running, and waits until each has unwound or `deadline` has
    /// passed; `own` is the number of fibers of this runtime the caller is (the main fiber, or
    /// none). Unstarted fibers are dropped without running. Each worker cancels the fibers homed
    /// on it at its next scheduling step, so every worker must still be running its loop; a
    /// fiber that does not finish by the deadline (it ignores or shields its cancellation) is
    /// abandoned by the shutdown that follows.
    pub(crate) fn unwind_remaining(&self, own: usize, deadline: crate::wait::Deadline) {
        if self.unwinding.swap(true, Ordering::SeqCst) {
            return;
        }
        for parker in self.parkers.iter() {
            parker.unpark();
        }
        // Shielded: the caller may be the main fiber, whose worker cancels it too.
        crate::shield(|| loop {
            *self.unwind_waiter.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(crate::wait::current_waker());
            if self.unwound(own) || deadline.has_passed() {
                return;
            }
            crate::wait::park_current_until(deadline);
        });
    }

    /// Whether nothing but `own` fibers is left to unwind or drop.
    fn unwound(&self, own: usize) -> bool {
        self.loads.snapshot().iter().sum::<usize>() <= own
            && self.injector.is_empty()
            && self
                .remotes
                .iter()
                .all(|remote| remote.stealer.is_empty() && remote.handoff.is_empty())
    }

    /// A fiber has ended while unwinding: wakes the waiter to look again.
    pub(crate) fn unwind_progress(&self) {
        let waiter = self
            .unwind_waiter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// Stops every worker: they abandon their fibers at their next scheduling step. Then wakes
    /// every outside joiner, whose join reports the cancellation.
    pub(crate) fn begin_shutdown(&self) {
        self.global.stopped();
        self.sysmon.stop();
        self.shutdown.store(true, Ordering::SeqCst);
        for parker in self.parkers.iter() {
            parker.unpark();
        }
    }

    /// After every worker has exited: drops what is still queued, and wakes outside joiners
    /// and drainers of detached fibers.
    pub(crate) fn finish_shutdown(&self) {
        // SeqCst, before the drain, against `dispatch_remote`'s push and load: either the
        // drain below finds a fiber pushed to an inbox, or its pusher sees the flag.
        self.workers_gone.store(true, Ordering::SeqCst);
        self.drain_injector();
        for index in 0..self.workers() {
            self.drain_inbox(index);
        }
        self.outside.wake_all();
        self.supervisor.close();
    }

    fn drain_injector(&self) {
        while !self.injector.is_empty() {
            drop(self.injector.steal());
        }
    }

    fn drain_inbox(&self, index: usize) {
        while self.remotes[index].inbox.pop().is_some() {}
    }
}

/// Puts a fiber whose latch dispatch was won back on its home worker: straight onto the ready
/// queue when called on that worker, else into its inbox with a wake-up.
pub(crate) fn dispatch(core: Arc<Core>) {
    let home = core.home.load(Ordering::Relaxed);
    debug_assert_ne!(home, NO_HOME, "an unstarted fiber was dispatched");
    let core = match with_worker(|local| match local {
        Some(local) if local.owns(&core.shared, home) => {
            local.push_ready(core);
            None
        }
        _ => Some(core),
    }) {
        Some(core) => core,
        None => return,
    };
    dispatch_remote(core, home);
}

/// [`dispatch`] from a thread other than the fiber's home worker. Out of line: the local
/// dispatch, most of a ping-pong's, then saves no registers for it.
#[inline(never)]
fn dispatch_remote(core: Arc<Core>, home: usize) {
    let shared = core.shared.clone();
    shared.remotes[home].inbox.push(core);
    // Once no worker runs any more, nobody will resume it: dropped here, not left in the
    // inbox (`Core → Shared → inbox → Core` would leak). Not before: after shutdown begins a
    // worker may still be running this very fiber between its latch's flip and its switch
    // out (a shielded fiber, one that outlives the shutdown timeout), and the queued
    // reference may be its last; the worker drains its own inbox as it exits, and
    // `finish_shutdown` whatever came after.
    if shared.workers_gone.load(Ordering::SeqCst) {
        shared.drain_inbox(home);
        return;
    }
    shared.parkers[home].unpark();
    fibra_driver::note_remote_wake();
}
