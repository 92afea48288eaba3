//! What a fiber runs, in each phase of its life.

use crate::stack::{PooledStack, StackError, StackTicket};
use std::mem::ManuallyDrop;

/// Why a fiber handed control back to its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suspend {
    /// Its latch is `WAITING`; whoever wins the dispatch re-queues it.
    Park,
    /// It wants to go to the back of the ready queue.
    Yield,
}

pub(crate) type Yielder = corosensei::Yielder<(), Suspend>;
pub(crate) type Coroutine = corosensei::Coroutine<(), Suspend, (), PooledStack>;

/// A fiber's whole job: called once, on the fiber's stack with `Ok(())`, or on the worker's
/// own stack with the error when no stack could be had (it then reports the failure to the
/// joiner without running user code).
pub(crate) type Entry = Box<dyn FnOnce(Result<(), StackError>) + Send>;

pub(crate) enum Body {
    Unstarted(Entry, StackTicket),
    /// Started and suspended (or running). Never dropped: see `Core`'s `Send` impl.
    Running(ManuallyDrop<Coroutine>, StackTicket),
    Done,
}
