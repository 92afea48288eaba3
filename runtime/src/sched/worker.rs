//! One worker: its own queues, the scheduling loop, and running a fiber for one slice.

use super::containment::{contain, AbortOnUnwind};
use super::current::{self, EnterWorker};
use super::idle::Woken;
use super::order::{Next, RunOrder};
use super::spin::{AfterLooks, Spin, SpinClock, LOOKS_PER_CLOCK, PAUSES_PER_LOOK, SPIN_FOR};
use super::steal_grace::Sightings;
use super::{Remote, Shared};
use crate::diag::{LazyChecks, WorkerSlot};
use crate::fiber::{warm, Body, Core, Suspend, NO_HOME};
use crate::metrics::{bump, Counters};
use crate::stack::{AltStack, PoolConfig, StackError, StackPool};
use crate::wait::LazyTimers;
use corosensei::stack::Stack;
use corosensei::CoroutineResult;
use crossbeam_deque::{Steal, Worker};
use crossbeam_queue::SegQueue;
use slab::Slab;
use std::cell::{Cell, RefCell, RefMut};
use std::collections::VecDeque;
use std::hint;
use std::mem::{self, ManuallyDrop};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Every this many scheduling steps the inbox, the unstarted queue and the yielders are looked
/// at even while other fibers wait, so none of them starves.
const CHECK_INTERVAL: u32 = 61;
/// Fibers queued on a worker from which it warms the upcoming ones' memory before a resume:
/// behind fewer, they are still in the cache.
const WARM_BEHIND: usize = 8;
/// The spawner of a batch spawned outside any fiber (no fiber has id 0).
const NO_SPAWNER: u64 = 0;
/// How often a busy worker ages its stack pool, in nanoseconds: memory of stacks returned past
/// the warm bound goes back to the kernel within two periods unless fibers reuse it.
const STACK_AGING_NS: u64 = 50_000_000;

/// The worker-owned state: used only on the worker's thread.
pub(crate) struct Local {
    index: usize,
    shared: Arc<Shared>,
    /// Woken fibers and the batches of unstarted ones, in the order they run (see `order`).
    order: RefCell<RunOrder<Arc<Core>>>,
    /// Fibers that yielded: they run once nothing else here is runnable (and now and then
    /// before, so a stream of other work does not starve them).
    yielded: RefCell<VecDeque<Arc<Core>>>,
    /// The worker this one handed its last unstarted fiber to, while that run of hand-offs
    /// lasts (see `placement`).
    handing_to: Cell<Option<usize>>,
    /// How many fibers the running fiber has spawned in this slice: the top of `unstarted`,
    /// made one batch when it suspends.
    spawned: Cell<usize>,
    /// Where a batch is turned over; kept to reuse its allocation.
    turning: RefCell<Vec<Arc<Core>>>,
    /// Unstarted fibers: a stack (newest batch on top, each batch's oldest fiber topmost once
    /// the batch is complete), stolen from the bottom by other workers.
    unstarted: Worker<Arc<Core>>,
    pool: RefCell<StackPool>,
    /// The fibers homed here that have started and not finished, for shutdown to cancel.
    started: RefCell<Slab<*const Core>>,
    /// Whether this worker has cancelled its started fibers for shutdown's unwinding.
    cancelled_started: Cell<bool>,
    /// The timed parks of fibers homed here, armed lazily (see `wait::lazy_timer`).
    timers: RefCell<LazyTimers>,
    /// The fibers this worker checks for cycle deadlocks (see `diag::lazy_check`).
    checks: RefCell<LazyChecks>,
    /// When the stack pool was last aged (see `STACK_AGING_NS`), on the diagnostics' clock.
    stacks_aged_at: Cell<u64>,
    /// Reductions per slice (the running fiber's budget is in the thread's context).
    slice: u32,
    /// Fibers resumed so far (wrapping): a clock in resumes, for `push_ready`'s warming.
    resumes: Cell<u32>,
    /// Scheduling steps left before the next periodic check: a countdown, so a step tests
    /// for zero instead of dividing.
    until_check: Cell<u32>,
    /// How long the next idle spin lasts (see `spin`).
    spin: Spin,
    /// Lone fibers seen queued at other workers, left to them for a moment (see
    /// `steal_grace`).
    sightings: Sightings,
    /// Set when the loop should return even though the runtime goes on (worker 0's main fiber
    /// has finished).
    stop: Cell<bool>,
}

impl Local {
    pub(crate) fn new(index: usize, shared: Arc<Shared>, unstarted: Worker<Arc<Core>>) -> Local {
        let pool = StackPool::new(PoolConfig {
            max_warm: shared.config.warm_stacks,
            guard: shared.config.guard,
        });
        Local {
            index,
            stacks_aged_at: Cell::new(0),
            slice: shared.config.reductions,
            resumes: Cell::new(0),
            sightings: Sightings::new(shared.workers(), shared.config.steal_grace),
            shared,
            order: RefCell::new(RunOrder::new()),
            yielded: RefCell::new(VecDeque::new()),
            handing_to: Cell::new(None),
            spawned: Cell::new(0),
            turning: RefCell::new(Vec::new()),
            unstarted,
            pool: RefCell::new(pool),
            started: RefCell::new(Slab::default()),
            cancelled_started: Cell::new(false),
            timers: RefCell::default(),
            checks: RefCell::default(),
            until_check: Cell::new(CHECK_INTERVAL),
            spin: Spin::new(),
            stop: Cell::new(false),
        }
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Whether this is worker `index` of the runtime `shared`.
    pub(crate) fn owns(&self, shared: &Arc<Shared>, index: usize) -> bool {
        self.index == index && Arc::ptr_eq(&self.shared, shared)
    }

    /// Fibers that run here before a fiber that yields now runs again: the woken, the
    /// unstarted and the earlier yielders (wakes sent from other threads and not yet taken in
    /// are not counted).
    #[inline]
    pub(crate) fn ready_len(&self) -> usize {
        // Every blocked channel operation asks once per retry, so the queues are read without
        // touching their borrow flags.
        // SAFETY: each reference is used for one read and dropped before anything else runs,
        // so no mutable borrow can begin while it lives; one that had begun earlier on this
        // thread (the only one using the cells) makes `try_borrow_unguarded` fail instead.
        let yielded = unsafe { self.yielded.try_borrow_unguarded() }.map_or(0, VecDeque::len);
        self.woken_len() + self.unstarted.len() + yielded
    }

    /// Woken fibers waiting to run here.
    #[inline]
    fn woken_len(&self) -> usize {
        // SAFETY: as in `ready_len`.
        unsafe { self.order.try_borrow_unguarded() }.map_or(0, RunOrder::woken_len)
    }

    /// Fibers that run here before a fiber that retries now runs again (see
    /// `wait::RetryBudget`), if any were woken: those, and the unstarted, which may start
    /// first. `None` when none were woken: the retry is then a plain yield.
    #[inline]
    pub(crate) fn ahead_of_retry(&self) -> Option<usize> {
        let woken = self.woken_len();
        (woken > 0).then(|| woken + self.unstarted.len())
    }

    /// Queues a woken fiber (or one pinned here unstarted) to run on this worker.
    pub(crate) fn push_ready(&self, core: Arc<Core>) {
        let id = core.id.as_u64();
        let mut order = self.order.borrow_mut();
        // A fiber woken behind a short queue runs within a few switches, too soon for
        // `warm_upcoming` to warm it. If many others ran since it did, its stack is asked for
        // now, while the waker (a lock's releaser handing over, a channel's sender) goes on
        // with its own work; a partner in a ping-pong is still in the cache.
        if order.woken_len() < WARM_BEHIND
            && core.resumes_since(self.resumes.get()) >= WARM_BEHIND as u32
        {
            core.warm_stack();
        }
        order.wake(core, id);
    }

    /// Queues an unstarted fiber here for good: it is homed now, and ready queues are never
    /// stolen from.
    pub(crate) fn pin(&self, core: Arc<Core>) {
        bump(&self.counters().spawned, 1);
        self.shared.loads.add(self.index);
        core.home.store(self.index, Ordering::Relaxed);
        self.push_ready(core);
    }

    /// Queues a fiber that any worker may start, at once (an idle worker may take it while
    /// the spawner still runs), in the running fiber's batch.
    pub(crate) fn push_unstarted(&self, core: Arc<Core>) {
        bump(&self.counters().spawned, 1);
        self.unstarted.push(core);
        self.own().queued.count();
        self.spawned.set(self.spawned.get() + 1);
        if !current::with_running(|running| running.is_some()) {
            self.queue_spawned(NO_SPAWNER);
        }
        self.shared.notify_work();
    }

    /// Makes the running fiber's spawns one batch, turned over so that its oldest fiber is on
    /// top: the batch starts in spawn order. Thieves take from the bottom meanwhile; when they
    /// took some of the batch, a few fibers of the batch below are turned over with it, which
    /// changes only the order of fibers that were being stolen anyway.
    #[inline]
    fn queue_spawned(&self, spawner: u64) {
        if self.spawned.get() != 0 {
            self.queue_batch(spawner);
        }
    }

    fn queue_batch(&self, spawner: u64) {
        let spawned = self.spawned.replace(0);
        self.order.borrow_mut().batch(spawned, spawner);
        if spawned > 1 {
            let mut turning = self.turning.borrow_mut();
            turning.extend((0..spawned).map_while(|_| self.unstarted.pop()));
            for core in turning.drain(..) {
                self.unstarted.push(core);
            }
        }
    }

    /// This worker's counters (see `metrics`), which only this thread writes.
    #[inline]
    fn counters(&self) -> &Counters {
        self.shared.running.counters(self.index)
    }

    /// Publishes the stack pool's counts, after it changed.
    fn publish_stacks(&self) {
        self.counters().set_stacks(self.pool.borrow().stats());
    }

    /// Ages the stack pool if a period has passed since it was last aged (see `StackPool::age`);
    /// `now` is on the diagnostics' clock.
    fn age_stacks(&self, now: u64) {
        if now.wrapping_sub(self.stacks_aged_at.get()) < STACK_AGING_NS {
            return;
        }
        self.stacks_aged_at.set(now);
        self.pool.borrow_mut().age();
        self.publish_stacks();
    }

    /// The timed parks of this worker's fibers.
    pub(crate) fn timers(&self) -> RefMut<'_, LazyTimers> {
        self.timers.borrow_mut()
    }

    /// The fibers this worker checks for cycle deadlocks.
    pub(crate) fn checks(&self) -> RefMut<'_, LazyChecks> {
        self.checks.borrow_mut()
    }

    /// Before the thread blocks (it sleeps, or an unwinding fiber keeps it): arms every timed
    /// park noted here (see `wait::lazy_timer`) and checks every listed fiber for a cycle (see
    /// `diag::lazy_check`). Whether that woke a fiber (a deadline had passed, or a cycle was
    /// found under `Deadlock::Panic`): it may be queued here.
    pub(crate) fn before_blocking(&self) -> bool {
        let timed_out = self.timers.borrow_mut().arm_all(&self.shared.holds);
        let doomed = crate::diag::run_all_checks(&self.checks);
        timed_out || doomed
    }

    /// Makes the loop return after the current step.
    pub(crate) fn request_stop(&self) {
        self.stop.set(true);
    }

    fn stopping(&self) -> bool {
        self.stop.get() || self.shared.is_shut_down()
    }

    /// The parts of this worker that other threads touch.
    #[inline]
    fn own(&self) -> &Remote {
        &self.shared.remotes[self.index]
    }

    /// The next fiber to run from this worker's own queues; `own` is this worker's
    /// [`Remote`], looked up once by the loop: a fiber that yields with nothing else queued
    /// looks at two of its queues on every turn.
    fn next_local(&self, own: &Remote, diag: &WorkerSlot) -> Option<Arc<Core>> {
        let until_check = self.until_check.get() - 1;
        self.until_check.set(until_check);
        if until_check != 0 && diag.take_arm_request() {
            // A fiber whose deadline has passed is queued here, and found below.
            self.timers.borrow_mut().arm_older(&self.shared.holds);
        }
        if until_check == 0 {
            self.until_check.set(CHECK_INTERVAL);
            let now = crate::diag::tick();
            self.age_stacks(now);
            self.timers.borrow_mut().arm_older(&self.shared.holds);
            // A fiber a check wakes is queued here, and found below.
            let _ = crate::diag::run_periodic_checks(&self.checks, now);
            self.drain_inbox(own);
            // Fibers handed here, then the bottom of the unstarted queue (the oldest batch's
            // newest fiber), which newest-batch-first popping could starve, then the oldest
            // yielder, which wakes and spawns could. A queue that holds only the top batch
            // starves nothing, and that batch keeps its spawn order.
            if let Some(core) = self.take_handed_off(own) {
                return Some(core);
            }
            while self.unstarted.len() > self.order.borrow().top_batch_queued() {
                let Some(core) = retry_steal(|| own.stealer.steal()) else {
                    break;
                };
                if let Some(core) = self.place(core) {
                    return Some(core);
                }
            }
            if let Some(core) = self.yielded.borrow_mut().pop_front() {
                return Some(core);
            }
        }
        if let Some(core) = self.next_in_order() {
            return Some(core);
        }
        if self.drain_inbox(own) {
            if let Some(core) = self.next_in_order() {
                return Some(core);
            }
        }
        self.take_unstarted(own)
            .or_else(|| self.yielded.borrow_mut().pop_front())
    }

    /// The next woken fiber or unstarted fiber of a counted batch (see `order`). Inlined: it
    /// is most of a scheduling step that finds a woken fiber.
    #[inline(always)]
    fn next_in_order(&self) -> Option<Arc<Core>> {
        let next = self.order.borrow_mut().next();
        match next {
            Next::Woken(core) => Some(core),
            Next::Unstarted => self.next_unstarted_in_order(),
            Next::Empty => None,
        }
    }

    /// [`next_in_order`](Self::next_in_order) once it said the top of the unstarted queue is
    /// next.
    fn next_unstarted_in_order(&self) -> Option<Arc<Core>> {
        loop {
            match self.unstarted.pop() {
                Some(core) => {
                    if let Some(core) = self.place(core) {
                        return Some(core);
                    }
                }
                None => self.order.borrow_mut().queue_empty(),
            }
            let next = self.order.borrow_mut().next();
            match next {
                Next::Woken(core) => return Some(core),
                Next::Unstarted => {}
                Next::Empty => return None,
            }
        }
    }

    /// Queues the wakes sent here from other threads; false if there were none. The look at
    /// an empty inbox is inlined: a fiber that yields with nothing else queued makes it on
    /// every turn.
    #[inline(always)]
    fn drain_inbox(&self, own: &Remote) -> bool {
        !own.inbox.is_empty() && self.drain_nonempty_inbox(&own.inbox)
    }

    fn drain_nonempty_inbox(&self, inbox: &SegQueue<Arc<Core>>) -> bool {
        let mut order = self.order.borrow_mut();
        let mut woken = 0;
        while let Some(core) = inbox.pop() {
            let id = core.id.as_u64();
            order.wake(core, id);
            woken += 1;
        }
        bump(&self.counters().inbox_wakes, woken);
        true
    }

    /// A fiber handed here. Looking costs a load when there is none (stealing from an empty
    /// injector costs a fence, which a yielding fiber would pay on every turn); a hand-off
    /// being pushed meanwhile is seen on the next look, or before the worker sleeps.
    #[inline]
    fn take_handed_off(&self, own: &Remote) -> Option<Arc<Core>> {
        if own.handoff.is_empty() {
            return None;
        }
        retry_steal(|| own.handoff.steal())
    }

    #[inline]
    fn take_unstarted(&self, own: &Remote) -> Option<Arc<Core>> {
        if let Some(core) = self.take_handed_off(own) {
            return Some(core);
        }
        // `is_empty` is inlined, `pop` is a call.
        while !self.unstarted.is_empty() {
            let Some(core) = self.unstarted.pop() else {
                break;
            };
            if let Some(core) = self.place(core) {
                return Some(core);
            }
        }
        // As for hand-offs: a load, not a fence, when the injector is empty.
        if self.shared.injector.is_empty() {
            return None;
        }
        retry_steal(|| self.shared.injector.steal_batch_and_pop(&self.unstarted))
    }

    /// Decides where `core`, taken from this worker's own unstarted queue, starts: returns it
    /// to start here, or hands it to a less loaded worker (see `placement`).
    fn place(&self, core: Arc<Core>) -> Option<Arc<Core>> {
        let target = self
            .shared
            .loads
            .hand_off_target(self.index, self.handing_to.get());
        self.handing_to.set(target);
        let Some(target) = target else {
            return Some(core);
        };
        let shared = &self.shared;
        shared.loads.add(target);
        core.home.store(target, Ordering::Relaxed);
        shared.remotes[target].handoff.push(core);
        // The target's parker keeps the token if it is not asleep yet, and its last look
        // before sleeping sees its hand-off queue: no lost wake-up.
        shared.parkers[target].unpark();
        None
    }

    /// Whether the placement rule would hand this worker's own unstarted fibers to another.
    fn overloaded(&self) -> bool {
        self.shared
            .loads
            .hand_off_target(self.index, None)
            .is_some()
    }

    /// Whether an idle worker may take a fiber handed to `victim`: only when that makes the
    /// loads more even, so a fiber handed away is never taken back by the worker that handed
    /// it (the hand-off exists because that worker had more), yet a worker whose thread is
    /// held by a long call does not keep its hand-offs waiting while others with less idle.
    fn may_take_handed_to(&self, victim: usize) -> bool {
        let loads = &self.shared.loads;
        !self.shared.remotes[victim].handoff.is_empty()
            && loads.get(self.index) + 1 < loads.get(victim)
    }

    /// Whether to leave the unstarted fiber queued at `victim` (whose parts other threads touch
    /// are `remote`) to its own worker for now: it is alone there and was seen first only just
    /// now (see `steal_grace`).
    fn lone_fiber_left(&self, victim: usize, remote: &Remote) -> bool {
        // The length is two loads (the queue's front, then its back) that the owner's pops
        // and pushes may fall between, so a look that a push overlaps can count one fiber as
        // none or as two: it leaves the queue alone, and the next look counts again.
        let queued = remote.queued.get();
        let len = remote.stealer.len();
        if remote.queued.get() != queued {
            return true;
        }
        match len {
            // Nothing queued, or a push this look did not see: nothing to steal unseen.
            0 => {
                self.sightings.forget(victim);
                true
            }
            1 => self.sightings.leave(victim, queued, Instant::now()),
            _ => {
                self.sightings.forget(victim);
                false
            }
        }
    }

    /// Unstarted fibers from the injector or other workers, starting with the next worker.
    /// A worker more loaded than the placement rule lets start fibers takes only from the
    /// injector: the fibers queued at other workers are started by them or handed to the
    /// least loaded worker, else an idle worker whose fibers are all parked would collect a
    /// burst of long-lived ones.
    fn steal(&self) -> Option<Arc<Core>> {
        let workers = self.shared.workers();
        let may_steal = !self.overloaded();
        retry_steal(|| {
            self.shared
                .injector
                .steal_batch_and_pop(&self.unstarted)
                .or_else(|| {
                    (1..workers)
                        .map(|offset| (self.index + offset) % workers)
                        .filter(|_| may_steal)
                        .map(|victim| {
                            let remote = &self.shared.remotes[victim];
                            let stolen = if self.lone_fiber_left(victim, remote) {
                                Steal::Empty
                            } else {
                                remote.stealer.steal_batch_and_pop(&self.unstarted)
                            };
                            let stolen = if stolen.is_empty() && self.may_take_handed_to(victim) {
                                remote.handoff.steal()
                            } else {
                                stolen
                            };
                            if stolen.is_success() {
                                bump(&self.counters().steals, 1);
                            }
                            stolen
                        })
                        .collect()
                })
        })
    }

    /// Whether our inbox has wakes or fibers were handed to us.
    #[inline]
    fn own_work_visible(&self) -> bool {
        let own = self.own();
        !own.inbox.is_empty() || !own.handoff.is_empty()
    }

    /// Whether another worker or the injector has something to steal, or our inbox has wakes.
    fn work_visible(&self) -> bool {
        self.own_work_visible()
            || !self.shared.injector.is_empty()
            || (!self.overloaded() && self.shared.remotes.iter().any(|r| !r.stealer.is_empty()))
            || (0..self.shared.workers()).any(|victim| self.may_take_handed_to(victim))
    }

    /// Runs `core` until it parks, yields or finishes; `diag` is this worker's diagnostics
    /// slot, looked up once by the loop.
    fn run(&self, core: Arc<Core>, diag: &WorkerSlot) {
        // The fiber is reached through this pointer from here on: `core` itself is lent to the
        // fiber for the resume (see `Core::lend`), and that lent reference keeps it alive for
        // every use below.
        let fiber: *const Core = Arc::as_ptr(&core);
        let id = core.id.as_u64();
        // SAFETY: we popped `core` from one of our queues, which makes this thread the one that
        // runs it (see `Core`'s `Send` impl); no other reference to the body exists now.
        let body = unsafe { (*fiber).body() };
        if let Body::Unstarted(..) = body {
            let Body::Unstarted(entry, ticket) = mem::replace(body, Body::Done) else {
                unreachable!()
            };
            self.settle_home(&core);
            core.diag.started();
            // A fiber cancelled before it starts is dropped unstarted: no stack, no unwinding.
            let stack = if self.shared.is_unwinding() || crate::cancel::cancelled_unstarted(&core) {
                Err(StackError::Cancelled)
            } else {
                let stack = self.pool.borrow_mut().take(core.stack_size);
                self.publish_stacks();
                stack
            };
            match stack {
                Ok(stack) => {
                    core.started_key
                        .set(self.started.borrow_mut().insert(fiber));
                    core.set_stack_top(stack.base().get());
                    let coroutine = corosensei::Coroutine::with_stack(stack, move |yielder, ()| {
                        current::with_running(|running| {
                            running
                                .expect("a fiber's coroutine runs with its core set")
                                .set_yielder(yielder)
                        });
                        contain("a fiber's completion", || entry.call(Ok(()), fiber));
                    });
                    *body = Body::Running(ManuallyDrop::new(coroutine), ticket);
                }
                Err(error) => {
                    core.diag.finished();
                    bump(&self.counters().finished, 1);
                    self.shared.loads.remove(self.index);
                    drop(ticket);
                    // The fiber-locals it was given and its cancel scope go before its joiner
                    // sees the outcome, as a started fiber's do as it ends, not with the last
                    // reference (a kept `Fiber` handle may hold that for long).
                    let ctx = core.ctx.take();
                    contain("a fiber that could not start's fiber-locals", || drop(ctx));
                    contain("a fiber that could not start", || {
                        entry.call(Err(error), fiber)
                    });
                    contain("a fiber that could not start's drop", || drop(core));
                    self.note_unwind_progress();
                    return;
                }
            }
        }
        let Body::Running(coroutine, _) = body else {
            unreachable!("a finished fiber was scheduled")
        };
        let resumes = self.resumes.get().wrapping_add(1);
        self.resumes.set(resumes);
        core.note_resume(resumes);
        // SAFETY: we are the home worker about to resume; the cell is empty (it was reclaimed
        // after the last yield, or taken by the dispatch that queued the fiber).
        unsafe { core.lend() };
        self.warm_upcoming();
        let (result, counters) = {
            let _running = current::Running::set(fiber, self.slice);
            let slice = diag.start_slice(id);
            (coroutine.resume(()), slice.end())
        };
        self.queue_spawned(id);
        // After a park the lent reference may already be in a queue (or, for a fiber nobody
        // wakes, stay lent for good); `fiber` is not touched then.
        match result {
            CoroutineResult::Yield(Suspend::Park) => bump(&counters.parks, 1),
            CoroutineResult::Yield(Suspend::Yield) => {
                // SAFETY: the fiber yielded without parking, so no dispatch took the reference;
                // it is alive because the lent reference is.
                self.yielded
                    .borrow_mut()
                    .push_back(unsafe { (*fiber).reclaim() });
            }
            CoroutineResult::Yield(Suspend::Retry) => {
                // SAFETY: as for a yield.
                self.push_ready(unsafe { (*fiber).reclaim() });
            }
            CoroutineResult::Return(()) => {
                // SAFETY: as for a yield.
                let core = unsafe { (*fiber).reclaim() };
                core.diag.finished();
                bump(&counters.finished, 1);
                let Body::Running(coroutine, ticket) = mem::replace(body, Body::Done) else {
                    unreachable!()
                };
                let stack = ManuallyDrop::into_inner(coroutine).into_stack();
                self.pool.borrow_mut().give(stack);
                self.publish_stacks();
                drop(ticket);
                self.started.borrow_mut().remove(core.started_key.get());
                self.shared.loads.remove(self.index);
                // The last reference drops the fiber-locals, which are user values.
                contain("a finished fiber's drop", || drop(core));
                self.note_unwind_progress();
            }
        }
    }

    /// Asks the CPU for the memory of the fibers queued to run after the one about to resume
    /// (see `fiber::warm`): the next one's stack, and the `Core` of the one after it, whose
    /// stack is asked for a step later. Only behind a queue long enough for the fibers to have
    /// left the cache.
    #[inline]
    fn warm_upcoming(&self) {
        // Every resume comes here, so the queues are read without touching their borrow flags.
        // SAFETY: the references are only read, and dropped before anything else runs, so no
        // mutable borrow can begin while they live; one that had begun earlier on this thread
        // (the only one using the cells) makes `try_borrow_unguarded` fail instead.
        let (Ok(order), Ok(yielded)) = (unsafe { self.order.try_borrow_unguarded() }, unsafe {
            self.yielded.try_borrow_unguarded()
        }) else {
            return;
        };
        if order.woken_len() + yielded.len() < WARM_BEHIND {
            return;
        }
        let mut upcoming = order.upcoming().chain(yielded.iter());
        if let Some(next) = upcoming.next() {
            next.warm_stack();
        }
        if let Some(after) = upcoming.next() {
            warm::core(Arc::as_ptr(after));
        }
    }

    fn note_unwind_progress(&self) {
        if self.shared.is_unwinding() {
            self.shared.unwind_progress();
        }
    }

    /// Once shutdown unwinds the remaining fibers: raises the cancel hint of every fiber
    /// started here and wakes it, so it unwinds at its current (or next) cancellation point.
    fn cancel_started_for_shutdown(&self) {
        if self.cancelled_started.get() || !self.shared.is_unwinding() {
            return;
        }
        self.cancelled_started.set(true);
        // Copied out: a wake may queue a fiber here, and nothing is borrowed while user code
        // could run.
        let started: Vec<*const Core> = self
            .started
            .borrow()
            .iter()
            .map(|(_, &fiber)| fiber)
            .collect();
        for fiber in started {
            // SAFETY: a fiber in `started` has started and not finished (it is removed on its
            // return, before its reference goes), and such a fiber's `Core` is alive: it is
            // queued, or parked and holding its own lent reference (see `Core::queued_ref`).
            // Nothing drops queued references before shutdown, which comes after this.
            let core = unsafe { &*fiber };
            core.cancel_hint.raise();
            core.unpark();
        }
    }

    /// Makes this worker the home of `core`, which starts here, moving its load from the
    /// worker it was handed to, if another.
    fn settle_home(&self, core: &Core) {
        let assigned = core.home.load(Ordering::Relaxed);
        if assigned == self.index {
            return;
        }
        if assigned != NO_HOME {
            self.shared.loads.remove(assigned);
        }
        self.shared.loads.add(self.index);
        core.home.store(self.index, Ordering::Relaxed);
    }

    /// Blocks this thread until `keep`'s fiber, which runs here and has committed to park, is
    /// dispatched, without switching away from it (for a fiber that is unwinding, see
    /// `wait::park_fiber`); wakes of other fibers that arrive meanwhile are queued as usual.
    /// `keep` was counted before the fiber committed to park: a dispatch may drop the reference
    /// its worker lent it meanwhile. Returns false at shutdown, when nobody may dispatch it any
    /// more: the fiber then suspends, and is abandoned with the others.
    pub(crate) fn block_until_dispatched(&self, keep: Arc<Core>) -> bool {
        let fiber = Arc::as_ptr(&keep);
        let parker = &self.shared.parkers[self.index];
        loop {
            self.drain_inbox(self.own());
            let found = self
                .order
                .borrow_mut()
                .remove_woken(|core| Arc::as_ptr(core) == fiber);
            if let Some(core) = found {
                // SAFETY: we are the fiber's home worker and it goes on running in the current
                // resume; the dispatch that queued this reference emptied the cell.
                unsafe { core.lend() };
                return true;
            }
            if self.shared.is_shut_down() {
                // Shutdown may drop the queued reference; the fiber suspends for good, so its
                // `Core` must outlive every later use of `fiber`: it is kept for ever.
                std::mem::forget(keep);
                return false;
            }
            parker.park();
        }
    }

    /// Looks for work elsewhere, then sleeps. Returns when there may be work, or to stop.
    fn idle(&self, searching: &mut bool) {
        let idle = &self.shared.idle;
        if !*searching {
            idle.start_searching();
            *searching = true;
        }
        crate::diag::tick();
        let went_idle = Instant::now();
        let clock = SpinClock::new(went_idle, self.spin.next());
        loop {
            for _ in 0..LOOKS_PER_CLOCK {
                if self.stopping() || self.own_work_visible() {
                    self.spin.work_came_soon();
                    return;
                }
                for _ in 0..PAUSES_PER_LOOK {
                    hint::spin_loop();
                }
            }
            if self.work_visible() {
                self.spin.work_came_soon();
                return;
            }
            match clock.after_looks(Instant::now()) {
                AfterLooks::Spin => {}
                AfterLooks::YieldThread => std::thread::yield_now(),
                AfterLooks::Sleep => break,
            }
        }
        self.spin.spun_for_nothing();
        // An idle worker keeps no batch of stacks past the warm bound for a burst to come.
        let discarded = self.pool.borrow_mut().discard_batches();
        if discarded {
            self.publish_stacks();
        }
        if self.before_blocking() {
            return;
        }
        idle.prepare_sleep(self.index);
        *searching = false;
        let woken = if self.stopping()
            || self.work_visible()
            || crate::diag::before_sleep(&self.shared, self.index)
        {
            idle.cancel_sleep(self.index)
        } else {
            bump(&self.counters().idle_sleeps, 1);
            let parker = &self.shared.parkers[self.index];
            let woken = idle.sleep_on(self.index, parker);
            if parker.woken_after(went_idle) < SPIN_FOR {
                self.spin.work_came_soon();
            }
            self.shared.sysmon.worker_woke();
            self.shared.global.woke();
            crate::diag::tick();
            woken
        };
        *searching = woken == Woken::Searching;
    }

    /// Drops everything still queued here; the fibers are abandoned (see `Runtime`). Called
    /// once no worker runs fibers any more. A drop may run user code that wakes a fiber on this
    /// worker, so nothing is borrowed while one runs.
    pub(crate) fn abandon(&self) {
        let handed = &self.own().handoff;
        loop {
            let mut ready = self.order.borrow_mut().take_woken();
            ready.append(&mut self.yielded.borrow_mut());
            if ready.is_empty() && self.unstarted.is_empty() && handed.is_empty() {
                return;
            }
            for core in ready {
                contain("an abandoned fiber's drop", || drop(core));
            }
            while let Some(core) = self
                .unstarted
                .pop()
                .or_else(|| retry_steal(|| handed.steal()))
            {
                contain("an unstarted fiber's drop", || drop(core));
            }
        }
    }
}

/// Retries a steal while it asks to.
fn retry_steal(mut attempt: impl FnMut() -> Steal<Arc<Core>>) -> Option<Arc<Core>> {
    loop {
        match attempt() {
            Steal::Success(core) => return Some(core),
            Steal::Empty => return None,
            Steal::Retry => hint::spin_loop(),
        }
    }
}

/// Runs the scheduling loop of `local` on this thread until the runtime shuts down or
/// [`Local::request_stop`] is called.
///
/// A worker that leaves because of shutdown waits until every worker has left its loop, then
/// drops what is still queued; the caller of a loop that stopped for another reason calls
/// [`Local::abandon`] after shutdown.
pub(crate) fn run_worker(local: &Local) {
    let _alt_stack = AltStack::ensure();
    let _enter = EnterWorker::new(local);
    let _abort = AbortOnUnwind;
    // Tokio resources created or polled on this worker use the driver's reactor and timers.
    let _driver = local.shared.tokio.enter();
    local.shared.parkers[local.index].bind_current();
    local.shared.running.enter(local.index);
    local.shared.exit.enter();
    let own = local.own();
    let diag = local.shared.running.slot(local.index);
    let mut searching = false;
    while !local.stopping() {
        local.cancel_started_for_shutdown();
        let next = local.next_local(own, diag).or_else(|| local.steal());
        match next {
            Some(core) => {
                if mem::take(&mut searching) {
                    local.shared.idle.found_work(&local.shared.parkers);
                }
                local.run(core, diag);
            }
            None => local.idle(&mut searching),
        }
    }
    if searching {
        local.shared.idle.found_work(&local.shared.parkers);
    }
    local.shared.exit.leave();
    if local.shared.is_shut_down() {
        local.shared.exit.wait_all_out();
        local.abandon();
    }
}
