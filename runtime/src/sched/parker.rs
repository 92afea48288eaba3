//! A worker thread's sleep: `std::thread::park` semantics (a token; unpark-before-park returns at
//! once; unparks coalesce), where an unpark only makes a system call when the worker really
//! sleeps. The thread itself sleeps in `thread::park`, registered when it starts its loop.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::sync::Mutex;
use crate::loom::thread;
use std::time::{Duration, Instant};

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

#[derive(Debug)]
pub(crate) struct Parker {
    state: AtomicUsize,
    /// The sleeping thread; set by it before it first moves to PARKED.
    thread: Mutex<Option<thread::Thread>>,
    /// When an unpark last had to wake the sleeping thread, in nanoseconds since `epoch`. A
    /// hint for the owner's idle spin, not synchronization: `std`'s atomic even under loom.
    woken_at: std::sync::atomic::AtomicU64,
    epoch: Instant,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            state: AtomicUsize::new(EMPTY),
            thread: Mutex::new(None),
            woken_at: std::sync::atomic::AtomicU64::new(0),
            epoch: Instant::now(),
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
            let now = self.epoch.elapsed().as_nanos() as u64;
            self.woken_at
                .store(now, std::sync::atomic::Ordering::Relaxed);
            // Not under the lock: the woken owner, soon idle again, takes it in `park`, and
            // would sleep on it while this thread is still in the wake's system call.
            let thread = self.thread.lock().expect("parker lock poisoned").clone();
            thread
                .expect("a parked parker is bound to its thread")
                .unpark();
        }
    }

    /// How long after `since` the last unpark that woke the sleeping owner came: the time the
    /// owner waited for work, without the time the OS then took to run it. Zero when no such
    /// unpark came after `since` (the owner found a token and did not sleep).
    pub(crate) fn woken_after(&self, since: Instant) -> Duration {
        let woken_at = self.woken_at.load(std::sync::atomic::Ordering::Relaxed);
        (self.epoch + Duration::from_nanos(woken_at)).saturating_duration_since(since)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_token_found_without_sleeping_counts_as_woken_at_once() {
        let parker = Parker::new();
        parker.bind_current();
        let since = Instant::now();
        parker.unpark();
        parker.park();
        assert_eq!(parker.woken_after(since), Duration::ZERO);
    }

    #[test]
    fn a_sleeper_learns_when_it_was_unparked_not_when_it_ran_again() {
        let parker = Arc::new(Parker::new());
        parker.bind_current();
        let since = Instant::now();
        let waker = {
            let parker = parker.clone();
            std::thread::spawn(move || {
                // Unparks once the owner sleeps, so the unpark has to wake it.
                while parker.state.load(Ordering::SeqCst) != PARKED {
                    std::thread::yield_now();
                }
                parker.unpark();
                Instant::now()
            })
        };
        parker.park();
        let returned = Instant::now();
        let unparked_by = waker.join().unwrap();
        let woken_after = parker.woken_after(since);
        assert!(woken_after > Duration::ZERO);
        assert!(since + woken_after <= unparked_by.min(returned));
    }
}
