//! The waiting toolkit every fibra primitive is built on: mechanism here, policy in the
//! primitives (who is woken, in what order, what a wake grants).
//!
//! - [`current_waker`], [`park_current`] and [`park_current_until`] block the caller, fiber or
//!   plain thread, through one waker-shaped interface: a fiber is suspended while its worker
//!   runs other fibers, a thread is parked. Wake-ups may be spurious, so callers loop on their
//!   condition. A fiber's park is a cancellation point, and its timed park goes through the
//!   driver's timer wheel and takes a hold.
//! - [`Deadline`] is the one deadline type of timed waits; "never" is a value.
//! - [`WaitList`] is the waiter queue: FIFO, O(1) removal of a waiter that gives up, and a
//!   woken waiter keeps its slot until it collects it, so it learns under the lock whether it
//!   was woken or gave up first.
//! - [`WakeList`] collects wakers under a lock and wakes them after it is released.
//! - [`Waitable`] and [`Wait`] write the wait on a [`WaitList`] entry once for every primitive:
//!   blocking with a deadline, polled as a future, and given back when it ends early.
//!
//! Every blocking primitive is written over these: it registers [`current_waker`] where a
//! waker will find it, re-checks its condition, and parks.

mod list;
mod park;
mod site;
mod waitable;
mod wake_list;

pub use fibra_driver::Deadline;
pub use list::{Key, WaitList};
pub use park::{
    current_waker, in_fiber, park_current, park_current_at, park_current_until,
    park_current_until_at,
};
pub(crate) use park::{
    park_fiber, park_fiber_checking, running_fiber, suspend, with_waker, yield_fiber, Check,
    FiberTimer,
};
pub(crate) use site::Owner;
pub use site::{Holder, WaitKind, WaitSite};
pub use waitable::{TimedOut, Wait, Waitable};
pub use wake_list::WakeList;
