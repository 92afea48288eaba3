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
//! - [`Backoff`] and [`RetryBudget`] (with [`RETRY_TURNS`] and [`yield_cost`]) are the
//!   patience policy: how long a caller keeps trying before it parks, and who does not try at
//!   all (below).
//! - [`TaskTimer`] wakes a future's task at a deadline, on the driver's timer wheel.
//! - [`Waitable`] and [`Wait`] write the wait on a [`WaitList`] entry once for every primitive:
//!   blocking with a deadline, polled as a future, and given back when it ends early;
//!   [`PlainWaitable`] is the short form for a primitive whose wake alone ends a wait.
//!
//! Every blocking primitive is written over these: it registers [`current_waker`] where a
//! waker will find it, re-checks its condition, and parks.
//!
//! # Patience
//!
//! How long a caller keeps trying before it parks, for every primitive:
//!
//! - **A peer a few instructions from done** (a ring writer between its claim and its publish,
//!   the holder of a spin lock): [`Backoff`] spins a little, then yields the *thread* in case
//!   the OS preempted the peer. Never a fiber yield: a fiber is not switched out in the middle
//!   of such a step, so the peer is on another thread.
//! - **A channel operation (or a process `call`) that found nothing ready** retries, yielding
//!   the *fiber* between tries, for up to [`RETRY_TURNS`] fiber turns ([`RetryBudget`]) before
//!   it registers a waiter: the other party is often a moment away (ready on this worker, or
//!   running on another), and an operation completed by a retry costs neither side the lock
//!   nor a wake-up. A retry while fibers woken on the worker wait to run goes behind those
//!   only, as if woken itself, and costs a turn for each of them (and for each unstarted
//!   fiber, which may start first): the caller has often just woken the party it waits for (a
//!   send to a parked receiver, then a receive of its answer), and that party runs next.
//!   Otherwise a retry is a yield, which costs a turn for every fiber ready on the worker
//!   ([`yield_cost`]), so behind a long queue the operation registers at once: every retry
//!   would wait for the whole queue. A retry with nothing else ready on the worker (the peer
//!   runs on another) pauses the thread a moment for its first few tries, and yields the
//!   worker's thread after them: a peer on another core answers within
//!   a few hundred nanoseconds, less than a thread yield takes, and when the peer's worker
//!   waits for the same CPU (more runnable threads than cores), it runs during the later
//!   retries instead of after them. Once registered
//!   it parks at once: yielding again after registering did not clearly pay in an A/B run
//!   once the retries existed (the figures are in the `chan_pingpong` bench's documentation,
//!   `fibra-bench`).
//! - **A socket call that said `WouldBlock`** (`fibra-net`) retries [`RETRY_TURNS`] times
//!   however long the queue, placed by a [`RetryBudget`] while it can afford a retry and by
//!   plain yields after: its alternative, a wait on the reactor, costs the driver thread's
//!   work and a cross-thread wake whatever the queue, and the fibers ahead often include
//!   the peer. A socket whose retries keep missing skips them for a while.
//! - **Locks, semaphores and the other `fibra-sync` primitives** register and park at once:
//!   their fast path is one CAS, and a fair lock hands a released permit to the first
//!   registered waiter, so a caller that retried instead would only overtake the queue it is
//!   meant to join.
//!
//! Under loom nobody retries or spins: the retries repeat a try the models already explore,
//! and would only multiply the interleavings.

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
    charge_and_maybe_yield, park_fiber, park_fiber_checking, running_fiber, suspend, with_waker,
    Check, FiberTimer,
};
pub use park::{
    current_waker, in_fiber, park_current, park_current_at, park_current_until,
    park_current_until_at, park_current_until_at_checked_before,
};
pub use patience::{yield_cost, Backoff, RetryBudget, RETRY_TURNS};
pub use site::{Holder, WaitKind, WaitSite};
pub use task_timer::TaskTimer;
pub use waitable::{PlainWaitable, TimedOut, Wait, Waitable};
pub use wake_list::WakeList;
