//! The waiter: the selection state of one blocked caller — a fiber, a thread or a future —
//! that has registered on one or more channel operations.
//!
//! A waiter is claimed at most once. A party that finds the waiter's entry in a wait queue (a
//! sender meeting a parked receiver, a closer, …) must win [`Waiter::try_claim`] before it may
//! touch the entry's packet, and publishes the finished handoff with [`Waiter::finish`]; the
//! waiter itself can withdraw with [`Waiter::try_abort`] (a timeout, an operation found ready
//! during registration, cancellation). The claim is one compare-and-swap, so when several
//! channels become ready at once exactly one of them wins and the others see the claim fail.
//!
//! States: `WAITING` → `ABORTED`, or `WAITING` → claimed(oper) → done(oper).

use crate::shim::{AtomicUsize, Ordering};
use std::fmt;
use std::task::Waker;

/// Registered and not yet decided.
const WAITING: usize = 0;
/// Withdrawn by its owner: nobody may claim it any more.
const ABORTED: usize = 1;

/// `claimed(oper)`: won by the party completing operation `oper`, handoff in progress.
fn claimed(oper: usize) -> usize {
    2 + 2 * oper
}

/// `done(oper)`: operation `oper` has completed; its packet holds the outcome.
fn done(oper: usize) -> usize {
    claimed(oper) + 1
}

/// One blocked caller's selection state and its waker. Lives on the caller's stack (or in the
/// caller's future) for the whole time any wait-queue entry points to it.
pub struct Waiter {
    state: AtomicUsize,
    waker: Waker,
}

impl Waiter {
    /// A waiter that wakes `waker` when one of its operations completes.
    pub(crate) fn new(waker: Waker) -> Self {
        Waiter {
            state: AtomicUsize::new(WAITING),
            waker,
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
    /// Returns a clone of the waker for the claimer to wake once it has let go of its locks:
    /// from this store on the waiter may be gone.
    pub(crate) fn finish(&self, oper: usize) -> Waker {
        let waker = self.waker.clone();
        self.state.store(done(oper), Ordering::Release);
        waker
    }

    /// The completed operation, once a claimer has finished it.
    pub(crate) fn done(&self) -> Option<usize> {
        let state = self.state.load(Ordering::Acquire);
        (state >= 2 && state % 2 == 1).then(|| (state - 3) / 2)
    }

    /// Whether the waiter may still be claimed. Only a hint (another party may be claiming it
    /// right now); decisions are made with [`Waiter::try_claim`].
    pub(crate) fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// Whether waking this waiter wakes the same task as `waker`.
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        self.waker.will_wake(waker)
    }
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter").finish_non_exhaustive()
    }
}
