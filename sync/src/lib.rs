//! fibra's fiber-aware locks and coordination primitives.
//!
//! Every wait parks the caller instead of spinning or blocking a thread: a fiber is suspended
//! while its worker goes on running other fibers, a plain thread is parked, and the `*_async`
//! forms return futures for async code. Waiters are served in FIFO order unless stated, each
//! blocking operation has `try_*` and `*_timeout` forms, and everything held is released by an
//! RAII guard, so a fiber that unwinds releases it. Every wait is a cancellation point: a
//! cancelled fiber unwinds out of it, leaving the queue and passing on whatever it had just
//! been granted. A blocking lock or acquisition (`lock`, `read`, `write`, `acquire`, their
//! `*_timeout` forms) is a cancellation point and costs the fiber one reduction of its slice
//! even when it needs no wait, like a channel operation, so a fiber that keeps taking a free
//! lock still lets the others on its worker run; the `try_*` forms are neither.
//!
//! Every primitive that waits has an async form for async code, which fibers, threads and
//! tasks may mix on one primitive: [`Mutex::lock_async`], [`RwLock::read_async`] and
//! [`write_async`](RwLock::write_async), [`Semaphore::acquire_async`], [`acquire_all_async`],
//! [`ReentrantMutex::lock_async`], [`Condvar::wait_async`], [`Barrier::wait_async`],
//! [`Event::wait_async`], [`CountDownLatch::wait_async`], [`WaitGroup::wait_async`],
//! [`EventCount::await_value_async`], [`OnceCell::get_or_init_async`],
//! [`Once::call_once_async`] and [`Lazy::force_async`]. A future's wait begins when it is
//! first polled; dropping it gives up the wait as a cancelled fiber does, passing on whatever
//! it had just been granted.
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

/// Declares a public future that completes once a condition announced through an
/// [`EventCount`](crate::EventCount) holds: a named wrapper of `event_count::Announced`.
macro_rules! announced_future {
    ($(#[$attr:meta])* $name:ident for $target:ty) => {
        $(#[$attr])*
        #[must_use = "futures do nothing unless polled"]
        pub struct $name<'a>($crate::event_count::Announced<'a, $target>);

        impl<'a> $name<'a> {
            pub(crate) fn new(announced: $crate::event_count::Announced<'a, $target>) -> Self {
                $name(announced)
            }
        }

        impl ::std::future::Future for $name<'_> {
            type Output = ();

            fn poll(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<()> {
                self.0.poll(cx)
            }
        }

        impl ::std::fmt::Debug for $name<'_> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}

mod barrier;
mod condvar;
mod count_down_latch;
mod counter;
mod counter_waits;
mod event;
mod event_count;
mod lazy;
mod mutex;
mod once;
mod once_cell;
mod owner;
mod raw_semaphore;
mod reentrant;
mod rwlock;
mod semaphore;
mod wait_group;

pub use barrier::{Barrier, BarrierError, BarrierWait, BarrierWaitResult};
pub use condvar::{Condvar, CondvarWait, CondvarWaitWhile, WaitResult};
pub use count_down_latch::CountDownLatch;
pub use counter::UntilZero;
pub use event::{Event, EventWait};
pub use event_count::{AwaitValue, EventCount, Sequencer};
pub use lazy::{Lazy, LazyForce};
pub use mutex::{Mutex, MutexGuard, MutexLock};
pub use once::{CallOnce, Once};
pub use once_cell::{GetOrInit, GetOrTryInit, OnceCell};
pub use reentrant::{ReentrantMutex, ReentrantMutexGuard, ReentrantMutexLock};
pub use rwlock::{RwLock, RwLockRead, RwLockReadGuard, RwLockWrite, RwLockWriteGuard};
pub use semaphore::{
    acquire_all, acquire_all_async, acquire_all_timeout, AcquireAll, OwnedSemaphorePermit, Permit,
    Semaphore, SemaphoreAcquire,
};
pub use wait_group::WaitGroup;

pub use fibra_runtime::wait::TimedOut;
