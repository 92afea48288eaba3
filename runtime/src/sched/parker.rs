//! A worker thread's sleep: `std::thread::park` semantics (a token; unpark-before-park returns at
//! once; unparks coalesce), where an unpark only makes a system call when the worker really
//! sleeps. The thread itself sleeps in `thread::park`, registered when it starts its loop.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::sync::Mutex;
use crate::loom::thread;

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

#[derive(Debug)]
pub(crate) struct Parker {
    state: AtomicUsize,
    /// The sleeping thread; set by it before it first moves to PARKED.
    thread: Mutex<Option<thread::Thread>>,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            state: AtomicUsize::new(EMPTY),
            thread: Mutex::new(None),
        }
    }

    /// Binds the parker to the calling thread, the only one that may `park` on it.
    pub(crate) fn bind_current(&self) {
        *self.thread.lock().expect("parker lock poisoned") = Some(thread::current());
    }

    /// Blocks until a token is available, then consumes it.
    ///
    /// # Panics
    ///
    /// If `bind_current` was not called first.
    pub(crate) fn park(&self) {
        // SeqCst: the token swap and the owner's re-check of its queues take part in the same
        // total order as the wakers' pushes (see `Idle`).
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
        assert!(
            self.thread.lock().expect("parker lock poisoned").is_some(),
            "a parker parks before it is bound to its thread"
        );
        if let Err(actual) =
            self.state
                .compare_exchange(EMPTY, PARKED, Ordering::SeqCst, Ordering::SeqCst)
        {
            debug_assert_eq!(actual, NOTIFIED, "only the owner parks");
            self.state.store(EMPTY, Ordering::SeqCst);
            return;
        }
        loop {
            thread::park();
            // `thread::park` may return spuriously, or for a stale unpark: only our token counts.
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Makes a token available, waking the owner if it sleeps.
    pub(crate) fn unpark(&self) {
        if self.state.swap(NOTIFIED, Ordering::SeqCst) == PARKED {
            let thread = self.thread.lock().expect("parker lock poisoned");
            thread
                .as_ref()
                .expect("a parked parker is bound to its thread")
                .unpark();
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
