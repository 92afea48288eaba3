//! Building blocks for writing new blocking primitives: a lock, a channel or a queue of your
//! own that parks a fiber (or, outside a runtime, a thread) the way fibra's own primitives do.
//!
//! Ordinary code does not need this module: use `fibra::sync`, `fibra::chan` and the rest. Three of its types appear in ordinary APIs and
//! are also at the crate root: [`Deadline`] (the deadline of a timed wait), [`TimedOut`] (what
//! a timed wait returns when its deadline passes) and [`WaitKind`] (what a fiber waits for, in
//! a dump).
//!
//! - [`current_waker`], [`park_current`] and [`park_current_until`] block the caller, fiber or
//!   plain thread, through one waker-shaped interface: a fiber is suspended while its worker
//!   runs other fibers, a thread is parked. Wake-ups may be spurious, so callers loop on their
//!   condition. A fiber's park is a cancellation point.
//! - [`Deadline`] is the one deadline type of timed waits; "never" is a value.
//! - [`WaitList`] is the waiter queue: FIFO, O(1) removal of a waiter that gives up, and a
//!   woken waiter keeps its slot until it collects it, so it learns under the lock whether it
//!   was woken or gave up first.
//! - [`WakeList`] collects wakers under a lock and wakes them after it is released.
//! - [`Backoff`] and [`RetryBudget`] (with [`RETRY_TURNS`] and [`yield_cost`]) decide how long
//!   a caller keeps trying before it parks (below).
//! - [`TaskTimer`] wakes a future's task at a deadline.
//! - [`Waitable`] and [`Wait`] write the wait on a [`WaitList`] entry once for every primitive:
//!   blocking with a deadline, polled as a future, and given back when it ends early;
//!   [`PlainWaitable`] is the short form for a primitive whose wake alone ends a wait.
//! - [`WaitSite`], [`WaitKind`] and [`Holder`] record what a fiber waits for and who holds it,
//!   so that [`dump`](crate::dump) and deadlock detection see waits on your primitive.
//!
//! A blocking primitive registers [`current_waker`] where a waker will find it, re-checks its
//! condition, and parks:
//!
//! ```
//! use fibra::wait::{current_waker, park_current};
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::sync::{Arc, Mutex};
//! use std::task::Waker;
//!
//! /// A flag one party raises and another waits for.
//! #[derive(Default)]
//! struct Flag {
//!     raised: AtomicBool,
//!     waiter: Mutex<Option<Waker>>,
//! }
//!
//! impl Flag {
//!     fn raise(&self) {
//!         self.raised.store(true, Ordering::SeqCst);
//!         if let Some(waker) = self.waiter.lock().unwrap().take() {
//!             waker.wake();
//!         }
//!     }
//!
//!     fn wait(&self) {
//!         while !self.raised.load(Ordering::SeqCst) {
//!             *self.waiter.lock().unwrap() = Some(current_waker());
//!             // Raised between the check and the registration: its wake found no waker.
//!             if self.raised.load(Ordering::SeqCst) {
//!                 break;
//!             }
//!             park_current(); // wake-ups may be spurious: the loop checks again
//!         }
//!     }
//! }
//!
//! fibra::run(|| {
//!     let flag = Arc::new(Flag::default());
//!     let raiser = flag.clone();
//!     fibra::spawn(move || raiser.raise());
//!     flag.wait();
//! });
//! ```
//!
//! # How long to keep trying before parking
//!
//! Parking and being woken cost a lock and a cross-fiber (often cross-thread) wake-up. Pick
//! by what the caller waits for:
//!
//! - **A peer a few instructions from done** (between two steps of a lock-free update, or
//!   holding a spin lock): spin with [`Backoff`]. It spins a little, then yields the *thread*
//!   in case the OS preempted the peer — never the fiber, since a fiber is not switched out in
//!   the middle of such a step, so the peer is on another thread.
//! - **A party that is often a moment away** (a channel whose other end is running, or ready
//!   to run): retry with a [`RetryBudget`], which yields the fiber between tries for up to
//!   [`RETRY_TURNS`] fiber turns and charges each retry by what it costs — a turn for every
//!   fiber that runs first ([`yield_cost`]) — so behind a long queue of ready fibers the
//!   caller registers at once. When the budget is spent, register and park.
//! - **A fair primitive** (a lock or semaphore that hands a released permit to its first
//!   waiter): register and park at once. A caller that retried instead would overtake the
//!   queue it is meant to join.
//!
//! Once registered, park at once: retrying after registering does not pay.

#[cfg(all(test, not(loom)))]
mod counting_waker;
mod lazy_timer;
mod list;
mod park;
mod patience;
mod site;
mod task_timer;
mod waitable;
mod wake_list;

/// The internal lock of a primitive's waiter list.
pub use crate::loom::sync::Lock;
pub use fibra_driver::Deadline;
pub(crate) use lazy_timer::LazyTimers;
pub use list::{Key, Popped, WaitList};
pub(crate) use park::{
    charge_and_maybe_yield, park_current_until_as, park_fiber, park_fiber_checking, running_fiber,
    suspend, with_waker, Check, FiberTimer,
};
pub use park::{
    current_waker, in_fiber, park_current, park_current_at, park_current_until,
    park_current_until_at, park_current_until_at_checked_before, park_current_until_at_checked_if,
};
pub use patience::{yield_cost, Backoff, RetryBudget, RETRY_TURNS};
pub use site::{Holder, WaitKind, WaitSite};
pub use task_timer::TaskTimer;
pub use waitable::{PlainWaitable, TimedOut, Wait, Waitable};
pub use wake_list::WakeList;
