//! Carrying a `!Send` entry for a fiber that is pinned to one worker from its creation.

use crate::fiber::Core;
use crate::stack::StackError;
use std::mem::{self, ManuallyDrop};
use std::thread::{self, ThreadId};

/// An entry that must run, and be dropped, on the thread that created it.
pub(crate) struct Pinned<F> {
    f: ManuallyDrop<F>,
    thread: ThreadId,
}

// SAFETY: the wrapped value is only ever used on `thread`: `call` asserts it before touching
// it, and `drop` leaks it instead of dropping it anywhere else. Moving the (unused) bytes
// between threads is harmless.
unsafe impl<F> Send for Pinned<F> {}

impl<F: FnOnce(Result<(), StackError>, *const Core)> Pinned<F> {
    pub(crate) fn new(f: F) -> Pinned<F> {
        Pinned {
            f: ManuallyDrop::new(f),
            thread: thread::current().id(),
        }
    }

    /// The entry's closure (see `Entry`); the fiber must be placed on the calling worker.
    pub(crate) fn into_entry<'a>(
        self,
    ) -> impl FnOnce(Result<(), StackError>, *const Core) + Send + 'a
    where
        F: 'a,
    {
        move |start, core| self.call(start, core)
    }
    fn call(mut self, start: Result<(), StackError>, core: *const Core) {
        assert_eq!(
            thread::current().id(),
            self.thread,
            "a pinned fiber was started on another thread"
        );
        // SAFETY: `f` is taken exactly once, and `self` is forgotten right away so `drop` does
        // not see the emptied slot.
        let f = unsafe { ManuallyDrop::take(&mut self.f) };
        mem::forget(self);
        f(start, core);
    }
}

impl<F> Drop for Pinned<F> {
    fn drop(&mut self) {
        // Off its thread (an abandoned fiber whose last reference went elsewhere) the value is
        // leaked: dropping it there could race with state it shares with its thread.
        if thread::current().id() == self.thread {
            // SAFETY: `f` has not been taken (`call` forgets `self`), and is not used again.
            unsafe { ManuallyDrop::drop(&mut self.f) };
        }
    }
}
