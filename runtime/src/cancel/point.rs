//! Cancellation points, shields, and the private unwind payload.

use super::{CancelCause, Cancelled};
use crate::fiber::Core;
use crate::fiber_ctx::{self, FiberCtx};
use crate::sched::with_running;
use std::any::Any;
use std::panic;

/// The payload a cancelled fiber unwinds with.
pub(crate) struct Cancellation {
    /// The scope whose cancellation this is: its `scope_with` stops the unwind.
    pub(crate) origin: u64,
    pub(crate) cause: CancelCause,
}

/// The origin of the cancellation that unwinds every fiber at shutdown: no scope's id, so no
/// `scope_with` stops it.
const SHUTDOWN: (u64, CancelCause) = (0, CancelCause::Shutdown);

/// The caller's pending cancellation, unless shielded.
fn pending() -> Option<(u64, CancelCause)> {
    let skip = with_running(|core| match core {
        Some(core) => !core.cancel_hint.is_raised(),
        None => !fiber_ctx::thread_has_scope(),
    });
    if skip {
        return None;
    }
    let shutting_down = with_running(|core| core.is_some_and(|core| core.shared.is_unwinding()));
    fiber_ctx::with(|ctx| pending_in(ctx, shutting_down))
}

/// The cancellation of `ctx`'s scope, or the shutdown's when `shutting_down`, unless shielded.
fn pending_in(ctx: &FiberCtx, shutting_down: bool) -> Option<(u64, CancelCause)> {
    let pending = ctx
        .cancel
        .as_ref()
        .and_then(|scope| scope.cancelled())
        .or(shutting_down.then_some(SHUTDOWN))?;
    if ctx.holds_unwinds() {
        return None;
    }
    Some(pending)
}

/// A cancellation point of the running fiber, `core`: unwinds if its scope is cancelled.
///
/// The common case (no cancellation) is one load of the fiber's cancel hint; shields, panics
/// and the scope itself are looked at only when the hint is up. The monitor raises the hint
/// too, to ask a fiber that has run too long to yield: then its slice is ended (the next
/// reduction charged yields), and this returns true, for the caller to yield at once.
#[inline]
pub(crate) fn check_fiber(core: &Core) -> bool {
    core.cancel_hint.is_raised() && check_hinted(core)
}

/// A cancellation point of the running fiber, if the caller is one, at which it unwinds only
/// if `may_unwind` agrees: for a wait whose outcome another thread may commit meanwhile.
/// `may_unwind` runs only when the fiber's scope is cancelled (otherwise this is one load of
/// the hint), and not while the fiber's `Core` is borrowed; when it returns false the
/// cancellation stays pending, its hint up, for the fiber's next cancellation point.
#[inline]
pub(crate) fn check_running_if(may_unwind: impl FnOnce() -> bool) {
    let pending = with_running(|core| {
        core.filter(|core| core.cancel_hint.is_raised())
            .and_then(pending_hinted)
    });
    if let Some(pending) = pending {
        if may_unwind() {
            unwind(pending);
        }
    }
}

/// The cancellation of `core`, whose hint is up, without unwinding.
#[cold]
#[inline(never)]
fn pending_hinted(core: &Core) -> Option<(u64, CancelCause)> {
    retake_hint(core).1
}

#[cold]
#[inline(never)]
fn check_hinted(core: &Core) -> bool {
    let (preempted, pending) = retake_hint(core);
    if let Some(pending) = pending {
        unwind(pending);
    }
    preempted
}

/// Takes `core`'s raised hint and the monitor's request to yield (ending the slice if there
/// was one), and raises the hint again if the fiber's scope is still cancelled. Returns whether
/// the monitor had asked, and the cancellation to unwind with, if any.
fn retake_hint(core: &Core) -> (bool, Option<(u64, CancelCause)>) {
    // The hint may be stale (the fiber left the cancelled scope, or unwound and caught it).
    // Clear it before looking at the scope, so a cancellation racing with this either shows
    // in the look or raises the hint again.
    core.cancel_hint.take();
    let preempted = core.diag.take_preempt();
    if preempted {
        crate::sched::end_slice();
    }
    let ctx = core.ctx.borrow();
    let shutting_down = core.shared.is_unwinding();
    if !shutting_down
        && ctx
            .cancel
            .as_ref()
            .and_then(|scope| scope.cancelled())
            .is_none()
    {
        return (preempted, None);
    }
    // Still cancelled: later points must take this path too, whether or not this one
    // unwinds.
    core.cancel_hint.raise();
    (preempted, pending_in(&ctx, shutting_down))
}

/// Whether the monitor has asked the running fiber, `core`, to yield since it last looked: for
/// a runtime operation that is no cancellation point (a spawn). A cancellation found on the
/// way is left pending, its hint up, for the fiber's next cancellation point.
#[inline]
pub(crate) fn take_yield_request(core: &Core) -> bool {
    core.cancel_hint.is_raised() && retake_hint(core).0
}

/// As [`check_current`], except that a fiber looks at its scope even with its hint down: for
/// a caller that has just seen a fiber of its own subtree end cancelled (a join, a race, a
/// map). The tree marks a whole subtree before it raises any member's hint, so that fiber can
/// have unwound and ended while the caller's scope is marked and its hint not yet up.
pub(crate) fn check_current_scope() {
    if !with_running(|core| core.map(check_hinted).is_some()) {
        check_thread();
    }
}

/// Whether the scope of `core`, which has not started, is cancelled already: the fiber is then
/// dropped unstarted (its closure is dropped without running, and no stack is taken for it).
/// Called by the worker that holds the fiber for starting, the one thread that may look at
/// its context; shutdown is the caller's to look at.
#[inline]
pub(crate) fn cancelled_unstarted(core: &Core) -> bool {
    // The hint is raised for every member of a scope the tree marks, and by the spawn for a
    // scope marked before the fiber joined it; a stale raise is only looked through.
    core.cancel_hint.is_raised() && pending_in(&core.ctx.borrow(), false).is_some()
}

/// A cancellation point of a plain thread (or a worker outside its fibers).
#[inline]
pub(crate) fn check_thread() {
    // Only a thread that has a cancel scope can be cancelled; looking this up first keeps
    // the thread's context (and its lazy initialisation) off the path of every other one.
    if fiber_ctx::thread_has_scope() {
        check_thread_scoped();
    }
}

/// A cancellation point of the caller, fiber or thread.
pub(crate) fn check_current() {
    let hinted = with_running(|core| match core {
        Some(core) => {
            check_fiber(core);
            true
        }
        None => false,
    });
    if !hinted {
        check_thread();
    }
}

#[cold]
#[inline(never)]
fn check_thread_scoped() {
    if let Some(pending) = fiber_ctx::with(|ctx| pending_in(ctx, false)) {
        unwind(pending);
    }
}

/// Inlined into its callers, which are cold: one frame fewer for the unwinder to walk, in
/// both of its passes, on every cancellation.
#[inline(always)]
fn unwind((origin, cause): (u64, CancelCause)) -> ! {
    if cfg!(panic = "abort") {
        eprintln!(
            "fibra: cancellation needs panic = \"unwind\" to unwind the cancelled fiber; aborting"
        );
        std::process::abort();
    }
    panic::resume_unwind(Box::new(Cancellation { origin, cause }));
}

/// Runs `f` with cancellation points disabled, for cleanup that must finish: a cancellation
/// that arrives meanwhile takes effect at the first point after `f`.
///
/// ```
/// let token = fibra::CancelToken::new();
/// token.cancel();
/// let outcome = fibra::run(|| {
///     fibra::scope_with(fibra::ScopeOptions::new().token(token), |_| {
///         let cleaned = fibra::shield(|| {
///             fibra::sleep(std::time::Duration::from_millis(1));
///             true
///         });
///         assert!(cleaned);
///         fibra::checkpoint(); // unwinds here
///         unreachable!()
///     })
/// });
/// assert!(outcome.is_err());
/// ```
pub fn shield<R>(f: impl FnOnce() -> R) -> R {
    struct Unshield;
    impl Drop for Unshield {
        fn drop(&mut self) {
            fiber_ctx::with(|ctx| ctx.shield -= 1);
        }
    }
    fiber_ctx::with(|ctx| ctx.shield += 1);
    let _unshield = Unshield;
    f()
}

/// Whether the caller's scope has been cancelled (and the caller is not shielded).
///
/// ```
/// fibra::run(|| assert!(!fibra::is_cancelled()));
/// ```
pub fn is_cancelled() -> bool {
    pending().is_some()
}

/// `Err` if the caller's scope has been cancelled (and the caller is not shielded), for loops
/// that prefer to stop on their own terms.
///
/// # Errors
///
/// [`Cancelled`] with the cause.
///
/// ```
/// fibra::run(|| assert!(fibra::check_cancel().is_ok()));
/// ```
pub fn check_cancel() -> Result<(), Cancelled> {
    match pending() {
        Some((_, cause)) => Err(Cancelled { cause }),
        None => Ok(()),
    }
}

/// Whether a caught panic payload is fibra's cancellation, which the catcher must re-raise
/// with [`std::panic::resume_unwind`].
///
/// ```
/// let token = fibra::CancelToken::new();
/// token.cancel();
/// let _ = fibra::run(|| {
///     fibra::scope_with(fibra::ScopeOptions::new().token(token), |_| {
///         let caught = std::panic::catch_unwind(|| fibra::checkpoint()).unwrap_err();
///         assert!(fibra::is_cancellation(&*caught));
///         std::panic::resume_unwind(caught);
///     })
/// });
/// ```
pub fn is_cancellation(payload: &(dyn Any + Send)) -> bool {
    payload.is::<Cancellation>()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::cancel::{CancelCause, CancelScope, CancelToken, ScopeOptions};

    #[test]
    fn a_stale_hint_does_not_unwind_and_is_cleared_by_the_slow_path() {
        crate::run(|| {
            let me = crate::current();
            // A scope the fiber is a member of but not in: as after leaving it.
            let left = CancelScope::new(None);
            left.join(&me.0);
            left.cancel(CancelCause::Internal);
            assert!(me.0.cancel_hint.is_raised());
            assert!(!crate::is_cancelled());
            crate::checkpoint();
            assert!(!me.0.cancel_hint.is_raised());
        });
    }

    #[test]
    fn leaving_a_cancelled_scope_clears_the_hint() {
        crate::run(|| {
            let me = crate::current();
            let token = CancelToken::new();
            token.cancel();
            let inner = crate::scope_with(ScopeOptions::new().token(token), |_| {
                assert!(me.0.cancel_hint.is_raised());
                crate::checkpoint();
            });
            assert!(inner.is_err());
            assert!(
                !me.0.cancel_hint.is_raised(),
                "no slow path for the outer scope"
            );
        });
    }
}
