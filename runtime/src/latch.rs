//! The per-fiber park/wake latch.
//!
//! Four states: `IDLE` (running, no token), `NOTIFIED` (a token is waiting to be consumed),
//! `WAITING` (the fiber has committed to suspend) and `DISPATCHED` (one waker has won the right to
//! put the fiber back on its worker's queue). Only the `WAITING → DISPATCHED` transition enqueues,
//! and it is a CAS, so a fiber is enqueued at most once per park and never lost.

use crate::loom::sync::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const NOTIFIED: u8 = 1;
const WAITING: u8 = 2;
const DISPATCHED: u8 = 3;

/// What the parking side must do after [`Latch::prepare_park`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Park {
    /// A token was waiting; it has been consumed and the fiber keeps running.
    Consumed,
    /// The fiber must suspend; exactly one later [`Latch::unpark`] returns [`Unpark::Dispatch`].
    Suspend,
}

/// What the waking side must do after [`Latch::unpark`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unpark {
    /// This call won: the caller must enqueue the fiber.
    Dispatch,
    /// Nothing to do: the token was left for the fiber or merged with an earlier one.
    Done,
}

/// One fiber's unpark token and suspension state.
#[derive(Debug)]
pub(crate) struct Latch {
    state: AtomicU8,
}

impl Latch {
    pub(crate) fn new() -> Latch {
        Latch {
            state: AtomicU8::new(IDLE),
        }
    }

    /// Called by the fiber itself before it suspends to park.
    pub(crate) fn prepare_park(&self) -> Park {
        // Only a waker moves the state while the fiber runs, and only IDLE → NOTIFIED, so one
        // CAS from the state we last saw decides (a failed CAS reads the latest value).
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            let (next, outcome) = match state {
                NOTIFIED => (IDLE, Park::Consumed),
                IDLE => (WAITING, Park::Suspend),
                state => unreachable!("fiber parked from latch state {state}"),
            };
            // Acquire pairs with the waker's release: what it wrote before unparking is visible
            // once the token is consumed. Release: what we wrote before parking (the worker's
            // lent reference above all) is visible to the waker that dispatches us.
            match self
                .state
                .compare_exchange(state, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return outcome,
                Err(actual) => state = actual,
            }
        }
    }

    /// Whether the fiber is suspended and nobody has woken it yet.
    pub(crate) fn is_suspended(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// Called by the fiber when it runs again after [`Park::Suspend`]. The dispatch consumed the
    /// token; unparks that arrived in between merged with it.
    pub(crate) fn resumed(&self) {
        // Acquire pairs with the dispatching waker's release.
        let previous = self.state.swap(IDLE, Ordering::Acquire);
        debug_assert_eq!(previous, DISPATCHED, "fiber resumed without a dispatch");
    }

    /// Sets the token. Returns [`Unpark::Dispatch`] to exactly one caller per suspension.
    pub(crate) fn unpark(&self) -> Unpark {
        // Every decision, "nothing to do" included, is taken by a successful RMW: a plain load
        // may return a stale NOTIFIED or DISPATCHED after the fiber has consumed it and parked
        // again, and acting on that would lose the wake-up. A failed CAS reports the latest
        // value to retry with.
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            let next = match state {
                IDLE => NOTIFIED,
                WAITING => DISPATCHED,
                // Already set or already dispatched: confirm it is still so.
                _ => state,
            };
            // Release: what the caller wrote before unparking is visible to the fiber once it
            // consumes the token or is resumed.
            match self
                .state
                .compare_exchange(state, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(WAITING) => return Unpark::Dispatch,
                Ok(_) => return Unpark::Done,
                Err(actual) => state = actual,
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn unpark_before_park_is_consumed_and_unparks_coalesce() {
        let latch = Latch::new();
        assert_eq!(latch.unpark(), Unpark::Done);
        assert_eq!(latch.unpark(), Unpark::Done);
        assert_eq!(latch.prepare_park(), Park::Consumed);
        assert_eq!(latch.prepare_park(), Park::Suspend);
    }

    #[test]
    fn exactly_one_unpark_dispatches_a_suspended_fiber() {
        let latch = Latch::new();
        assert_eq!(latch.prepare_park(), Park::Suspend);
        assert_eq!(latch.unpark(), Unpark::Dispatch);
        assert_eq!(latch.unpark(), Unpark::Done);
        latch.resumed();
        // The unpark during DISPATCHED merged with the dispatch: the next park suspends.
        assert_eq!(latch.prepare_park(), Park::Suspend);
    }
}
