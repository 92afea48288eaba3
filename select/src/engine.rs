//! The select loop: try the enabled arms (in random order, or written order when biased), retry
//! a few times (`Patience`), else wait on all of them through `Patience::wait`, which makes
//! exactly one arm win; repeat while the winner turns out to be an arm that does not accept a
//! closed channel.

use fibra_channels::op::{self, Attempt, Operation, Patience, Woken};
use fibra_runtime::wait::Deadline;
use std::time::Duration;

use crate::order::{shuffle, Order};

/// The index [`select`] returns when the default arm runs.
pub const DEFAULT: usize = usize::MAX;

/// What a select does when no arm is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Wait for an arm (no default arm).
    Block,
    /// Run the default arm at once (`default => …`).
    Now,
    /// Wait until the deadline, then run the default arm (`default(timeout) => …`); a never
    /// deadline waits for good. It waits also when no arm can complete (none enabled, or every
    /// channel closed and no arm accepts that): a loop around such a select then waits a
    /// timeout a turn rather than spinning, as Go's select on a timer does.
    Until(Deadline),
}

impl Fallback {
    /// Wait at most `timeout` (`default(timeout) => …`).
    pub fn timeout(timeout: Duration) -> Fallback {
        Fallback::Until(Deadline::after(timeout))
    }
}

/// Runs one select over `arms` (a `None` arm is disabled; `accepts_closed[i]` says whether arm
/// `i` is ready on a closed channel). Returns the index of the arm that completed, or
/// [`DEFAULT`]. Arms found closed that do not accept it are set to `None`.
///
/// # Panics
///
/// `select: all arms disabled` when no arm is enabled and there is no default;
/// `select: all channels closed` when every enabled arm's channel is closed, none accepts that,
/// and there is no default; either at the caller's line.
#[track_caller]
pub fn select(
    arms: &mut [Option<&dyn Operation>],
    accepts_closed: &[bool],
    biased: bool,
    fallback: Fallback,
) -> usize {
    assert_eq!(arms.len(), accepts_closed.len());
    op::cancellation_point();
    if arms.iter().all(Option::is_none) {
        if fallback == Fallback::Block {
            panic!("select: all arms disabled");
        }
        return default_when_nothing_can_complete(arms, fallback);
    }
    let mut order = Order::new();
    let mut patience = Patience::new();
    loop {
        order.fill(arms.len(), |i| arms[i].is_some());
        let order = order.as_mut_slice();
        if order.is_empty() {
            if fallback == Fallback::Block {
                panic!("select: all channels closed");
            }
            return default_when_nothing_can_complete(arms, fallback);
        }
        if !biased {
            shuffle(order);
        }
        for &i in order.iter() {
            let Some(arm) = arms[i] else { continue };
            match arm.try_now() {
                Attempt::Completed => return i,
                Attempt::Closed if accepts_closed[i] => return i,
                Attempt::Closed => arms[i] = None,
                Attempt::NotReady => {}
            }
        }
        if arms.iter().all(Option::is_none) {
            continue;
        }
        let deadline = match fallback {
            Fallback::Block => Deadline::NEVER,
            Fallback::Now => return DEFAULT,
            Fallback::Until(deadline) if deadline.has_passed() => return DEFAULT,
            Fallback::Until(deadline) => deadline,
        };
        if patience.retry(arms) {
            continue;
        }
        match patience.wait(arms, deadline) {
            Woken::Selected(i) => {
                let arm = arms[i].expect("a disabled arm cannot win");
                if arm.outcome() == Attempt::Closed && !accepts_closed[i] {
                    arms[i] = None;
                    continue;
                }
                return i;
            }
            Woken::Retry => {}
            Woken::TimedOut => return DEFAULT,
        }
    }
}

/// The default arm of a select none of whose `arms` can complete: at once under
/// [`Fallback::Now`], once the deadline has passed under [`Fallback::Until`] (a wait on no
/// operation, which only the deadline or a cancellation ends).
#[track_caller]
fn default_when_nothing_can_complete(arms: &[Option<&dyn Operation>], fallback: Fallback) -> usize {
    if let Fallback::Until(deadline) = fallback {
        while op::wait(arms, deadline) != Woken::TimedOut {}
    }
    DEFAULT
}
