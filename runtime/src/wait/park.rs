//! Blocking the current caller, fiber or plain thread, through one waker-shaped interface.
//!
//! In a fiber a park suspends the fiber (the thread goes on running other fibers); on any
//! other thread it parks the thread. Under loom the caller is a modelled thread, blocked on a
//! per-thread notification rather than its park token: loom's join also blocks through the
//! thread's park state, so a wake that arrives after its waiter saw its completion and moved on
//! to a join would look to loom like a join woken without its thread finishing.

use super::{WaitKind, WaitSite};
use crate::diag::{OutsideWait, Published};
use crate::fiber::{counted_running, Core, Fiber, Suspend};
use crate::latch::Park;
use crate::sched::{charge, running_ptr, with_running, with_running_charged, with_worker};
use fibra_driver::Deadline;
use fibra_driver::{HoldKind, Timer};
use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

/// Wakes a plain thread blocked in [`park_current`].
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    static THREAD_WAKER: Waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
}

/// A waker for the caller: the running fiber's, or else one that unparks the current thread.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// // The same code blocks a plain thread and, inside `run`, a fiber.
/// fn wait_for(flag: &Arc<AtomicBool>, waker_slot: &std::sync::Mutex<Option<std::task::Waker>>) {
///     while !flag.load(Ordering::Acquire) {
///         *waker_slot.lock().unwrap() = Some(fibra::wait::current_waker());
///         if flag.load(Ordering::Acquire) {
///             break;
///         }
///         fibra::wait::park_current();
///     }
/// }
///
/// let flag = Arc::new(AtomicBool::new(false));
/// let slot = Arc::new(std::sync::Mutex::new(None::<std::task::Waker>));
/// let (f, s) = (flag.clone(), slot.clone());
/// let setter = std::thread::spawn(move || {
///     f.store(true, Ordering::Release);
///     if let Some(waker) = s.lock().unwrap().take() {
///         waker.wake();
///     }
/// });
/// wait_for(&flag, &slot);
/// setter.join().unwrap();
/// ```
pub fn current_waker() -> Waker {
    #[cfg(loom)]
    return loom_waiter::current_waker();
    #[cfg_attr(loom, allow(unreachable_code))]
    match running_fiber() {
        // The fiber's waker is its unpark handle.
        Some(fiber) => Waker::from(fiber.0),
        None => THREAD_WAKER.with(Waker::clone),
    }
}

/// Runs `f` with a waker for the caller, borrowed when the caller is a fiber (no
/// reference-count traffic): the cheap form for a poll that will likely complete at once.
pub(crate) fn with_waker<R>(f: impl FnOnce(&Waker) -> R) -> R {
    match running_ptr() {
        Some(core) => {
            // SAFETY: the running fiber's `Core` is alive for the whole call (its worker lent a
            // reference for this resume), and the pointer is the one the worker made from its
            // `Arc` (`running_ptr`). The `Arc` made from the pointer is never dropped
            // (`ManuallyDrop`), so the count is unchanged; a clone of the waker increments it.
            let waker = ManuallyDrop::new(Waker::from(unsafe { Arc::from_raw(core) }));
            f(&waker)
        }
        None => THREAD_WAKER.with(|waker| f(waker)),
    }
}

/// Blocks the caller until [`current_waker`] is woken (or spuriously) or `deadline` (an
/// `Instant` or a [`Deadline`]) has passed: the fiber if the caller is one, else the thread.
/// A fiber's deadline goes on the driver's timer wheel (with a hold on the runtime) only if
/// the wait outlasts its worker's next look, and comes off when this returns.
///
/// ```
/// let start = std::time::Instant::now();
/// let deadline = start + std::time::Duration::from_millis(2);
/// fibra::run(|| {
///     while std::time::Instant::now() < deadline {
///         fibra::wait::park_current_until(deadline);
///     }
/// });
/// assert!(start.elapsed() >= std::time::Duration::from_millis(2));
/// ```
#[track_caller]
pub fn park_current_until(deadline: impl Into<Deadline>) {
    park_until(deadline.into(), Check::BeforeAndAfter, None);
}

/// [`park_current_until`] in a wait of `kind`, if one was named.
#[track_caller]
pub(crate) fn park_current_until_as(deadline: Deadline, kind: Option<WaitKind>) {
    park_until(deadline, Check::BeforeAndAfter, kind);
}

/// [`park_current_until`] in a wait of `kind`, if one was named, cancellable where `check`
/// says.
#[track_caller]
fn park_until(deadline: Deadline, check: Check, kind: Option<WaitKind>) {
    #[cfg(loom)]
    {
        // loom has no clock: the models never time out.
        let _ = (deadline, check, kind);
        return loom_waiter::park();
    }
    #[cfg_attr(loom, allow(unreachable_code))]
    if deadline.is_never() {
        // No timer (and no timer hold) for a wait that has no deadline.
        if !park_fiber_checking(check) {
            park_thread(None, kind);
        }
        return;
    }
    if !in_fiber() {
        park_thread(Some(deadline.remaining()), kind);
        return;
    }
    if deadline.has_passed() {
        // Still the reduction of a park, and its cancellation point where `check` has one, as
        // for a park that finds its token: a loop of them must be cancellable and let the
        // worker's other fibers run. A caller that made its own point (`Check::Never`) may not
        // unwind here: its wait may have been committed since.
        match check {
            Check::Never => charge_and_maybe_yield(),
            Check::Before | Check::BeforeAndAfter => crate::checkpoint(),
        }
        return;
    }
    park_fiber_with(
        check,
        Some(Timed {
            deadline,
            location: Location::caller(),
        }),
    );
}

/// The deadline of a fiber's park, and where the wait began.
#[derive(Clone, Copy)]
struct Timed {
    deadline: Deadline,
    location: &'static Location<'static>,
}

/// [`park_current`], recording for the fiber while it waits what it waits on and where (see
/// [`WaitSite`]): what [`dump`](crate::dump) shows, and, for a wait on a resource with a known
/// owner, an edge of the graph checked for deadlocks. The one way blocking primitives record
/// their waits; on a plain thread it is `park_current`.
///
/// ```
/// use fibra::wait::{WaitKind, WaitSite};
///
/// let waker = fibra::wait::current_waker();
/// waker.wake_by_ref();
/// let object = ();
/// fibra::wait::park_current_at(&WaitSite::new(WaitKind::Event, &object));
/// ```
pub fn park_current_at(site: &WaitSite<'_>) {
    #[cfg(loom)]
    {
        // loom models no fibers: nothing to record.
        let _ = site;
        return loom_waiter::park();
    }
    #[cfg_attr(loom, allow(unreachable_code))]
    let Some(_published) = Published::new(site, false) else {
        return park_thread(None, Some(site.kind()));
    };
    park_fiber();
}

/// [`park_current_until`], recording the wait as [`park_current_at`] does.
///
/// ```
/// use fibra::wait::{Deadline, WaitKind, WaitSite};
///
/// fibra::run(|| {
///     let object = ();
///     let site = WaitSite::new(WaitKind::Sleep, &object);
///     fibra::wait::park_current_until_at(Deadline::after(std::time::Duration::from_millis(1)), &site);
/// });
/// ```
pub fn park_current_until_at(deadline: impl Into<Deadline>, site: &WaitSite<'_>) {
    let deadline = deadline.into();
    let _published = Published::new(site, deadline.instant().is_some());
    park_until(deadline, Check::BeforeAndAfter, Some(site.kind()));
}

/// [`park_current_until_at`] whose wake-up is no cancellation point; the park still is one
/// before it suspends. For a caller that looks at its condition first once woken: a wait
/// that was satisfied returns its result even if a cancellation woke it too, and one that was
/// not parks again, unwinding there. The wait's outcome then does not depend on whether the
/// cancellation or the completion reached the fiber first.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use fibra::wait::{Deadline, WaitKind, WaitSite};
///
/// let token = fibra::CancelToken::new();
/// let done = AtomicBool::new(false);
/// let one_worker = fibra::Runtime::builder().workers(1).build().unwrap();
/// let waited = one_worker.block_on(|| {
///     let mut waited = false;
///     let scope = fibra::ScopeOptions::new().token(token.clone());
///     let _ = fibra::scope_with(scope, |s| {
///         let (me, token, done) = (fibra::current(), &token, &done);
///         // On the one worker the child runs once this fiber has parked.
///         s.spawn(move || {
///             // Both come before the waiter runs again: the completion is what it sees.
///             token.cancel();
///             done.store(true, Ordering::Release);
///             me.unpark();
///         });
///         let site = WaitSite::new(WaitKind::Event, &done);
///         while !done.load(Ordering::Acquire) {
///             fibra::wait::park_current_until_at_checked_before(Deadline::NEVER, &site);
///         }
///         waited = true;
///     });
///     waited
/// });
/// assert!(waited);
/// ```
#[track_caller]
pub fn park_current_until_at_checked_before(deadline: impl Into<Deadline>, site: &WaitSite<'_>) {
    let deadline = deadline.into();
    let _published = Published::new(site, deadline.instant().is_some());
    park_until(deadline, Check::Before, Some(site.kind()));
}

/// [`park_current_until_at_checked_before`] for a wait that another thread may commit while
/// it parks (a handoff begun, to be finished and then woken): a cancelled fiber unwinds only if
/// `may_unwind` returns true. `may_unwind` withdraws the wait, and returns false when the wait
/// was committed first: the fiber then parks on until the committing thread wakes it, and the
/// cancellation takes effect at the fiber's next cancellation point. `may_unwind` runs only
/// when the fiber's scope is cancelled, before the fiber suspends; a cancellation that comes
/// later wakes the fiber, and the caller, looking at its condition and parking again, asks
/// again.
///
/// ```
/// use std::sync::atomic::{AtomicU8, Ordering::{AcqRel, Acquire, Release}};
/// use fibra::wait::{Deadline, WaitKind, WaitSite};
///
/// const WAITING: u8 = 0;
/// const WITHDRAWN: u8 = 1;
/// const CLAIMED: u8 = 2;
/// const DELIVERED: u8 = 3;
/// let token = fibra::CancelToken::new();
/// let state = AtomicU8::new(WAITING);
/// let one_worker = fibra::Runtime::builder().workers(1).build().unwrap();
/// let (delivered, cancelled) = one_worker.block_on(|| {
///     fibra::scope(|s| {
///         let (me, token, state) = (fibra::current(), &token, &state);
///         // On the one worker the deliverer runs once the waiter has parked.
///         s.spawn(move || {
///             assert_eq!(state.compare_exchange(WAITING, CLAIMED, AcqRel, Acquire), Ok(WAITING));
///             token.cancel();
///             fibra::yield_now(); // the cancelled waiter finds its wait claimed and parks on
///             state.store(DELIVERED, Release);
///             me.unpark();
///         });
///         let mut delivered = false;
///         let scope = fibra::ScopeOptions::new().token(token.clone());
///         let cancelled = fibra::scope_with(scope, |_| {
///             let site = WaitSite::new(WaitKind::Event, state);
///             let withdraw = || state.compare_exchange(WAITING, WITHDRAWN, AcqRel, Acquire).is_ok();
///             while state.load(Acquire) != DELIVERED {
///                 fibra::wait::park_current_until_at_checked_if(Deadline::NEVER, &site, withdraw);
///             }
///             delivered = true;
///             fibra::checkpoint(); // the cancellation takes effect here
///         });
///         (delivered, cancelled.is_err())
///     })
/// });
/// assert_eq!((delivered, cancelled), (true, true));
/// ```
#[track_caller]
pub fn park_current_until_at_checked_if(
    deadline: impl Into<Deadline>,
    site: &WaitSite<'_>,
    may_unwind: impl FnOnce() -> bool,
) {
    crate::cancel::check_running_if(may_unwind);
    let deadline = deadline.into();
    let _published = Published::new(site, deadline.instant().is_some());
    park_until(deadline, Check::Never, Some(site.kind()));
}

/// A deadline of the running fiber on the driver's timer wheel, with its hold: the one way a
/// fiber's timed wait is timed. Dropping it deregisters the timer and releases the hold.
pub(crate) struct FiberTimer {
    timer: Timer,
    _hold: Option<fibra_driver::Hold>,
}

impl FiberTimer {
    /// # Panics
    ///
    /// Outside the driver's context (off a fibra worker).
    #[track_caller]
    pub(crate) fn at(deadline: Deadline) -> FiberTimer {
        FiberTimer::held(deadline, crate::holds::take(HoldKind::Timer))
    }

    /// A timer at `deadline` with `hold` (taken by the caller).
    ///
    /// # Panics
    ///
    /// As [`FiberTimer::at`].
    pub(crate) fn held(deadline: Deadline, hold: Option<fibra_driver::Hold>) -> FiberTimer {
        FiberTimer {
            timer: Timer::at(deadline),
            _hold: hold,
        }
    }

    /// Whether the deadline has passed; if not, the running fiber is woken when it does.
    pub(crate) fn expired(&mut self) -> bool {
        with_waker(|waker| self.expired_for(waker))
    }

    /// Whether the deadline has passed; if not, `waker` is woken when it does.
    pub(crate) fn expired_for(&mut self, waker: &Waker) -> bool {
        Pin::new(&mut self.timer)
            .poll(&mut Context::from_waker(waker))
            .is_ready()
    }
}

/// Whether the caller is a fiber (and [`park_current`] suspends only it).
///
/// ```
/// assert!(!fibra::wait::in_fiber());
/// fibra::run(|| assert!(fibra::wait::in_fiber()));
/// ```
pub fn in_fiber() -> bool {
    with_running(|core| core.is_some())
}

/// Blocks the caller until [`current_waker`] is woken (or spuriously): the fiber if the caller
/// is one, else the thread.
///
/// ```
/// let waker = fibra::wait::current_waker();
/// waker.wake_by_ref();
/// // The wake came first, so this returns at once.
/// fibra::wait::park_current();
/// ```
pub fn park_current() {
    #[cfg(loom)]
    return loom_waiter::park();
    #[cfg_attr(loom, allow(unreachable_code))]
    if !park_fiber() {
        park_thread(None, None);
    }
}

/// Blocks the calling thread, which runs no fiber, until it is unparked or `timeout` passes,
/// in a wait of `kind` if the caller named one: without a timeout, one that only a fiber or
/// another thread can end counts as blocked for the global deadlock check.
///
/// # Panics
///
/// On a driver's own thread, whose reactor and timers would stop with it: whatever the wait
/// waits for would never come if it needs one of them (tokio panics likewise when a task
/// blocks in `block_on`).
fn park_thread(timeout: Option<Duration>, kind: Option<WaitKind>) {
    assert!(
        !fibra_driver::on_driver_thread(),
        "fibra: a blocking fibra wait in a tokio task on fibra's driver thread, which runs every \
         timer and socket of the runtime and must never block (a tokio::spawn made in a fiber \
         runs its task there); await the wait's async form instead, or do the waiting in a \
         fiber (fibra::spawn)"
    );
    let _outside = (timeout.is_none() && kind.is_some_and(WaitKind::ended_by_callers_only))
        .then(OutsideWait::enter);
    match timeout {
        Some(timeout) => thread::park_timeout(timeout),
        None => thread::park(),
    }
}

/// Parks the running fiber. Returns false, doing nothing, outside a fiber.
pub(crate) fn park_fiber() -> bool {
    park_fiber_checking(Check::BeforeAndAfter)
}

/// Where a park is a cancellation point.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Before suspending and again once woken.
    BeforeAndAfter,
    /// Only before suspending: the caller looks at its condition first once woken, so a wait
    /// that was satisfied returns its result even if a cancellation woke it too.
    Before,
    /// Neither: the caller is its own cancellation point, made just before the park or
    /// looked at before its condition, so that a wait committed meanwhile (a channel's
    /// handoff under way, a scoped child's panic that cancels its joiner as it stores its
    /// result) is not unwound. A cancellation that comes later wakes the park.
    Never,
}

/// [`park_fiber`], cancellable where `check` says.
pub(crate) fn park_fiber_checking(check: Check) -> bool {
    park_fiber_with(check, None)
}

/// [`park_fiber_checking`], woken at the latest at `timed`'s deadline (see `lazy_timer`).
fn park_fiber_with(check: Check, timed: Option<Timed>) -> bool {
    let Some(fiber) = running_ptr() else {
        return false;
    };
    if check != Check::Never {
        // SAFETY: the running fiber's `Core` is alive while it runs (see `park_noted`).
        crate::cancel::check_fiber(unsafe { &*fiber });
    }
    // SAFETY: the running fiber's `Core` is alive while it runs (see `park_noted`).
    let to_list = crate::diag::check_due(unsafe { &*fiber });
    if to_list || timed.is_some() || thread::panicking() {
        park_noted(fiber, check, timed, to_list);
    } else {
        // Most parks: nothing to note for the worker, nothing counted to keep the `Core`.
        // SAFETY: as above; only the pointer is held across the suspension.
        match unsafe { (*fiber).latch.prepare_park() } {
            Park::Suspend => {
                suspend(fiber, Suspend::Park);
                // SAFETY: as above: we run again, so the worker lent the reference again.
                unsafe { (*fiber).latch.resumed() };
                after_wake(fiber, check);
            }
            Park::Consumed => consumed(),
        }
    }
    true
}

/// [`park_fiber_with`] for the running fiber `fiber` when the park is noted somewhere: listed
/// for a cycle check (`to_list`), timed, or made while unwinding.
#[inline(never)]
fn park_noted(fiber: *const Core, check: Check, timed: Option<Timed>, to_list: bool) {
    // A cycle check for this park lists the fiber with its worker, and a deadline notes the
    // park; each holds a reference, counted while the fiber still runs: once it has committed
    // to park, a wake may take the reference its worker lent it.
    // SAFETY: `fiber` is the running fiber's, which has not committed to park yet.
    let counted = || unsafe { counted_running(fiber) };
    let for_check = to_list.then(counted);
    let for_timer = timed.map(|timed| (counted(), timed));
    // An unwinding fiber blocks its thread instead of suspending (see below), and keeps a
    // reference of its own meanwhile, for the same reason.
    let for_block = thread::panicking().then(counted);
    // SAFETY: the running fiber's `Core` is kept alive by the reference its worker lent it
    // for this resume, and again for the resume that follows a park; only the pointer, never a
    // reference, is held across the suspension.
    match unsafe { (*fiber).latch.prepare_park() } {
        Park::Suspend => {
            let timer = (for_check.is_some() || for_timer.is_some())
                .then(|| {
                    with_worker(|local| {
                        let local = local.expect("a fiber runs on a worker");
                        if let Some(core) = for_check {
                            local.checks().list(core);
                        }
                        for_timer.map(|(core, timed)| {
                            local.timers().note(timed.deadline, timed.location, core)
                        })
                    })
                })
                .flatten();
            // A fiber that is unwinding must not let other fibers run on its thread: they
            // would see `std::thread::panicking()` (cancellation points would stop unwinding,
            // std mutexes they unlock would be poisoned). It blocks the thread instead, with
            // its deadline armed and its cycle check run: the worker's loop, which would do
            // both, does not run then.
            let blocked = for_block.is_some_and(|keep| {
                with_worker(|local| {
                    let local = local.expect("a fiber runs on a worker");
                    // A fiber woken here is found by the block below.
                    let _ = local.before_blocking();
                    local.block_until_dispatched(keep)
                })
            });
            if !blocked {
                suspend(fiber, Suspend::Park);
            }
            // SAFETY: as above: we run again, so the worker lent the reference again.
            unsafe { (*fiber).latch.resumed() };
            if let Some(key) = timer {
                with_worker(|local| {
                    local.expect("a fiber runs on a worker").timers().end(key);
                });
            }
            after_wake(fiber, check);
        }
        Park::Consumed => consumed(),
    }
}

/// The running fiber `fiber` runs again after a park: the deadlock check's verdict and, where
/// `check` says, the cancellation point.
#[inline]
fn after_wake(fiber: *const Core, check: Check) {
    // A deadlock check found this fiber in a deadlock under `Deadlock::Panic`.
    // SAFETY: `fiber` is the running fiber's, alive while it runs.
    crate::diag::unwind_if_doomed(unsafe { &*fiber });
    if check == Check::BeforeAndAfter {
        // Woken, perhaps by a cancellation of our scope (which raised the hint before the
        // wake).
        // SAFETY: as above.
        crate::cancel::check_fiber(unsafe { &*fiber });
    }
}

/// A park that found its token: the fiber runs on, ending its slice if it is used up.
#[inline]
fn consumed() {
    if charge() {
        yield_fiber();
    }
}

/// Ends a runtime operation that is no cancellation point (a spawn): charges its reduction,
/// and yields if that used up the slice or the monitor has asked the fiber to yield.
pub(crate) fn charge_and_maybe_yield() {
    let yields = with_running_charged(|core, spent| {
        spent | core.is_some_and(crate::cancel::take_yield_request)
    });
    if yields {
        yield_fiber();
    }
}

/// Moves the running fiber to the back of its worker's ready queue.
fn yield_fiber() {
    let fiber = running_ptr().expect("yield outside a fiber");
    suspend(fiber, Suspend::Yield);
}

/// Hands control from the running fiber, whose `Core` is `fiber`, to its worker. No reference
/// to the `Core` is held across the switch: while a fiber is parked its `Core` may go away for
/// good (see `Core::unpark`), and then the coroutine is never resumed.
pub(crate) fn suspend(fiber: *const Core, why: Suspend) {
    if why != Suspend::Park && thread::panicking() {
        // An unwinding fiber keeps its thread (see `park_fiber`).
        return;
    }
    // SAFETY: `fiber` is the running fiber's `Core`, alive while it runs (its worker lent it a
    // reference for this resume); the reference ends before the switch.
    let yielder = unsafe {
        (*fiber).note_suspend();
        (*fiber).yielder()
    };
    assert!(
        !yielder.is_null(),
        "suspend before the fiber's coroutine started"
    );
    // SAFETY: the yielder lives on the running coroutine's stack, which is the stack we are on;
    // that memory stays mapped at least until the coroutine finishes (a coroutine that never
    // resumes keeps its stack forever).
    unsafe { (*yielder).suspend(why) };
}

/// The running fiber's handle, if the caller is a fiber.
pub(crate) fn running_fiber() -> Option<Fiber> {
    // SAFETY: `core` is the running fiber's.
    running_ptr().map(|core| Fiber(unsafe { counted_running(core) }))
}

/// The loom model of a waiting caller (see the module docs).
#[cfg(loom)]
mod loom_waiter {
    use loom::sync::Notify;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Notifier(Arc<Notify>);

    impl Wake for Notifier {
        fn wake(self: Arc<Self>) {
            self.0.notify();
        }
    }

    loom::thread_local! {
        static NOTIFY: Arc<Notify> = Arc::new(Notify::new());
    }

    pub(super) fn current_waker() -> Waker {
        Waker::from(Arc::new(Notifier(NOTIFY.with(Arc::clone))))
    }

    /// Blocks the loom thread until its waker is woken (a wake that came first counts).
    pub(super) fn park() {
        NOTIFY.with(|notify| notify.wait());
    }
}
