//! A test-and-test-and-set spin lock that yields the thread after a short spin: the lock of a
//! core whose every critical section is a few dozen instructions that never block, allocate
//! rarely (a waiter list growing) and run no user code, so a waiter almost always gets the
//! lock within its spin, where `std::sync::Mutex`'s contended path would park in the kernel
//! (the `chan_throughput` bench shows the difference). A holder preempted by the OS costs the
//! waiters a `yield_now` each round, not a spin to the end of the time slice. Under loom it is
//! loom's mutex, which loom can model.

#[cfg(not(loom))]
mod imp {
    use std::cell::UnsafeCell;
    use std::ops::{Deref, DerefMut};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A spin lock around a `T`.
    pub struct SpinLock<T> {
        locked: AtomicBool,
        value: UnsafeCell<T>,
    }

    // SAFETY: like `std::sync::Mutex`: the value is only reached through a guard, and the lock
    // hands out one guard at a time (acquire on lock, release on unlock order the accesses), so
    // sharing the lock shares `T` only by moving access between threads, which `T: Send` allows.
    unsafe impl<T: Send> Sync for SpinLock<T> {}

    impl<T> SpinLock<T> {
        /// An unlocked lock around `value`.
        pub fn new(value: T) -> Self {
            SpinLock {
                locked: AtomicBool::new(false),
                value: UnsafeCell::new(value),
            }
        }

        /// Takes the lock, spinning (then yielding) while another thread holds it.
        #[inline]
        pub fn lock(&self) -> SpinGuard<'_, T> {
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                self.lock_contended();
            }
            SpinGuard { lock: self }
        }

        #[cold]
        fn lock_contended(&self) {
            // The holder is a few instructions from unlocking (the toolkit's patience policy).
            let mut backoff = crate::wait::Backoff::new();
            loop {
                while self.locked.load(Ordering::Relaxed) {
                    backoff.snooze();
                }
                if self
                    .locked
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            }
        }
    }

    /// Access to the locked value; unlocks on drop.
    ///
    /// Shared between threads only when `T` is `Sync`, as `std::sync::MutexGuard`:
    ///
    /// ```compile_fail
    /// fn shared<T: Sync>(_: &T) {}
    /// let lock = fibra_runtime::loom::sync::SpinLock::new(std::cell::Cell::new(0));
    /// shared(&lock.lock());
    /// ```
    #[derive(Debug)]
    pub struct SpinGuard<'a, T> {
        lock: &'a SpinLock<T>,
    }

    // SAFETY: a shared guard hands out `&T` (`Deref`) on every thread it is shared with, which
    // needs `T: Sync`; without this impl the guard would be `Sync` whenever the lock is, that
    // is for any `T: Send` (a `Cell` raced through two threads' `&Cell`).
    unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

    impl<T> Deref for SpinGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            // SAFETY: the guard exists only while this thread holds the lock, so no other
            // reference to the value exists.
            unsafe { &*self.lock.value.get() }
        }
    }

    impl<T> DerefMut for SpinGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as in `deref`, and `&mut self` makes this the guard's only live borrow.
            unsafe { &mut *self.lock.value.get() }
        }
    }

    impl<T> Drop for SpinGuard<'_, T> {
        #[inline]
        fn drop(&mut self) {
            self.lock.locked.store(false, Ordering::Release);
        }
    }

    impl<T> std::fmt::Debug for SpinLock<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("SpinLock").finish_non_exhaustive()
        }
    }
}

#[cfg(loom)]
mod imp {
    /// Under loom: loom's mutex, which loom can model.
    #[derive(Debug)]
    pub struct SpinLock<T>(loom::sync::Mutex<T>);

    /// Access to the locked value; unlocks on drop.
    pub type SpinGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> SpinLock<T> {
        /// An unlocked lock around `value`.
        pub fn new(value: T) -> Self {
            SpinLock(loom::sync::Mutex::new(value))
        }

        /// Takes the lock.
        pub fn lock(&self) -> SpinGuard<'_, T> {
            self.0.lock().unwrap()
        }
    }
}

pub use imp::{SpinGuard, SpinLock};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SpinLock;

    #[test]
    fn the_lock_excludes() {
        let lock = SpinLock::new(0u64);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100_000 {
                        *lock.lock() += 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), 400_000);
    }
}
