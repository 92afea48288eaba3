//! Timed parks whose wake usually comes first: a deadline reaches the driver's wheel only if
//! the wait outlasts a moment.
//!
//! Putting a timer on the driver's wheel takes tokio's timer lock (contended by every worker)
//! and may wake the driver thread; taking it off takes the lock again. Most timed waits (a
//! `call`, a receive or a channel operation with a timeout) end by their wake long before
//! their deadline, often before their worker has run anything else. So a fiber that suspends
//! with a deadline only notes it with its worker, and the worker *arms* the noted waits still
//! parked (a timer on the wheel, polled with the fiber's waker, and the wait's hold) when it
//! next looks:
//!
//! - at its periodic check, the waits noted before the previous check: a busy worker arms a
//!   wait within two check intervals of scheduling steps;
//! - at the first scheduling step after the monitor thread's request, made once a tick (a few
//!   milliseconds) while the worker runs a fiber, the waits noted before the previous arming:
//!   a worker whose slices are long (fibers computing between checkpoints) arms a wait within
//!   two ticks and a slice, not dozens of slices;
//! - before it sleeps, all of them: when every worker sleeps, every timed wait holds its
//!   runtime, as the global deadlock check requires;
//! - before a fiber blocks its thread (an unwinding fiber's park), all of them.
//!
//! A wait ends (its timer deregistered, its hold released) when its fiber resumes. An armed
//! timer never fires early (see `fibra_driver::Timer`); one armed after its deadline wakes its
//! fiber at once. A wait that ends before it is armed never shows in `Runtime::holds`.

use super::park::FiberTimer;
use crate::fiber::Core;
use fibra_driver::{Deadline, HoldKind, Holds};
use slab::Slab;
use std::panic::Location;
use std::sync::Arc;
use std::task::Waker;

/// One worker's noted timed waits.
#[derive(Default)]
pub(crate) struct LazyTimers {
    waits: Slab<Noted>,
    /// The waits not yet armed, oldest first, each with its serial (a key is reused once its
    /// wait ended, so a stale one is told apart).
    unarmed: Vec<(usize, u64)>,
    /// How many of `unarmed` were noted before the last periodic check.
    older: usize,
    serial: u64,
}

struct Noted {
    serial: u64,
    deadline: Deadline,
    /// Where the wait began, for its hold.
    location: &'static Location<'static>,
    fiber: Arc<Core>,
    armed: Option<FiberTimer>,
}

impl LazyTimers {
    /// Notes that `fiber`, which has committed to park, waits at most until `deadline`; the
    /// key ends the wait.
    pub(crate) fn note(
        &mut self,
        deadline: Deadline,
        location: &'static Location<'static>,
        fiber: Arc<Core>,
    ) -> usize {
        self.serial += 1;
        let serial = self.serial;
        let key = self.waits.insert(Noted {
            serial,
            deadline,
            location,
            fiber,
            armed: None,
        });
        self.unarmed.push((key, serial));
        key
    }

    /// Ends the wait at `key`: deregisters its timer and releases its hold, if it was armed.
    pub(crate) fn end(&mut self, key: usize) {
        self.waits.try_remove(key);
    }

    /// The periodic check (or the monitor's request): arms the waits noted before the previous
    /// one. Whether a deadline had passed (its fiber was woken).
    pub(crate) fn arm_older(&mut self, holds: &Arc<Holds>) -> bool {
        let woke = self.arm(self.older, holds);
        self.older = self.unarmed.len();
        woke
    }

    /// Arms every noted wait. Whether a deadline had passed (its fiber was woken).
    pub(crate) fn arm_all(&mut self, holds: &Arc<Holds>) -> bool {
        let woke = self.arm(self.unarmed.len(), holds);
        self.older = 0;
        woke
    }

    fn arm(&mut self, count: usize, holds: &Arc<Holds>) -> bool {
        let mut woke = false;
        for (key, serial) in self.unarmed.drain(..count) {
            let Some(noted) = self.waits.get_mut(key).filter(|n| n.serial == serial) else {
                continue;
            };
            let owner = noted.fiber.id.as_u64();
            let hold = holds.take_at(HoldKind::Timer, Some(owner), noted.location);
            let mut timer = FiberTimer::held(noted.deadline, Some(hold));
            let waker = Waker::from(noted.fiber.clone());
            if timer.expired_for(&waker) {
                waker.wake();
                woke = true;
            }
            noted.armed = Some(timer);
        }
        woke
    }
}
