//! [`RwLock`]: a [`RawSemaphore`] of [`MAX_READERS`] permits; a reader takes one, a writer all.
//!
//! Fair (the default), a writer waiting at the head of the queue collects the permits the
//! readers give back and no later reader overtakes it: writer priority without writer
//! starvation, and readers arriving behind the writer are let in together after it. Unfair,
//! readers take permits whenever no writer holds the lock: reader priority.

use crate::raw_semaphore::{Acquire, RawSemaphore, MAX_PERMITS};
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

/// How many readers may hold the lock at once (and what a writer takes).
const MAX_READERS: usize = MAX_PERMITS;

/// A reader-writer lock that parks the waiting fiber (or thread) instead of blocking its
/// worker.
///
/// [`RwLock::new`] gives writers priority: once a writer waits, readers that come after it
/// wait behind it, so writers are never starved; waiters are served in arrival order, and
/// consecutive readers share the lock. [`RwLock::new_reader_priority`] lets readers in whenever
/// no writer holds the lock, even past waiting writers. No poisoning.
///
/// ```
/// use fibra::sync::RwLock;
///
/// let config = RwLock::new(vec![1, 2]);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         s.spawn(|| config.write().push(3));
///         s.spawn(|| assert!(config.read().len() >= 2));
///     });
/// });
/// assert_eq!(config.into_inner(), [1, 2, 3]);
/// ```
pub struct RwLock<T: ?Sized> {
    raw: RawSemaphore,
    /// The writer, while one holds the lock.
    writer: Holder,
    data: UnsafeCell<T>,
}

// SAFETY: a writer gets `&mut T` (possibly on another thread: `T: Send`), readers on several
// threads get `&T` at once (`T: Sync`).
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T> RwLock<T> {
    const_unless_loom! {
        /// A writer-priority lock.
        ///
        /// ```
        /// static TABLE: fibra::sync::RwLock<u32> = fibra::sync::RwLock::new(0);
        /// *TABLE.write() = 5;
        /// assert_eq!(*TABLE.read(), 5);
        /// ```
        pub fn new(value: T) -> RwLock<T> {
            RwLock {
                raw: RawSemaphore::new(MAX_READERS, MAX_READERS, true),
                writer: Holder::new(),
                data: UnsafeCell::new(value),
            }
        }
    }

    const_unless_loom! {
        /// A reader-priority lock: readers enter whenever no writer holds it.
        ///
        /// ```
        /// let lock = fibra::sync::RwLock::new_reader_priority(1);
        /// let a = lock.read();
        /// let b = lock.read();
        /// assert_eq!(*a + *b, 2);
        /// ```
        pub fn new_reader_priority(value: T) -> RwLock<T> {
            RwLock {
                raw: RawSemaphore::new(MAX_READERS, MAX_READERS, false),
                writer: Holder::new(),
                data: UnsafeCell::new(value),
            }
        }
    }

    /// The protected value.
    ///
    /// ```
    /// assert_eq!(fibra::sync::RwLock::new("v").into_inner(), "v");
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks for reading, parking the caller while a writer holds the lock (or, with writer
    /// priority, is waiting ahead of it).
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(3);
    /// assert_eq!(*lock.read(), 3);
    /// ```
    #[track_caller]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        // Without a deadline the wait cannot time out.
        let _ = self
            .raw
            .acquire(1, Deadline::NEVER, self.site(WaitKind::RwLockRead));
        RwLockReadGuard::new(self)
    }

    /// Locks for reading if that needs no waiting.
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(0);
    /// let _r = lock.read();
    /// assert!(lock.try_read().is_some());
    /// assert!(lock.try_write().is_none());
    /// ```
    #[track_caller]
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.raw.try_acquire(1).then(|| RwLockReadGuard::new(self))
    }

    /// Locks for reading, parking the caller for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lock = fibra::sync::RwLock::new(0);
    /// let w = lock.write();
    /// assert!(lock.read_timeout(Duration::from_millis(1)).is_err());
    /// drop(w);
    /// assert!(lock.read_timeout(Duration::from_secs(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn read_timeout(&self, timeout: Duration) -> Result<RwLockReadGuard<'_, T>, TimedOut> {
        self.raw
            .acquire(1, Deadline::after(timeout), self.site(WaitKind::RwLockRead))?;
        Ok(RwLockReadGuard::new(self))
    }

    /// A future that locks for reading.
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(4);
    /// let v = futures::executor::block_on(async { *lock.read_async().await });
    /// assert_eq!(v, 4);
    /// ```
    pub fn read_async(&self) -> RwLockRead<'_, T> {
        RwLockRead {
            lock: self,
            acquire: self.raw.acquire_async(1),
        }
    }

    /// Locks for writing, parking the caller until no reader or writer holds the lock.
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(3);
    /// *lock.write() += 1;
    /// assert_eq!(*lock.read(), 4);
    /// ```
    #[track_caller]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        // Without a deadline the wait cannot time out.
        let _ = self.raw.acquire(
            MAX_READERS,
            Deadline::NEVER,
            self.site(WaitKind::RwLockWrite),
        );
        RwLockWriteGuard::new(self)
    }

    /// Locks for writing if that needs no waiting.
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(0);
    /// let _w = lock.try_write().unwrap();
    /// assert!(lock.try_read().is_none());
    /// ```
    #[track_caller]
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.raw
            .try_acquire(MAX_READERS)
            .then(|| RwLockWriteGuard::new(self))
    }

    /// Locks for writing, parking the caller for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let lock = fibra::sync::RwLock::new(0);
    /// let r = lock.read();
    /// assert!(lock.write_timeout(Duration::from_millis(1)).is_err());
    /// drop(r);
    /// assert!(lock.write_timeout(Duration::from_secs(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn write_timeout(&self, timeout: Duration) -> Result<RwLockWriteGuard<'_, T>, TimedOut> {
        self.raw.acquire(
            MAX_READERS,
            Deadline::after(timeout),
            self.site(WaitKind::RwLockWrite),
        )?;
        Ok(RwLockWriteGuard::new(self))
    }

    /// A future that locks for writing.
    ///
    /// ```
    /// let lock = fibra::sync::RwLock::new(4);
    /// futures::executor::block_on(async { *lock.write_async().await = 5 });
    /// assert_eq!(lock.into_inner(), 5);
    /// ```
    pub fn write_async(&self) -> RwLockWrite<'_, T> {
        RwLockWrite {
            lock: self,
            acquire: self.raw.acquire_async(MAX_READERS),
        }
    }

    /// A wait of `kind` for this lock at the caller's location; only a writer is known to own it.
    #[track_caller]
    #[inline]
    fn site(&self, kind: WaitKind) -> WaitSite<'_> {
        WaitSite::new(kind, self).held_by(&self.writer)
    }

    /// The value, through the exclusive borrow (no locking needed).
    ///
    /// ```
    /// let mut lock = fibra::sync::RwLock::new(1);
    /// *lock.get_mut() = 2;
    /// assert_eq!(*lock.read(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(guard) => d.field("data", &&*guard),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Holds an [`RwLock`] for reading; releases it when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    // Hands out `&T`: Send and Sync as `&T` is.
    _data: PhantomData<&'a T>,
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    fn new(lock: &'a RwLock<T>) -> Self {
        RwLockReadGuard {
            lock,
            _data: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a read guard holds a reader's permit, so no writer holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.raw.release(1);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Holds an [`RwLock`] for writing; releases it when dropped. Like
/// [`MutexGuard`](crate::MutexGuard) it may be sent to another thread, and deadlock detection
/// still takes the fiber that locked for the writer (see
/// [`Deadlock`](fibra_runtime::Deadlock)).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    // Hands out `&mut T`: Send and Sync as `&mut T` is.
    _data: PhantomData<&'a mut T>,
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    #[track_caller]
    fn new(lock: &'a RwLock<T>) -> Self {
        lock.writer.acquired();
        RwLockWriteGuard {
            lock,
            _data: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a write guard holds every permit, so nobody else accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.writer.released();
        self.lock.raw.release(MAX_READERS);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The future of [`RwLock::read_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RwLockRead<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    acquire: Acquire<'a>,
}

impl<T: ?Sized> fmt::Debug for RwLockRead<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLockRead").finish_non_exhaustive()
    }
}

impl<'a, T: ?Sized> Future for RwLockRead<'a, T> {
    type Output = RwLockReadGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let lock = self.lock;
        Pin::new(&mut self.acquire)
            .poll(cx)
            .map(|()| RwLockReadGuard::new(lock))
    }
}

/// The future of [`RwLock::write_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RwLockWrite<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    acquire: Acquire<'a>,
}

impl<T: ?Sized> fmt::Debug for RwLockWrite<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLockWrite").finish_non_exhaustive()
    }
}

impl<'a, T: ?Sized> Future for RwLockWrite<'a, T> {
    type Output = RwLockWriteGuard<'a, T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let lock = self.lock;
        Pin::new(&mut self.acquire)
            .poll(cx)
            .map(|()| RwLockWriteGuard::new(lock))
    }
}
