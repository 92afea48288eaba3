//! A fiber's cancel hint: one flag that lets a cancellation point skip the fiber's context in
//! the common case. False guarantees that the fiber's innermost scope is not cancelled; true
//! only means "look" (the fiber may have left the scope that raised it).
//!
//! The protocol, for a fiber whose innermost scope is S (and which has joined S):
//! - a canceller marks S cancelled, then [`raise`](CancelHint::raise)s the hint of every member;
//! - the fiber, to find out whether the hint is stale, [`take`](CancelHint::take)s it and only
//!   then looks at S, raising it again if S is cancelled.
//!
//! Whichever order a raise and a take land in, the cancellation is not lost: a raise after the
//! take leaves the hint up, and a raise before it is acquired by the take, so the look that
//! follows sees S marked. Every write is a read-modify-write so that a take which reads a later
//! raiser's value still synchronises with the earlier ones (their release sequences go on
//! through RMWs only). Model-checked in `hint/loom_tests.rs`.

use crate::loom::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct CancelHint(AtomicBool);

impl CancelHint {
    pub(crate) fn new() -> CancelHint {
        CancelHint(AtomicBool::new(false))
    }

    /// Whether the fiber must look at its scope.
    #[inline]
    pub(crate) fn is_raised(&self) -> bool {
        // Relaxed is enough: true only sends the caller to `take`, which acquires. A canceller
        // that raised the hint and then woke the fiber happens-before the fiber's next load,
        // which by coherence sees that raise (or a later take by the fiber itself).
        self.0.load(Ordering::Relaxed)
    }

    /// Raises the hint, after marking a scope the fiber is in.
    pub(crate) fn raise(&self) {
        self.0.fetch_or(true, Ordering::Release);
    }

    /// Lowers the hint, for the fiber about to look at its scope itself.
    pub(crate) fn take(&self) {
        self.0.swap(false, Ordering::Acquire);
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
