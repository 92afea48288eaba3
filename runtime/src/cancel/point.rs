//! Cancellation points, shields, and the private unwind payload.

use super::{CancelCause, Cancelled};
use crate::ctx::{self, FiberCtx};
use std::any::Any;
use std::panic;

/// The payload a cancelled fiber unwinds with.
pub(crate) struct Cancellation {
    /// The scope whose cancellation this is: its `scope_with` stops the unwind.
    pub(crate) origin: u64,
    pub(crate) cause: CancelCause,
}

/// The caller's pending cancellation, unless shielded.
fn pending() -> Option<(u64, CancelCause)> {
    ctx::with(|ctx| pending_in(ctx))
}

fn pending_in(ctx: &FiberCtx) -> Option<(u64, CancelCause)> {
    // A destructor that blocks while its thread already unwinds (cancelled or panicking) must
    // not start a second unwind, which would abort the process.
    if ctx.shield > 0 || std::thread::panicking() {
        return None;
    }
    ctx.cancel.as_ref()?.cancelled()
}

/// A cancellation point: unwinds if the caller's scope is cancelled.
pub(crate) fn check() {
    if let Some(pending) = pending() {
        unwind(pending);
    }
}

/// [`check`] for a caller that holds its fiber's context already (the park path).
pub(crate) fn check_in(ctx: &FiberCtx) {
    if let Some(pending) = pending_in(ctx) {
        unwind(pending);
    }
}

#[cold]
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
/// let token = fibra_runtime::CancelToken::new();
/// token.cancel();
/// let outcome = fibra_runtime::run(|| {
///     fibra_runtime::scope_with(fibra_runtime::ScopeOptions::new().token(token), |_| {
///         let cleaned = fibra_runtime::shield(|| {
///             fibra_runtime::sleep(std::time::Duration::from_millis(1));
///             true
///         });
///         assert!(cleaned);
///         fibra_runtime::checkpoint(); // unwinds here
///         unreachable!()
///     })
/// });
/// assert!(outcome.is_err());
/// ```
pub fn shield<R>(f: impl FnOnce() -> R) -> R {
    struct Unshield;
    impl Drop for Unshield {
        fn drop(&mut self) {
            ctx::with(|ctx| ctx.shield -= 1);
        }
    }
    ctx::with(|ctx| ctx.shield += 1);
    let _unshield = Unshield;
    f()
}

/// Whether the caller's scope has been cancelled (and the caller is not shielded).
///
/// ```
/// fibra_runtime::run(|| assert!(!fibra_runtime::is_cancelled()));
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
/// fibra_runtime::run(|| assert!(fibra_runtime::check_cancel().is_ok()));
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
/// let token = fibra_runtime::CancelToken::new();
/// token.cancel();
/// let _ = fibra_runtime::run(|| {
///     fibra_runtime::scope_with(fibra_runtime::ScopeOptions::new().token(token), |_| {
///         let caught = std::panic::catch_unwind(|| fibra_runtime::checkpoint()).unwrap_err();
///         assert!(fibra_runtime::is_cancellation(&*caught));
///         std::panic::resume_unwind(caught);
///     })
/// });
/// ```
pub fn is_cancellation(payload: &(dyn Any + Send)) -> bool {
    payload.is::<Cancellation>()
}
