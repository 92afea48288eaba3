//! How a scope knows its children are gone: a count of live child packets, and a wake of the
//! scope's owner by the child that takes it to zero.
//!
//! This carries the soundness of borrowing scopes: the owner may leave the scope (ending the
//! borrows its children were given) only after the count it reads is zero, and every child's
//! last use of borrowed data must happen before that read. The decrement is a release and the
//! owner's read an acquire, so those uses are visible as done.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct ChildCount(AtomicUsize);

impl ChildCount {
    pub(crate) fn new() -> ChildCount {
        ChildCount(AtomicUsize::new(0))
    }

    /// A child is about to be spawned (by the owner, before the child can exist).
    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// A child is gone; true for the one that was last, which must wake the owner.
    pub(crate) fn gone(&self) -> bool {
        // Release: the child's uses of borrowed data happen before the owner's acquire.
        self.0.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Whether every child is gone; once true, their uses of borrowed data are over.
    pub(crate) fn all_gone(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }

    /// Children alive now, for `Debug`.
    pub(crate) fn live(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
