//! The few synchronization pieces the handoff core uses: `std` and `fibra-runtime` normally,
//! `loom` under `--cfg loom`, so the same code is model-checked and shipped.
//!
//! Besides atomics, the lock (`lock::SpinLock` normally) and the cell, this is where the core blocks: `current_waker`,
//! `park` and `park_until` are the runtime's fiber-or-thread primitives normally and loom
//! threads under loom.

use std::time::Instant;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use crate::lock::{SpinGuard as LockGuard, SpinLock as Lock};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};

/// The channel lock under loom: loom's mutex, which loom can model.
#[cfg(loom)]
pub(crate) struct Lock<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
pub(crate) type LockGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

#[cfg(loom)]
impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Self {
        Lock(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> LockGuard<'_, T> {
        self.0.lock().unwrap()
    }
}

#[cfg(not(loom))]
use std::task::Waker;

/// An `UnsafeCell` with loom's closure-shaped access, so loom can check every access.
#[derive(Debug)]
pub(crate) struct Cell<T> {
    #[cfg(loom)]
    inner: loom::cell::UnsafeCell<T>,
    #[cfg(not(loom))]
    inner: std::cell::UnsafeCell<T>,
}

impl<T> Cell<T> {
    pub(crate) fn new(value: T) -> Self {
        Cell {
            #[cfg(loom)]
            inner: loom::cell::UnsafeCell::new(value),
            #[cfg(not(loom))]
            inner: std::cell::UnsafeCell::new(value),
        }
    }

    /// Runs `f` with a pointer to the contents; the caller guarantees exclusive access while `f`
    /// uses it.
    #[cfg(loom)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        self.inner.with_mut(f)
    }

    /// Runs `f` with a pointer to the contents; the caller guarantees exclusive access while `f`
    /// uses it.
    #[cfg(not(loom))]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.inner.get())
    }

    pub(crate) fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

/// A waker for the caller: the running fiber's, or else the current thread's.
#[cfg(not(loom))]
pub(crate) fn current_waker() -> Waker {
    fibra_runtime::wait::current_waker()
}

/// Lets other fibers on this worker (or other threads) run: not a cancellation point. (Not
/// used under loom.)
#[cfg(not(loom))]
pub(crate) fn yield_now() {
    fibra_runtime::yield_now();
}

/// Blocks the caller until its waker is woken (or spuriously). A cancellation point: a
/// cancelled fiber unwinds from here (see `cancel`), except while already unwinding.
#[cfg(not(loom))]
pub(crate) fn park() {
    if crate::cancel::unwinding() {
        fibra_runtime::shield(fibra_runtime::wait::park_current);
    } else {
        fibra_runtime::wait::park_current();
    }
}

/// Blocks the caller until its waker is woken, `deadline` passes, or spuriously. A
/// cancellation point, as [`park`].
#[cfg(not(loom))]
pub(crate) fn park_until(deadline: Instant) {
    if crate::cancel::unwinding() {
        fibra_runtime::shield(|| fibra_runtime::wait::park_current_until(deadline));
    } else {
        fibra_runtime::wait::park_current_until(deadline);
    }
}

#[cfg(loom)]
mod loom_waker {
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Unpark(loom::thread::Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    pub(crate) fn current_waker() -> Waker {
        Waker::from(Arc::new(Unpark(loom::thread::current())))
    }
}

#[cfg(loom)]
pub(crate) use loom_waker::current_waker;

/// Blocks the loom thread until unparked.
#[cfg(loom)]
pub(crate) fn park() {
    loom::thread::park();
}

/// loom has no clock: models never use deadlines, so this is a plain park.
#[cfg(loom)]
pub(crate) fn park_until(_deadline: Instant) {
    loom::thread::park();
}
