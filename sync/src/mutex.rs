//! [`Mutex`]: one permit of a [`RawSemaphore`], fair (FIFO handoff) or unfair (barging).

use crate::raw_semaphore::{Acquire, RawSemaphore};
use crate::TimedOut;
use fibra_runtime::wait::{Deadline, Holder, WaitKind, WaitSite};
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A mutual-exclusion lock that parks the waiting fiber (or thread) instead of blocking its
/// worker.
///
/// [`Mutex::new`] is fair: an unlock hands the lock straight to the longest waiter, so the
/// lock is acquired in arrival order and nobody starves. [`Mutex::new_unfair`] lets a running
/// caller take a just-released lock ahead of the waiters (barging): more throughput under
/// contention, no order. There is no poisoning: a panic while the lock is held just releases
/// it.
///
/// ```
/// use fibra::sync::Mutex;
///
/// let counter = Mutex::new(0);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..4 {
///             s.spawn(|| {
///                 for _ in 0..100 {
///                     *counter.lock() += 1;
///                 }
///             });
///         }
///     });
/// });
/// assert_eq!(counter.into_inner(), 400);
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawSemaphore,
    holder: Holder,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `&mut T` to one holder at a time, possibly on another thread, so `T`
// must be `Send`; it never hands out `&T` to several threads at once, so `T: Sync` is not
// needed (std's rule).
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    const_unless_loom! {
        /// A fair mutex: the lock goes to waiters in arrival order.
        ///
        /// ```
        /// static NAMES: fibra::sync::Mutex<Vec<&str>> = fibra::sync::Mutex::new(Vec::new());
        /// NAMES.lock().push("a");
        /// assert_eq!(*NAMES.lock(), ["a"]);
        /// ```
        pub fn new(value: T) -> Mutex<T> {
            Mutex {
                raw: RawSemaphore::new(1, 1, true),
                holder: Holder::new(),
                data: UnsafeCell::new(value),
            }
        }
    }

    const_unless_loom! {
        /// An unfair mutex: a caller may take the lock ahead of waiters.
        ///
        /// ```
        /// let m = fibra::sync::Mutex::new_unfair(1);
        /// *m.lock() += 1;
        /// assert_eq!(*m.lock(), 2);
        /// ```
        pub fn new_unfair(value: T) -> Mutex<T> {
            Mutex {
                raw: RawSemaphore::new(1, 1, false),
                holder: Holder::new(),
                data: UnsafeCell::new(value),
            }
        }
    }

    /// The protected value.
    ///
    /// ```
    /// assert_eq!(fibra::sync::Mutex::new(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, parking the caller until the lock is free.
    ///
    /// ```
    /// let m = fibra::sync::Mutex::new(String::new());
    /// m.lock().push_str("fibra");
    /// assert_eq!(*m.lock(), "fibra");
    /// ```
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        // `RawSemaphore::acquire` unrolled, so that the wait site is built only for a wait: a
        // lock taken at once (the common case) would store it for nothing. Inlined, as the
        // wait is a call: out of line, the frame (five saved registers) cost an uncontended
        // lock and unlock about a third of its time.
        fibra_runtime::checkpoint();
        if !self.raw.try_acquire(1) {
            // Without a deadline the wait cannot time out.
            let _ = self.raw.acquire_contended(1, Deadline::NEVER, &self.site());
        }
        MutexGuard::new(self)
    }

    /// Locks if that needs no waiting (on a fair mutex: if nobody is waiting either).
    ///
    /// ```
    /// let m = fibra::sync::Mutex::new(());
    /// let held = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(held);
    /// assert!(m.try_lock().is_some());
    /// ```
    #[track_caller]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.raw.try_acquire(1).then(|| MutexGuard::new(self))
    }

    /// Locks, parking the caller for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let m = fibra::sync::Mutex::new(1);
    /// assert_eq!(*m.lock_timeout(Duration::from_secs(1)).unwrap(), 1);
    /// let _held = m.lock();
    /// assert!(m.lock_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn lock_timeout(&self, timeout: Duration) -> Result<MutexGuard<'_, T>, TimedOut> {
        self.raw.acquire(1, Deadline::after(timeout), self.site())?;
        Ok(MutexGuard::new(self))
    }

    /// A future that locks. Dropping it before it completes gives up its place in the queue
    /// (or, if the lock had just been handed to it, hands it on).
    ///
    /// ```
    /// let m = fibra::sync::Mutex::new(1);
    /// futures::executor::block_on(async {
    ///     *m.lock_async().await += 1;
    /// });
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn lock_async(&self) -> MutexLock<'_, T> {
        MutexLock {
            mutex: self,
            acquire: self.raw.acquire_async(1),
        }
    }

    /// Whether the lock is held (a snapshot, for diagnostics).
    ///
    /// ```
    /// let m = fibra::sync::Mutex::new(());
    /// let held = m.lock();
    /// assert!(m.is_locked());
    /// drop(held);
    /// assert!(!m.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.raw.available() == 0
    }

    /// The value, through the exclusive borrow (no locking needed).
    ///
    /// ```
    /// let mut m = fibra::sync::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.lock(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Releases the lock taken by the guard being dropped or given up by a condition wait.
    pub(crate) fn unlock(&self) {
        self.holder.released();
        self.raw.release(1);
    }

    /// A wait for this lock, at the caller's location.
    #[track_caller]
    #[inline]
    pub(crate) fn site(&self) -> WaitSite<'_> {
        WaitSite::new(WaitKind::Mutex, self).held_by(&self.holder)
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Holds a [`Mutex`] locked; unlocks it when dropped.
///
/// It may be sent to another thread when `T: Send` (releasing from anywhere is fine), so async
/// code may hold it across an `.await` on a multi-threaded executor. Deadlock detection still
/// takes the fiber that locked for the owner (see [`Deadlock`](fibra_runtime::Deadlock)):
/// where it is on, keep the guard in that fiber.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    pub(crate) mutex: &'a Mutex<T>,
    // The guard hands out `&mut T`: Send and Sync as `&mut T` is.
    _data: PhantomData<&'a mut T>,
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    #[track_caller]
    #[inline]
    pub(crate) fn new(mutex: &'a Mutex<T>) -> Self {
        mutex.holder.acquired();
        MutexGuard {
            mutex,
            _data: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so nobody else accesses the data.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

/// The future of [`Mutex::lock_async`].
#[must_use = "futures do nothing unless polled"]
pub struct MutexLock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    acquire: Acquire<'a>,
}

impl<'a, T: ?Sized> Future for MutexLock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mutex = self.mutex;
        Pin::new(&mut self.acquire)
            .poll(cx)
            .map(|()| MutexGuard::new(mutex))
    }
}

impl<T: ?Sized> fmt::Debug for MutexLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutexLock").finish_non_exhaustive()
    }
}
