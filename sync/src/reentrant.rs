//! [`ReentrantMutex`]: a fair one-permit [`RawSemaphore`] plus an owner and a depth.

use crate::owner::Owner;
use crate::raw_semaphore::{Acquire, RawSemaphore};
use crate::TimedOut;
use fibra_runtime::wait::{Deadline, Holder, WaitKind, WaitSite};
use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// No owner.
const NOBODY: u64 = 0;

/// A mutex that the fiber holding it may lock again; other fibers, on the same worker or not,
/// wait (parked) until it has unlocked as many times as it locked.
///
/// The owner is the fiber (outside fibra: the thread), never the worker thread: two fibers on
/// one worker exclude each other. A [`lock_async`](Self::lock_async) future is an owner of its
/// own, which nobody re-enters. Guards give shared access only (`&T`), like
/// std's (unstable) `ReentrantLock`; put a `RefCell` inside for mutation.
///
/// ```
/// use fibra::sync::ReentrantMutex;
/// use std::cell::RefCell;
///
/// let log = ReentrantMutex::new(RefCell::new(Vec::new()));
/// fn nested(log: &ReentrantMutex<RefCell<Vec<u32>>>, depth: u32) {
///     let guard = log.lock();
///     guard.borrow_mut().push(depth);
///     if depth < 3 {
///         nested(log, depth + 1); // re-locks: same fiber
///     }
/// }
/// fibra::run(|| nested(&log, 1));
/// assert_eq!(*log.lock().borrow(), [1, 2, 3]);
/// ```
pub struct ReentrantMutex<T: ?Sized> {
    raw: RawSemaphore,
    holder: Holder,
    /// The owner's number, or [`NOBODY`]. Only the owner stores its own number (and clears it),
    /// so a caller that reads its own number is the owner, however stale the read.
    owner: AtomicU64,
    /// How many guards the owner holds; touched only by the owner.
    depth: UnsafeCell<usize>,
    data: T,
}

// SAFETY: `&T` is only ever handed to the owner, one fiber or thread at a time (like std's
// `ReentrantLock`), so `T: Send` suffices; `depth` is touched only by the owner, and ownership
// passes through the semaphore's acquire/release.
unsafe impl<T: ?Sized + Send> Send for ReentrantMutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for ReentrantMutex<T> {}

impl<T> ReentrantMutex<T> {
    const_unless_loom! {
        /// An unlocked re-entrant mutex; waiters are served in arrival order.
        ///
        /// ```
        /// static LOCK: fibra::sync::ReentrantMutex<u8> = fibra::sync::ReentrantMutex::new(1);
        /// assert_eq!(*LOCK.lock(), 1);
        /// ```
        pub fn new(value: T) -> ReentrantMutex<T> {
            ReentrantMutex {
                raw: RawSemaphore::new(1, 1, true),
                holder: Holder::new(),
                owner: AtomicU64::new(NOBODY),
                depth: UnsafeCell::new(0),
                data: value,
            }
        }
    }

    /// The protected value.
    ///
    /// ```
    /// assert_eq!(fibra::sync::ReentrantMutex::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data
    }
}

impl<T: ?Sized> ReentrantMutex<T> {
    /// Locks, or re-locks if the caller holds it already; parks while another holds it.
    ///
    /// # Panics
    ///
    /// If one owner's lock count would overflow `usize`.
    ///
    /// ```
    /// let m = fibra::sync::ReentrantMutex::new(5);
    /// let a = m.lock();
    /// let b = m.lock();
    /// assert_eq!(*a + *b, 10);
    /// ```
    #[track_caller]
    pub fn lock(&self) -> ReentrantMutexGuard<'_, T> {
        self.lock_until(Deadline::NEVER)
            .expect("a wait without a deadline does not time out")
    }

    /// Locks or re-locks if that needs no waiting.
    ///
    /// ```
    /// let m = fibra::sync::ReentrantMutex::new(());
    /// let _a = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_some()); // the owner re-locks
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(m.try_lock().is_none())); // another thread does not
    /// });
    /// ```
    #[track_caller]
    pub fn try_lock(&self) -> Option<ReentrantMutexGuard<'_, T>> {
        let me = Owner::current();
        if self.is_owner(me) {
            return Some(self.relock());
        }
        self.raw.try_acquire(1).then(|| self.first_lock(me))
    }

    /// Locks or re-locks, parking the caller for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let m = fibra::sync::ReentrantMutex::new(());
    /// let _a = m.lock();
    /// assert!(m.lock_timeout(Duration::from_millis(1)).is_ok()); // the owner re-locks
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(m.lock_timeout(Duration::from_millis(1)).is_err()));
    /// });
    /// ```
    #[track_caller]
    pub fn lock_timeout(&self, timeout: Duration) -> Result<ReentrantMutexGuard<'_, T>, TimedOut> {
        self.lock_until(Deadline::after(timeout))
    }

    /// A future that locks, as an owner of its own: a future is not the fiber or thread that
    /// polls it (tasks share threads, and move between them), so it never re-enters a hold —
    /// not its polling fiber's, not its thread's, not another future's — and nobody re-enters
    /// the hold it takes. Async code that needs re-entrance passes the guard's reference down.
    /// The wait begins when the future is first polled; dropping it before it completes gives
    /// up its place in the queue (or, if the lock had just been handed to it, hands it on).
    ///
    /// Awaiting it in a fiber or thread that holds the lock waits for ever. The guard is not
    /// `Send`, as every guard of this mutex: on a multi-threaded executor (tokio's
    /// multi-thread runtime) a spawned task may use it between two `.await`s but not hold it
    /// across one; a single-threaded executor, a `LocalSet`, or `fibra::block_on` in a fiber
    /// may hold it across awaits.
    ///
    /// ```
    /// use fibra::sync::ReentrantMutex;
    /// use std::cell::Cell;
    ///
    /// let m = ReentrantMutex::new(Cell::new(1));
    /// futures::executor::block_on(async {
    ///     let guard = m.lock_async().await;
    ///     guard.set(guard.get() + 1);
    ///     assert!(m.try_lock().is_none(), "the thread does not re-enter the future's hold");
    /// });
    /// assert_eq!(m.lock().get(), 2);
    /// ```
    pub fn lock_async(&self) -> ReentrantMutexLock<'_, T> {
        ReentrantMutexLock {
            mutex: self,
            me: Owner::fresh(),
            acquire: self.raw.acquire_async(1),
        }
    }

    /// Whether anyone holds the lock (a snapshot, for diagnostics).
    ///
    /// ```
    /// let m = fibra::sync::ReentrantMutex::new(());
    /// assert!(!m.is_locked());
    /// let _g = m.lock();
    /// assert!(m.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.raw.available() == 0
    }

    /// The value, through the exclusive borrow (no locking needed).
    ///
    /// ```
    /// let mut m = fibra::sync::ReentrantMutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(*m.lock(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.data
    }

    #[track_caller]
    fn lock_until(&self, deadline: Deadline) -> Result<ReentrantMutexGuard<'_, T>, TimedOut> {
        // A re-lock is a lock too: the cancellation point and reduction of
        // `RawSemaphore::acquire` come first for every caller.
        fibra_runtime::checkpoint();
        let me = Owner::current();
        if self.is_owner(me) {
            return Ok(self.relock());
        }
        if !self.raw.try_acquire(1) {
            let site = WaitSite::new(WaitKind::ReentrantMutex, self).held_by(&self.holder);
            self.raw.acquire_contended(1, deadline, &site)?;
        }
        Ok(self.first_lock(me))
    }

    fn is_owner(&self, me: Owner) -> bool {
        self.owner.load(Ordering::Relaxed) == me.as_u64()
    }

    #[track_caller]
    fn first_lock(&self, me: Owner) -> ReentrantMutexGuard<'_, T> {
        self.owner.store(me.as_u64(), Ordering::Relaxed);
        self.holder.acquired();
        // SAFETY: we own the lock (the semaphore's acquire ordered us after the last owner's
        // release), and only the owner touches `depth`.
        unsafe { *self.depth.get() = 1 };
        ReentrantMutexGuard::new(self)
    }

    fn relock(&self) -> ReentrantMutexGuard<'_, T> {
        // SAFETY: the caller is the owner, the only one touching `depth`.
        let depth = unsafe { &mut *self.depth.get() };
        *depth = depth
            .checked_add(1)
            .expect("ReentrantMutex locked too many times by one owner");
        ReentrantMutexGuard::new(self)
    }
}

impl<T: Default> Default for ReentrantMutex<T> {
    fn default() -> Self {
        ReentrantMutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReentrantMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ReentrantMutex");
        match self.try_lock() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Holds a [`ReentrantMutex`]; the lock is released when the owner's last guard is dropped.
///
/// Not `Send`: it belongs to the fiber (or thread) that locked, and one from
/// [`lock_async`](ReentrantMutex::lock_async) to the thread that polled the future.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct ReentrantMutexGuard<'a, T: ?Sized> {
    mutex: &'a ReentrantMutex<T>,
    _not_send: PhantomData<*const ()>,
}

impl<'a, T: ?Sized> ReentrantMutexGuard<'a, T> {
    fn new(mutex: &'a ReentrantMutex<T>) -> Self {
        ReentrantMutexGuard {
            mutex,
            _not_send: PhantomData,
        }
    }
}

// SAFETY: sharing the guard shares `&T` between threads, which `T: Sync` allows; the guard
// itself has no interior state.
unsafe impl<T: ?Sized + Sync> Sync for ReentrantMutexGuard<'_, T> {}

impl<T: ?Sized> Deref for ReentrantMutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.mutex.data
    }
}

impl<T: ?Sized> Drop for ReentrantMutexGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: a guard exists only in its owner's hands (it is not `Send`), and only the
        // owner touches `depth`.
        let depth = unsafe { &mut *self.mutex.depth.get() };
        *depth -= 1;
        if *depth == 0 {
            self.mutex.owner.store(NOBODY, Ordering::Relaxed);
            self.mutex.holder.released();
            self.mutex.raw.release(1);
        }
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for ReentrantMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`ReentrantMutex::lock_async`].
#[must_use = "futures do nothing unless polled"]
pub struct ReentrantMutexLock<'a, T: ?Sized> {
    mutex: &'a ReentrantMutex<T>,
    me: Owner,
    acquire: Acquire<'a>,
}

impl<'a, T: ?Sized> Future for ReentrantMutexLock<'a, T> {
    type Output = ReentrantMutexGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (mutex, me) = (self.mutex, self.me);
        Pin::new(&mut self.acquire)
            .poll(cx)
            .map(|()| mutex.first_lock(me))
    }
}

impl<T: ?Sized> fmt::Debug for ReentrantMutexLock<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantMutexLock").finish_non_exhaustive()
    }
}
