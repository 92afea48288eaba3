//! fibra's fiber-aware locks and coordination primitives.
//!
//! Every wait parks the caller instead of spinning or blocking a thread: a fiber is suspended
//! while its worker goes on running other fibers, a plain thread is parked, and the `*_async`
//! forms return futures for async code. Waiters are served in FIFO order unless stated, each
//! blocking operation has `try_*` and `*_timeout` forms, and everything held is released by an
//! RAII guard, so a fiber that unwinds releases it. Every wait is a cancellation point (it
//! parks through `fibra_runtime::wait`): a cancelled fiber unwinds out of it, leaving the queue
//! and passing on whatever it had just been granted.
//!
//! ```
//! use fibra::sync::{Mutex, Semaphore};
//!
//! let total = Mutex::new(0u64);
//! let slots = Semaphore::new(2);
//! fibra::run(|| {
//!     fibra::scope(|s| {
//!         for i in 1..=10 {
//!             let (total, slots) = (&total, &slots);
//!             s.spawn(move || {
//!                 let _permit = slots.acquire(); // at most two at a time
//!                 *total.lock() += i;
//!             });
//!         }
//!     });
//! });
//! assert_eq!(total.into_inner(), 55);
//! ```

use std::fmt;

/// Declares a `const fn` in normal builds and a plain `fn` under loom, whose types have no
/// const constructors: statics need the former, the models the latter.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(loom))]
        $(#[$attr])* $vis const fn $($rest)*
        #[cfg(loom)]
        $(#[$attr])* $vis fn $($rest)*
    };
}

mod shim;

mod barrier;
mod condvar;
mod counter;
mod counter_waits;
mod event;
mod event_count;
mod latch;
mod lazy;
mod mutex;
mod once;
mod once_cell;
mod owner;
mod raw_semaphore;
mod reentrant;
mod rwlock;
mod semaphore;
mod wait;
mod wait_group;
mod waiters;

pub use barrier::{Barrier, BarrierError, BarrierWaitResult};
pub use condvar::{Condvar, WaitResult};
pub use counter::UntilZero;
pub use event::{Event, EventWait};
pub use event_count::{AwaitValue, EventCount, Sequencer};
pub use latch::CountDownLatch;
pub use lazy::Lazy;
pub use mutex::{Mutex, MutexGuard, MutexLock};
pub use once::Once;
pub use once_cell::OnceCell;
pub use reentrant::{ReentrantMutex, ReentrantMutexGuard};
pub use rwlock::{RwLock, RwLockRead, RwLockReadGuard, RwLockWrite, RwLockWriteGuard};
pub use semaphore::{
    acquire_all, acquire_all_timeout, OwnedSemaphorePermit, Permit, Semaphore, SemaphoreAcquire,
};
pub use wait_group::WaitGroup;

/// A `*_timeout` wait ended because its timeout passed first.
///
/// ```
/// use std::time::Duration;
///
/// let lock = fibra::sync::Mutex::new(());
/// let _held = lock.lock();
/// assert_eq!(lock.lock_timeout(Duration::from_millis(1)).unwrap_err(), fibra::sync::TimedOut);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the wait timed out")
    }
}

impl std::error::Error for TimedOut {}
