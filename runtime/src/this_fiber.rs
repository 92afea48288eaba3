//! Operations on the calling fiber: who it is, parking, yielding, safepoints.

use crate::diag::Published;
use crate::fiber::{Core, Fiber, Suspend};
use crate::sched::{running_ptr, with_running_charged, with_worker};
use crate::wait::{park_fiber_checking, running_fiber, suspend, Check, WaitKind, WaitSite};

/// The calling fiber's handle.
///
/// # Panics
///
/// Outside a fiber.
///
/// ```
/// fibra::run(|| {
///     let me = fibra::current();
///     assert_eq!(me.name(), Some("main"));
/// });
/// ```
#[track_caller]
pub fn current() -> Fiber {
    match running_fiber() {
        Some(fiber) => fiber,
        None => panic!("fibra::current() called outside a fiber"),
    }
}

/// Suspends the calling fiber until its unpark token is available, then consumes it
/// ([`std::thread::park`] semantics): an [`unpark`](Fiber::unpark) that came first makes this
/// return at once, and repeated unparks coalesce. Like `std::thread::park` it may return
/// without an unpark (rarely), so wait in a loop on a condition.
///
/// Only the fiber is suspended: its worker thread goes on running other fibers.
///
/// # Panics
///
/// Outside a fiber.
///
/// ```
/// fibra::run(|| {
///     fibra::current().unpark();
///     fibra::park(); // returns at once: the token was there
/// });
/// ```
#[track_caller]
pub fn park() {
    let site = WaitSite::new(WaitKind::Park, &());
    let Some(published) = Published::new(&site, false) else {
        panic!("fibra::park() called outside a fiber of a fibra runtime");
    };
    park_fiber_checking(Check::Before);
    let core = published.end();
    // The cancellation point after the wake comes once the wait has ended: unwinding from it
    // then has no cleanup to run in this frame, and each cleanup on the way costs the unwinder
    // a restart (about a seventh of a cancelled parked fiber's unwinding). It looks at the
    // fiber the wait was published for, which saves reading the thread's state again after
    // the switch back.
    // SAFETY: `core` is the running fiber's `Core` (this fiber's), alive while it runs.
    crate::cancel::check_fiber(unsafe { &*core });
}

/// Lets the other fibers of the caller's worker run, then goes on: for a fiber that computes
/// for long without reaching a wait, so that the fibers sharing its worker are not starved.
/// Outside a fiber, yields the thread. Inside a hot loop, [`checkpoint`](crate::checkpoint) is
/// cheaper: it yields only once the fiber's slice is used up.
///
/// # Order
///
/// Every other runnable fiber of the worker runs before the caller runs again: first the
/// fibers woken before the call and the fibers spawned on this worker that have not started
/// yet, in the order described under [`spawn`](crate::spawn) (the caller's own spawns since it
/// last suspended start first, as the newest batch), then the fibers that yielded earlier;
/// fibers that yield take turns in the order they yielded.
///
/// A fiber that yields is not woken early by wakes or spawns that come after its call, but
/// neither does a steady stream of them keep it waiting for ever: every few dozen scheduling
/// steps the oldest yielder runs regardless.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let order = fibra::Runtime::builder().workers(1).build().unwrap().block_on(|| {
///     let order = Arc::new(Mutex::new(Vec::new()));
///     let children: Vec<_> = (0..3)
///         .map(|i| {
///             let log = order.clone();
///             let child = fibra::spawn(move || log.lock().unwrap().push(format!("child {i}")));
///             // The child starts before this fiber runs again.
///             fibra::yield_now();
///             order.lock().unwrap().push(format!("parent {i}"));
///             child
///         })
///         .collect();
///     children.into_iter().for_each(|child| child.join().unwrap());
///     Arc::try_unwrap(order).unwrap().into_inner().unwrap()
/// });
/// assert_eq!(order, ["child 0", "parent 0", "child 1", "parent 1", "child 2", "parent 2"]);
/// ```
pub fn yield_now() {
    yield_as(Suspend::Yield);
}

/// Suspends the calling fiber to run again as `why` says (a yield or a retry), or yields the
/// thread outside a fiber.
pub(crate) fn yield_as(why: Suspend) {
    match running_ptr() {
        Some(fiber) => suspend(fiber, why),
        None => std::thread::yield_now(),
    }
}

/// A cheap safepoint for long computations: a cancellation point, costs one reduction, and
/// yields when the fiber's slice is used up. Outside a fiber it does nothing.
///
/// ```
/// fibra::run(|| {
///     let mut sum = 0u64;
///     for i in 0..100_000 {
///         sum += i;
///         fibra::checkpoint();
///     }
///     assert_eq!(sum, 4_999_950_000);
/// });
/// ```
#[inline]
pub fn checkpoint() {
    // Channel and lock operations call this once each, so the common case is kept to one
    // thread-local access (fiber and budget together) and one load (the cancel hint).
    let fiber = with_running_charged(|core, spent| match core {
        Some(core) => {
            let preempted = crate::cancel::check_fiber(core);
            // Taken out so no reference to the `Core` is held across the switch.
            (spent | preempted).then_some(core as *const Core)
        }
        None => {
            crate::cancel::check_thread();
            None
        }
    });
    if let Some(fiber) = fiber {
        suspend(fiber, Suspend::Yield);
        // A cancellation that came while the fiber waited for its next slice: it must not run
        // on past the cancellation point it stopped at.
        // SAFETY: `fiber` is the running fiber's `Core`, alive while it runs, and it runs again.
        crate::cancel::check_fiber(unsafe { &*fiber });
    }
}

/// The index of the worker the caller runs on (0 is the thread that called `run`), if any.
///
/// A started fiber stays on one worker, so inside a fiber this never changes.
///
/// ```
/// assert_eq!(fibra::current_worker(), None);
/// fibra::run(|| assert_eq!(fibra::current_worker(), Some(0)));
/// ```
pub fn current_worker() -> Option<usize> {
    with_worker(|local| local.map(|local| local.index()))
}
