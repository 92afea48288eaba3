//! The internal lock around a waiter list: held for a few instructions, never across a park.

#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

/// A mutex that ignores poison: nothing panics while holding it except an allocation failure,
/// and the lists it guards stay consistent at every step that could.
///
/// ```
/// let lock = fibra::wait::Lock::new(1);
/// *lock.lock() += 1;
/// assert_eq!(*lock.lock(), 2);
/// ```
#[derive(Debug)]
pub struct Lock<T>(Mutex<T>);

impl<T: Default> Default for Lock<T> {
    fn default() -> Lock<T> {
        Lock::new(T::default())
    }
}

impl<T> Lock<T> {
    /// A lock around `value`.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Lock<T> {
        Lock(Mutex::new(value))
    }

    /// A lock around `value` (loom's mutex has no const constructor).
    #[cfg(loom)]
    pub fn new(value: T) -> Lock<T> {
        Lock(Mutex::new(value))
    }

    /// Locks, ignoring poison.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
