//! The few synchronization pieces the handoff core uses: `std` and `fibra-runtime` normally,
//! `loom` under `--cfg loom`, so the same code is model-checked and shipped.
//!
//! Besides atomics, the lock (`lock::SpinLock` normally) and the cell, this is where the core blocks: `current_waker`,
//! `park` and `park_until` are the runtime's fiber-or-thread primitives normally and loom
//! threads under loom.

use std::time::Instant;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use fibra_runtime::loom::sync::SpinLock as Lock;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// Waits out a peer that is a few instructions from finishing what it started (the ring's
/// writer between its CAS and its stamp store): spins a little, then yields the thread in case
/// the OS preempted the peer. Not a fiber yield: a fiber is never switched out mid-operation,
/// so the peer runs on another thread.
pub(crate) struct Backoff {
    spins: u32,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff { spins: 0 }
    }

    pub(crate) fn snooze(&mut self) {
        self.spins = self.spins.saturating_add(1);
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        if self.spins <= 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

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

/// Lets other fibers on this worker (or other threads) run: not a cancellation point.
#[cfg(not(loom))]
pub(crate) fn yield_now() {
    fibra_runtime::yield_now();
}

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

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

/// Under loom a waker notifies a per-thread `loom::sync::Notify` rather than unparking the
/// thread: loom's join also blocks through the thread's park state, so a wake that arrives
/// after its waiter saw its completion and moved on to a join would look to loom like a
/// join woken without its thread finishing.
#[cfg(loom)]
mod loom_waker {
    use loom::sync::Notify;
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Notifier(Arc<Notify>);

    impl Wake for Notifier {
        fn wake(self: Arc<Self>) {
            self.0.notify();
        }
    }

    loom::thread_local! {
        static NOTIFY: Arc<Notify> = Arc::new(Notify::new());
    }

    pub(crate) fn current_waker() -> Waker {
        Waker::from(Arc::new(Notifier(NOTIFY.with(Arc::clone))))
    }

    /// Blocks the loom thread until its waker is woken (a wake that came first counts).
    pub(crate) fn park() {
        NOTIFY.with(|notify| notify.wait());
    }
}

#[cfg(loom)]
pub(crate) use loom_waker::{current_waker, park};

/// loom has no clock: models never use deadlines, so this is a plain park.
#[cfg(loom)]
pub(crate) fn park_until(_deadline: Instant) {
    park();
}
