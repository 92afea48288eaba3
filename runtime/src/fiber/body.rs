//! What a fiber runs, in each phase of its life.

use super::Core;
use crate::erased::Erased;
use crate::stack::{PooledStack, StackError, StackTicket};
use std::mem::ManuallyDrop;

/// Why a fiber handed control back to its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suspend {
    /// Its latch is `WAITING`; whoever wins the dispatch re-queues it.
    Park,
    /// It wants to go to the back of the ready queue.
    Yield,
    /// It retries a blocked operation: it runs again after the fibers woken on its worker, as
    /// if woken itself (see `wait::RetryBudget`).
    Retry,
}

pub(crate) type Yielder = corosensei::Yielder<(), Suspend>;
pub(crate) type Coroutine = corosensei::Coroutine<(), Suspend, (), PooledStack>;

/// A fiber's whole job: called once, on the fiber's stack with `Ok(())`, or on the worker's
/// own stack with the error when no stack could be had (it then reports the failure to the
/// joiner without running user code); either way with a pointer to the fiber's own `Core`,
/// where its result goes, which is alive whenever the entry runs (its worker holds it) but
/// may be gone while the fiber is suspended, so it is not a reference.
///
/// The closure is kept in the entry itself (and so in the fiber's `Core`) when it fits in a
/// few words, as a spawn's closure with a few captures does; a bigger one is boxed.
pub(crate) struct Entry {
    closure: Erased,
    /// Takes the closure out of `closure` and calls it.
    call: unsafe fn(Erased, Result<(), StackError>, *const Core),
}

// SAFETY: an `Entry` is made only from a `Send` closure, which it owns.
unsafe impl Send for Entry {}

impl Entry {
    pub(crate) fn new<F>(f: F) -> Entry
    where
        F: FnOnce(Result<(), StackError>, *const Core) + Send + 'static,
    {
        // SAFETY: `F` borrows nothing.
        unsafe { Entry::new_unchecked(f) }
    }

    /// An entry for a closure that may borrow.
    ///
    /// # Safety
    ///
    /// Whatever `f` borrows outlives the entry's call or drop, whichever comes.
    pub(crate) unsafe fn new_unchecked<'a, F>(f: F) -> Entry
    where
        F: FnOnce(Result<(), StackError>, *const Core) + Send + 'a,
    {
        Entry {
            // SAFETY: the borrows are the caller's promise.
            closure: unsafe { Erased::new(f) },
            call: call_erased::<F>,
        }
    }

    /// Runs the fiber's job (see the type's docs) for `core`, the fiber it belongs to.
    pub(crate) fn call(self, start: Result<(), StackError>, core: *const Core) {
        // SAFETY: `call` was made for the closure's type, together with `closure`.
        unsafe { (self.call)(self.closure, start, core) }
    }
}

/// # Safety
///
/// `closure` holds an `F`.
unsafe fn call_erased<F: FnOnce(Result<(), StackError>, *const Core)>(
    closure: Erased,
    start: Result<(), StackError>,
    core: *const Core,
) {
    // SAFETY: per the contract.
    let f = unsafe { closure.take::<F>() };
    f(start, core);
}

pub(crate) enum Body {
    Unstarted(Entry, StackTicket),
    /// Started and suspended (or running). Never dropped: see `Core`'s `Send` impl.
    Running(ManuallyDrop<Coroutine>, StackTicket),
    Done,
}
