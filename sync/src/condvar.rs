//! [`Condvar`]: a [`WaitList`] of parked callers, over fibra's [`MutexGuard`].

use crate::mutex::MutexGuard;
use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use fibra_runtime::loom::sync::Lock;
use fibra_runtime::wait::{current_waker, WaitList, WakeList};
use fibra_runtime::wait::{Deadline, PlainWaitable, Wait, WaitKind, WaitSite};
use std::fmt;
use std::time::Duration;

/// A condition variable for fibra's [`Mutex`](crate::Mutex): waiting parks the fiber (or
/// thread), not the worker.
///
/// [`wait`](Self::wait) releases the mutex and parks in one step, so a notification sent by
/// someone who took the mutex afterwards is never lost; it re-locks the mutex before returning.
/// Notifications wake waiters in the order they started waiting. Like any condition variable
/// it may wake spuriously: wait in a loop, or with [`wait_while`](Self::wait_while).
///
/// ```
/// use fibra::sync::{Condvar, Mutex};
///
/// let (ready, changed) = (Mutex::new(false), Condvar::new());
/// fibra::run(|| {
///     fibra::scope(|s| {
///         s.spawn(|| {
///             *ready.lock() = true;
///             changed.notify_all();
///         });
///         let guard = changed.wait_while(ready.lock(), |ready| !*ready);
///         assert!(*guard);
///     });
/// });
/// ```
pub struct Condvar {
    /// How many wait, kept under the list's lock, so that a notification with nobody waiting
    /// costs one load. A waiter joins before it unlocks the mutex, and a notifier that changed
    /// the condition under the mutex after that sees it.
    queued: AtomicUsize,
    waiters: Lock<WaitList<()>>,
}

/// Whether a timed condition wait returned because its timeout passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitResult(bool);

impl WaitResult {
    /// True when the wait ended because the timeout passed, not because of a notification.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (m, cv) = (fibra::sync::Mutex::new(()), fibra::sync::Condvar::new());
    /// let (_guard, result) = cv.wait_timeout(m.lock(), Duration::from_millis(1));
    /// assert!(result.timed_out());
    /// ```
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Condvar {
    const_unless_loom! {
        /// A condition variable nobody waits on.
        ///
        /// ```
        /// static CHANGED: fibra::sync::Condvar = fibra::sync::Condvar::new();
        /// CHANGED.notify_one(); // nobody waits: nothing happens
        /// ```
        pub fn new() -> Condvar {
            Condvar {
                queued: AtomicUsize::new(0),
                waiters: Lock::new(WaitList::new()),
            }
        }
    }

    /// Releases the guard's mutex, parks until notified (or spuriously), and locks the mutex
    /// again.
    ///
    /// ```
    /// use fibra::sync::{Condvar, Mutex};
    ///
    /// let (items, added) = (Mutex::new(Vec::new()), Condvar::new());
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         s.spawn(|| {
    ///             items.lock().push(1);
    ///             added.notify_one();
    ///         });
    ///         let mut guard = items.lock();
    ///         while guard.is_empty() {
    ///             guard = added.wait(guard);
    ///         }
    ///         assert_eq!(guard.pop(), Some(1));
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait_until(guard, Deadline::NEVER).0
    }

    /// Waits while `condition` holds, re-checking it (with the mutex locked) after every wake.
    ///
    /// ```
    /// use fibra::sync::{Condvar, Mutex};
    ///
    /// let (count, changed) = (Mutex::new(0), Condvar::new());
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         for _ in 0..3 {
    ///             s.spawn(|| {
    ///                 *count.lock() += 1;
    ///                 changed.notify_all();
    ///             });
    ///         }
    ///         let guard = changed.wait_while(count.lock(), |n| *n < 3);
    ///         assert_eq!(*guard, 3);
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn wait_while<'a, T: ?Sized>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        while condition(&mut guard) {
            guard = self.wait(guard);
        }
        guard
    }

    /// Like [`wait`](Self::wait), for at most `timeout`; the result says whether the timeout
    /// passed first. The mutex is locked again either way.
    ///
    /// ```
    /// use fibra::sync::{Condvar, Mutex};
    /// use std::time::Duration;
    ///
    /// let (m, cv) = (Mutex::new(0), Condvar::new());
    /// let (guard, result) = cv.wait_timeout(m.lock(), Duration::from_millis(1));
    /// assert!(result.timed_out());
    /// assert_eq!(*guard, 0);
    /// ```
    #[track_caller]
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, WaitResult) {
        self.wait_until(guard, Deadline::after(timeout))
    }

    /// Wakes the longest waiter, if any.
    ///
    /// ```
    /// fibra::sync::Condvar::new().notify_one();
    /// ```
    pub fn notify_one(&self) {
        self.notify(1);
    }

    /// Wakes every waiter, in the order they started waiting.
    ///
    /// ```
    /// fibra::sync::Condvar::new().notify_all();
    /// ```
    pub fn notify_all(&self) {
        self.notify(usize::MAX);
    }

    fn notify(&self, most: usize) {
        if self.queued.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut wakers = WakeList::new();
        let mut list = self.waiters.lock();
        self.wake(&mut list, most, &mut wakers);
    }

    /// Wakes up to `most` waiters from the front (under the lock).
    fn wake(&self, list: &mut WaitList<()>, most: usize, wakers: &mut WakeList) {
        for _ in 0..most {
            match list.pop_front() {
                Some(waker) => wakers.push(waker),
                None => break,
            }
        }
        self.count(list);
    }

    fn count(&self, list: &WaitList<()>) {
        self.queued.store(list.len(), Ordering::Release);
    }

    #[track_caller]
    fn wait_until<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Deadline,
    ) -> (MutexGuard<'a, T>, WaitResult) {
        let mutex = guard.mutex;
        let key = {
            let mut list = self.waiters.lock();
            let key = list.push_back((), current_waker());
            self.count(&list);
            key
        };
        // Joined the queue before unlocking: a notifier that locks the mutex next finds us.
        drop(guard);
        let site = WaitSite::new(WaitKind::Condvar, self);
        let timed_out = Wait::new(Waiters(self), key)
            .block_at(deadline, &site)
            .is_err();
        // Re-locking is a cancellation point too: a notified waiter that unwinds from it has
        // consumed a notification nobody else will see, so it passes it on, as `abandon` does
        // for one that unwinds from the park.
        let pass_on = (!timed_out).then_some(PassOn(self));
        let guard = mutex.lock();
        std::mem::forget(pass_on);
        (guard, WaitResult(timed_out))
    }
}

/// A notified waiter re-locking the mutex: dropped (it unwound), it notifies the next waiter.
struct PassOn<'a>(&'a Condvar);

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// The waits on a [`Condvar`], kept out of its public API.
#[derive(Clone, Copy)]
struct Waiters<'a>(&'a Condvar);

impl PlainWaitable for Waiters<'_> {
    type Entry = ();

    fn lock(&self) -> &Lock<WaitList<()>> {
        &self.0.waiters
    }

    fn abandon(&self, list: &mut WaitList<()>, _: (), woken: bool, wakers: &mut WakeList) {
        // A notification that reached a waiter who no longer waits goes to the next one.
        self.0.wake(list, usize::from(woken), wakers);
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}
