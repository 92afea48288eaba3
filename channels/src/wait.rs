//! The one blocking wait: park the caller until its waker is done or its deadline passes.
//! Every blocking channel and select operation parks here and nowhere else; the park is the
//! cancellation point (see `cancel`).

use crate::shim;
use crate::waiter::{Ended, Waiter};
use std::time::Instant;

/// How often a waiter yields, looking for its completion, before it parks. The party that will
/// complete it is often a moment away — already ready on this worker (a yield runs it), or
/// running on another worker — and a park costs a latch round trip here and a cross-worker
/// wake-up there (microseconds, against well under one for a few yields). Measured on the
/// ping-pong benches: 32 yields take a cross-worker round trip from ~2.4 µs to ~0.5 µs and a
/// one-worker one from ~245 ns to ~185 ns; a wait that really is long costs 32 extra
/// switches once. Not under loom: the yields check the same condition the park loop checks and
/// would only multiply the interleavings to explore.
#[cfg(not(loom))]
const YIELDS_BEFORE_PARK: u32 = 32;

/// How a [`block`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Operation `oper` completed.
    Done(usize),
    /// A claimer woke the waiter without completing anything: try again.
    Retry,
    /// The deadline passed first; the waiter is withdrawn.
    Deadline,
}

/// Parks until `waiter` is done (or woken to retry) or `deadline` passes, after a few yields (see
/// `YIELDS_BEFORE_PARK`). A waiter claimed before it could withdraw is waited for until done
/// (its claimer is mid-handoff). A cancelled fiber unwinds out of the park; the caller's
/// registration guard cleans up.
pub(crate) fn block(waiter: &Waiter, deadline: Option<Instant>) -> Parked {
    let mut deadline = deadline;
    #[cfg(not(loom))]
    for _ in 0..YIELDS_BEFORE_PARK {
        if let Some(ended) = waiter.ended() {
            return parked(ended);
        }
        shim::yield_now();
    }
    loop {
        if let Some(ended) = waiter.ended() {
            return parked(ended);
        }
        match deadline {
            Some(at) if Instant::now() >= at => {
                if waiter.try_abort().is_ok() {
                    return Parked::Deadline;
                }
                // Claimed meanwhile: the claimer wakes us once done.
                deadline = None;
            }
            Some(at) => shim::park_until(at),
            None => shim::park(),
        }
    }
}

fn parked(ended: Ended) -> Parked {
    match ended {
        Ended::Done(oper) => Parked::Done(oper),
        Ended::Retry => Parked::Retry,
    }
}
