//! Cycle checks that run only for waits that last: a fiber suspending on a wait with a known
//! owner makes sure its worker lists it, and the worker checks the listed fibers still
//! suspended in such a wait when it next looks.
//!
//! A check reads the records of every fiber along the owners and looks each one up in the
//! fiber table; done at every such park it cost a contended mutex handoff more than the
//! handoff itself. Most of these waits end long before a worker's next look (a lock handed
//! over, a join on a fiber about to finish), and a wait that has ended closes no cycle. So the
//! worker looks, like the arming of lazy timers (`wait::lazy_timer`):
//!
//! - at its periodic check, at most once per tick of the coarse clock (a millisecond or a
//!   few): a listed fiber seen suspended in the same wait at the previous look is checked;
//! - before it sleeps, and before a fiber blocks its thread (an unwinding fiber's park): every
//!   listed fiber suspended in such a wait is checked.
//!
//! A fiber is listed at most once (`Core::check_noted`), so a fiber that waits again and again
//! (a contended lock handed back and forth) pays for one listing, not one per suspension; a
//! look unlists a fiber it finds running, ready, finished or in another kind of wait, and one
//! it checked. A listing holds a reference to its fiber, which may outlive the fiber's run:
//! that is harmless because a finished fiber's values went with its body (see
//! `fiber_ctx::end_fiber`).
//!
//! Every cycle is still found: the last of its fibers to start waiting is listed, and its
//! worker checks it before it sleeps or within two looks, at a time when every
//! fiber of the cycle waits (they wait for ever). The check itself is the same walk as ever
//! (see `cycle`), from a fiber that is suspended rather than about to suspend.

use super::cycle::{self, DeadEnds};
use super::looking::Looking;
use crate::fiber::Core;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// One worker's listed fibers.
#[derive(Default)]
pub(crate) struct LazyChecks {
    listed: VecDeque<Listed>,
    /// The coarse clock at the last periodic look.
    looked_at: u64,
}

struct Listed {
    fiber: Arc<Core>,
    /// The generation of the wait the previous periodic look saw the fiber suspended in.
    seen: Option<u64>,
}

/// Which looks check a fiber.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    /// The periodic one: a fiber in the wait the previous look saw.
    Periodic,
    /// Before sleeping or blocking: every fiber suspended in an owned wait.
    All,
}

impl LazyChecks {
    /// Lists `fiber`, which runs on this worker, has committed to suspend in an owned wait
    /// and is not listed yet.
    pub(crate) fn list(&mut self, fiber: Arc<Core>) {
        fiber.check_noted.set(true);
        self.listed.push_back(Listed { fiber, seen: None });
    }

    /// The next of the listed fibers to look at, taken off the list.
    fn take(&mut self) -> Option<Listed> {
        self.listed.pop_front()
    }

    /// Lists `listed` again, seen in the wait of `generation`.
    fn keep(&mut self, mut listed: Listed, generation: u64) {
        listed.seen = Some(generation);
        self.listed.push_back(listed);
    }
}

/// The periodic look, at most once per tick of the coarse clock (`now`). Whether a check woke
/// fibers (a cycle under `Deadlock::Panic`).
pub(crate) fn run_periodic(checks: &RefCell<LazyChecks>, now: u64) -> bool {
    let due = std::mem::replace(&mut checks.borrow_mut().looked_at, now) != now;
    due && run(checks, Look::Periodic)
}

/// Checks every listed fiber suspended in an owned wait. Whether a check woke fibers.
pub(crate) fn run_all(checks: &RefCell<LazyChecks>) -> bool {
    run(checks, Look::All)
}

/// Looks at each fiber listed now, once, with `checks` not borrowed during a check: one that
/// finds a cycle under `Deadlock::Panic` wakes its fibers. A listed fiber runs only on this
/// worker, so none of them runs meanwhile, and the fields only it and this worker touch
/// (`check_noted`, its record's published wait) hold still.
fn run(checks: &RefCell<LazyChecks>, look: Look) -> bool {
    let mut woke = false;
    // One reader's look for every check of the pass (entering it costs a system call).
    let mut looking = None;
    let mut dead = DeadEnds::default();
    let count = checks.borrow().listed.len();
    for _ in 0..count {
        let Some(listed) = checks.borrow_mut().take() else {
            break;
        };
        let waiting = if listed.fiber.latch.is_suspended() {
            listed.fiber.diag.check_due()
        } else {
            None
        };
        match waiting {
            Some(generation) if look == Look::Periodic && listed.seen != Some(generation) => {
                checks.borrow_mut().keep(listed, generation);
            }
            Some(_) => {
                listed.fiber.check_noted.set(false);
                let looking = looking.get_or_insert_with(Looking::enter);
                woke |= cycle::check(&listed.fiber, looking, &mut dead);
            }
            None => listed.fiber.check_noted.set(false),
        }
    }
    woke
}

#[cfg(test)]
mod tests {
    use super::{run_all, run_periodic, LazyChecks};
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_fiber_that_suspends_again_and_again_is_listed_once() {
        crate::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| {
                let go = Arc::new(AtomicBool::new(false));
                let gate = go.clone();
                let owner = crate::spawn(move || {
                    while !gate.load(Ordering::SeqCst) {
                        crate::yield_now();
                    }
                });
                let owner_id = owner.fiber().id().as_u64();
                let joiner = crate::spawn(move || owner.join().unwrap());
                let joiner_id = joiner.fiber().id().as_u64();
                let listings = || {
                    crate::sched::with_worker(|local| {
                        let checks = local.expect("on a worker").checks();
                        let ids = checks.listed.iter().map(|listed| listed.fiber.id.as_u64());
                        ids.filter(|&id| id == joiner_id).count()
                    })
                };
                crate::yield_now();
                assert_eq!(listings(), 1, "suspended in a join: an owned wait");
                for _ in 0..5 {
                    // A spurious wake: the joiner suspends in its join again.
                    joiner.fiber().unpark();
                    crate::yield_now();
                    assert_eq!(listings(), 1, "listed once, however often it suspends");
                }
                assert_ne!(owner_id, joiner_id);
                go.store(true, Ordering::SeqCst);
                joiner.join().unwrap();
            });
    }

    #[test]
    fn a_look_unlists_a_fiber_that_is_not_suspended() {
        crate::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| {
                let core = crate::sched::with_running(|core| {
                    let core = core.expect("in a fiber");
                    core.shared.fibers.get(core.id.as_u64()).expect("listed")
                });
                let checks = RefCell::new(LazyChecks::default());
                checks.borrow_mut().list(core.clone());
                assert!(core.check_noted.get());
                assert!(!run_periodic(&checks, 1));
                assert!(!core.check_noted.get(), "running, so unlisted");
                assert!(checks.borrow().listed.is_empty());
                checks.borrow_mut().list(core.clone());
                assert!(!run_periodic(&checks, 1));
                assert!(core.check_noted.get(), "one periodic look per clock tick");
                assert!(!run_periodic(&checks, 2));
                assert!(!core.check_noted.get(), "the next tick's look");
                checks.borrow_mut().list(core.clone());
                assert!(!run_all(&checks));
                assert!(!core.check_noted.get());
                assert!(checks.borrow().listed.is_empty());
            });
    }
}
