//! What the waiting cores are built from: atomics, the short internal lock and parking come
//! from `std` and `fibra_runtime::wait` normally, and from `loom` under `--cfg loom`, so the same
//! code is model-checked and shipped.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

use std::task::Waker;
use std::time::Instant;

/// The internal lock around a waiter queue: held for a few instructions, never across a park.
pub(crate) struct Lock<T>(Mutex<T>);

impl<T> Lock<T> {
    const_unless_loom! {
        pub(crate) fn new(value: T) -> Lock<T> {
            Lock(Mutex::new(value))
        }
    }

    /// Locks, ignoring poison: nothing panics while holding it except an allocation failure,
    /// and the queues stay consistent at every step that could.
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A waker for the caller: its fiber's, or its thread's.
#[cfg(not(loom))]
pub(crate) fn current_waker() -> Waker {
    fibra_runtime::wait::current_waker()
}

/// Parks the caller until its waker is woken, or spuriously.
#[cfg(not(loom))]
pub(crate) fn park() {
    fibra_runtime::wait::park_current();
}

/// Like [`park`], and also returns once `deadline` has passed.
#[cfg(not(loom))]
pub(crate) fn park_until(deadline: Instant) {
    fibra_runtime::wait::park_current_until(deadline);
}

#[cfg(loom)]
struct LoomUnparker(loom::thread::Thread);

#[cfg(loom)]
impl std::task::Wake for LoomUnparker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Under loom the caller is a modelled thread.
#[cfg(loom)]
pub(crate) fn current_waker() -> Waker {
    Waker::from(std::sync::Arc::new(LoomUnparker(loom::thread::current())))
}

#[cfg(loom)]
pub(crate) fn park() {
    loom::thread::park();
}

/// loom has no clock: the models never time out, so this parks like [`park`].
#[cfg(loom)]
pub(crate) fn park_until(_deadline: Instant) {
    loom::thread::park();
}
