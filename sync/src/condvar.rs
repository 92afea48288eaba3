//! [`Condvar`]: a [`WaitList`] of parked callers, over fibra's [`MutexGuard`].

use crate::mutex::{Mutex, MutexGuard, MutexLock};
use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use fibra_runtime::loom::sync::Lock;
use fibra_runtime::wait::{current_waker, Key, WaitList, WakeList};
use fibra_runtime::wait::{Deadline, PlainWaitable, Wait, WaitKind, WaitSite};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A condition variable for fibra's [`Mutex`](crate::Mutex): waiting parks the fiber (or
/// thread), not the worker.
///
/// [`wait`](Self::wait) releases the mutex and parks in one step, so a notification sent by
/// someone who took the mutex afterwards is never lost; it re-locks the mutex before returning.
/// Notifications wake waiters in the order they started waiting. Like any condition variable
/// it may wake spuriously: wait in a loop, or with [`wait_while`](Self::wait_while).
/// [`wait_async`](Self::wait_async) and [`wait_while_async`](Self::wait_while_async) are the
/// forms for async code; fibers, threads and tasks may wait on one condition variable together.
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

    /// A future that waits as [`wait`](Self::wait) does and resolves to the guard again.
    ///
    /// The future holds the guard until it is first polled. That poll joins the waiters and
    /// then releases the mutex, so a notification sent by someone who takes the mutex after
    /// it is never lost; once notified, the future locks the mutex again through
    /// [`Mutex::lock_async`] (in its queue, as any other locker). Dropping the future is
    /// giving up the wait: before its first poll it just unlocks the mutex, and once it waits
    /// it leaves the queue, handing a notification it had received (while waiting, or while
    /// re-locking) on to the next waiter.
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
    ///         let popped = fibra::block_on(async {
    ///             let mut guard = items.lock_async().await;
    ///             while guard.is_empty() {
    ///                 guard = added.wait_async(guard).await;
    ///             }
    ///             guard.pop()
    ///         });
    ///         assert_eq!(popped, Some(1));
    ///     });
    /// });
    /// ```
    pub fn wait_async<'c, 'm, T: ?Sized>(
        &'c self,
        guard: MutexGuard<'m, T>,
    ) -> CondvarWait<'c, 'm, T> {
        CondvarWait {
            condvar: self,
            state: WaitState::Locked(guard),
        }
    }

    /// A future that waits while `condition` holds, as [`wait_while`](Self::wait_while)
    /// does: it checks `condition` (with the mutex locked) when first polled and after every
    /// wake, and resolves to the guard once the condition is false. Each wait is one of
    /// [`wait_async`](Self::wait_async), with its rules for dropping the future.
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
    ///         let guard = fibra::block_on(async {
    ///             changed.wait_while_async(count.lock_async().await, |n| *n < 3).await
    ///         });
    ///         assert_eq!(*guard, 3);
    ///     });
    /// });
    /// ```
    pub fn wait_while_async<'c, 'm, T: ?Sized, F: FnMut(&mut T) -> bool>(
        &'c self,
        guard: MutexGuard<'m, T>,
        condition: F,
    ) -> CondvarWaitWhile<'c, 'm, T, F> {
        CondvarWaitWhile {
            wait: self.wait_async(guard),
            condition,
        }
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

    /// Joins the waiters, with `waker` to wake. A waiter joins before it releases the mutex.
    fn join(&self, waker: Waker) -> Key {
        let mut list = self.waiters.lock();
        let key = list.push_back((), waker);
        self.count(&list);
        key
    }

    #[track_caller]
    fn wait_until<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Deadline,
    ) -> (MutexGuard<'a, T>, WaitResult) {
        let mutex = guard.mutex;
        let key = self.join(current_waker());
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

/// A notified waiter re-locking the mutex: dropped (it unwound, or its future was dropped), it
/// notifies the next waiter.
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

/// The future of [`Condvar::wait_async`].
///
/// ```
/// use fibra::sync::{Condvar, CondvarWait, Mutex};
///
/// let (m, cv) = (Mutex::new(0), Condvar::new());
/// let wait: CondvarWait<'_, '_, i32> = cv.wait_async(m.lock());
/// assert!(m.is_locked()); // held until the first poll
/// drop(wait); // never polled: it just unlocks
/// assert!(!m.is_locked());
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct CondvarWait<'c, 'm, T: ?Sized> {
    condvar: &'c Condvar,
    state: WaitState<'c, 'm, T>,
}

enum WaitState<'c, 'm, T: ?Sized> {
    /// Not polled yet: the caller's guard, released at the first poll.
    Locked(MutexGuard<'m, T>),
    Waiting(&'m Mutex<T>, Wait<Waiters<'c>>),
    /// Notified: the notification is passed on if the future is dropped before the mutex is
    /// locked again.
    Relocking(MutexLock<'m, T>, PassOn<'c>),
    Done,
}

impl<'m, T: ?Sized> Future for CondvarWait<'_, 'm, T> {
    type Output = MutexGuard<'m, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let condvar = self.condvar;
        loop {
            self.state = match std::mem::replace(&mut self.state, WaitState::Done) {
                WaitState::Locked(guard) => {
                    let key = condvar.join(cx.waker().clone());
                    let mutex = guard.mutex;
                    // Joined the queue before unlocking: a notifier that locks the mutex next
                    // finds us, and wakes the waker just registered.
                    drop(guard);
                    self.state = WaitState::Waiting(mutex, Wait::new(Waiters(condvar), key));
                    return Poll::Pending;
                }
                WaitState::Waiting(mutex, mut wait) => match wait.poll(cx) {
                    Poll::Ready(()) => WaitState::Relocking(mutex.lock_async(), PassOn(condvar)),
                    Poll::Pending => {
                        self.state = WaitState::Waiting(mutex, wait);
                        return Poll::Pending;
                    }
                },
                WaitState::Relocking(mut lock, pass_on) => match Pin::new(&mut lock).poll(cx) {
                    Poll::Ready(guard) => {
                        std::mem::forget(pass_on);
                        return Poll::Ready(guard);
                    }
                    Poll::Pending => {
                        self.state = WaitState::Relocking(lock, pass_on);
                        return Poll::Pending;
                    }
                },
                WaitState::Done => panic!("condition wait polled after completion"),
            };
        }
    }
}

impl<T: ?Sized> fmt::Debug for CondvarWait<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            WaitState::Locked(_) => "locked",
            WaitState::Waiting(..) => "waiting",
            WaitState::Relocking(..) => "relocking",
            WaitState::Done => "done",
        };
        f.debug_struct("CondvarWait")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

/// The future of [`Condvar::wait_while_async`].
///
/// ```
/// use fibra::sync::{Condvar, CondvarWaitWhile, Mutex};
///
/// let (m, cv) = (Mutex::new(1), Condvar::new());
/// let wait: CondvarWaitWhile<'_, '_, i32, _> = cv.wait_while_async(m.lock(), |n| *n == 0);
/// // The condition is false already: the first poll resolves to the guard.
/// assert_eq!(*futures::executor::block_on(wait), 1);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct CondvarWaitWhile<'c, 'm, T: ?Sized, F> {
    /// Between waits, back in its first state with the guard it resolved to.
    wait: CondvarWait<'c, 'm, T>,
    condition: F,
}

// The condition is only ever called through `&mut`, never pinned.
impl<T: ?Sized, F> Unpin for CondvarWaitWhile<'_, '_, T, F> {}

impl<'m, T: ?Sized, F: FnMut(&mut T) -> bool> Future for CondvarWaitWhile<'_, 'm, T, F> {
    type Output = MutexGuard<'m, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            this.wait.state = match std::mem::replace(&mut this.wait.state, WaitState::Done) {
                WaitState::Locked(mut guard) => {
                    if !(this.condition)(&mut guard) {
                        return Poll::Ready(guard);
                    }
                    WaitState::Locked(guard)
                }
                waiting => waiting,
            };
            let Poll::Ready(guard) = Pin::new(&mut this.wait).poll(cx) else {
                return Poll::Pending;
            };
            this.wait.state = WaitState::Locked(guard);
        }
    }
}

impl<T: ?Sized, F> fmt::Debug for CondvarWaitWhile<'_, '_, T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CondvarWaitWhile")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
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
