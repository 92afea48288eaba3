//! The waiter: the selection state of one blocked caller — a fiber, a thread or a future —
//! that has registered on one or more channel operations.
//!
//! A waiter is claimed at most once. A party that finds the waiter's entry in a wait queue (a
//! sender meeting a parked receiver, a closer, …) must win [`Waiter::try_claim`] before it may
//! touch the entry's packet or take the entry's waker, and publishes the finished handoff with
//! [`Waiter::finish`] — or, when it turns out to have nothing to complete (a buffered value
//! another receiver took first, a close), wakes the waiter to try again with
//! [`Waiter::finish_retry`]. The waiter itself can withdraw with [`Waiter::try_abort`] (a
//! timeout, an operation found ready during registration, cancellation). The claim is one
//! compare-and-swap, so when several channels become ready at once exactly one of them wins and
//! the others see the claim fail.
//!
//! States: `WAITING` → `ABORTED`, or `WAITING` → claimed(oper) → done(oper) or `RETRY`.

use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use std::fmt;

/// Registered and not yet decided.
const WAITING: usize = 0;
/// Withdrawn by its owner: nobody may claim it any more.
const ABORTED: usize = 1;
/// Woken by a claimer that completed nothing: the owner withdraws and tries again.
const RETRY: usize = 2;

/// `claimed(oper)`: won by the party completing operation `oper`, handoff in progress.
fn claimed(oper: usize) -> usize {
    3 + 2 * oper
}

/// `done(oper)`: operation `oper` has completed; its packet holds the outcome.
fn done(oper: usize) -> usize {
    claimed(oper) + 1
}

/// How a claimer finished with a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Operation `oper` completed; its packet holds the outcome.
    Done(usize),
    /// Nothing completed; try again.
    Retry,
}

/// How far claimers have got with a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Nobody has claimed it (or it has withdrawn).
    Unclaimed,
    /// A claimer is mid-handoff: it finishes, then wakes the waiter.
    Claimed,
    /// A claimer has finished with it.
    Ended(Ended),
}

/// One blocked caller's selection state. Lives on the caller's stack (or in the caller's
/// future) for the whole time any wait-queue entry points to it. Its waker is in each of its
/// entries (moved in when a single operation registers, cloned per operation by a select), and
/// the claimer takes the one of the entry it claimed.
pub struct Waiter {
    state: AtomicUsize,
}

impl Waiter {
    /// A waiter nobody has claimed.
    pub(crate) fn new() -> Self {
        Waiter {
            state: AtomicUsize::new(WAITING),
        }
    }

    /// Claims the waiter for operation `oper`. True for exactly one claim, and only while
    /// nobody has claimed or aborted it before.
    pub(crate) fn try_claim(&self, oper: usize) -> bool {
        self.state
            .compare_exchange(WAITING, claimed(oper), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Withdraws the waiter. `Ok` when nobody had claimed it (and now nobody can); `Err` when a
    /// claim came first — then the claimed operation completes, see [`Waiter::done`].
    pub(crate) fn try_abort(&self) -> Result<(), ()> {
        self.state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .map(drop)
            .map_err(drop)
    }

    /// Publishes that the claimed operation `oper` has completed, after its packet was written.
    /// From this store on the waiter may be gone; the claimer wakes the entry's waker once it
    /// has let go of its locks.
    ///
    /// # Safety
    ///
    /// The caller won [`Waiter::try_claim`] and has not finished the waiter yet: the state
    /// moves from `claimed(oper)` to its end exactly once, which the owner relies on to know
    /// which of its entries the claimer freed.
    pub(crate) unsafe fn finish(&self, oper: usize) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), claimed(oper));
        self.state.store(done(oper), Ordering::Release);
    }

    /// Wakes the claimed waiter without completing anything: it is to try again.
    ///
    /// # Safety
    ///
    /// As for [`Waiter::finish`].
    pub(crate) unsafe fn finish_retry(&self) {
        self.state.store(RETRY, Ordering::Release);
    }

    /// Whether a claimer has claimed the waiter, or finished with it (then, how the wait
    /// ended).
    pub(crate) fn progress(&self) -> Progress {
        match self.state.load(Ordering::Acquire) {
            WAITING | ABORTED => Progress::Unclaimed,
            RETRY => Progress::Ended(Ended::Retry),
            state if state % 2 == 0 => Progress::Ended(Ended::Done((state - 4) / 2)),
            _ => Progress::Claimed,
        }
    }

    /// How the wait ended, once a claimer has finished with it.
    pub(crate) fn ended(&self) -> Option<Ended> {
        match self.progress() {
            Progress::Ended(ended) => Some(ended),
            Progress::Unclaimed | Progress::Claimed => None,
        }
    }

    /// The completed operation, once a claimer has finished it.
    pub(crate) fn done(&self) -> Option<usize> {
        match self.ended() {
            Some(Ended::Done(oper)) => Some(oper),
            _ => None,
        }
    }

    /// Whether the waiter may still be claimed. Only a hint (another party may be claiming it
    /// right now); decisions are made with [`Waiter::try_claim`].
    pub(crate) fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter").finish_non_exhaustive()
    }
}
