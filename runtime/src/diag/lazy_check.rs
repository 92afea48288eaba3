//! Cycle checks that run only for waits that last: a fiber suspending on a wait with a known
//! owner notes a check with its worker, and the worker runs the notes whose waits are still
//! on when it next looks.
//!
//! A check reads the records of every fiber along the owners and looks each one up in the
//! fiber table; done at every such park it cost a contended mutex handoff more than the
//! handoff itself. Most of these waits end long before a worker's next look (a lock handed
//! over, a join on a fiber about to finish), and a wait that has ended closes no cycle. So the
//! worker runs, like the arming of lazy timers (`wait::lazy_timer`):
//!
//! - at its periodic check, the notes made before the previous check;
//! - before it sleeps, all of them;
//! - before a fiber blocks its thread (an unwinding fiber's park), all of them.
//!
//! Every cycle is still found: the last of its fibers to start waiting noted a check, and its
//! worker runs that note before it sleeps or within two check intervals, at a time when every
//! fiber of the cycle waits (they wait for ever). The check itself is the same walk as ever
//! (see `cycle`), from a fiber that is suspended rather than about to suspend.

use super::cycle;
use crate::fiber::Core;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// One worker's noted checks.
#[derive(Default)]
pub(crate) struct LazyChecks {
    /// Each fiber with the generation of the wait it noted, oldest first.
    noted: VecDeque<(Arc<Core>, u64)>,
    /// How many of `noted` were made before the last periodic check.
    older: usize,
}

impl LazyChecks {
    /// Notes a check for `fiber`'s wait of `generation`, which it has committed to suspend in.
    pub(crate) fn note(&mut self, fiber: Arc<Core>, generation: u64) {
        self.noted.push_back((fiber, generation));
    }

    /// Starts the periodic check: how many notes it runs, those made before the previous one.
    fn start_older(&mut self) -> usize {
        let count = self.older;
        self.older = self.noted.len() - count;
        count
    }

    /// Starts a check of every note: how many.
    fn start_all(&mut self) -> usize {
        self.older = 0;
        self.noted.len()
    }
}

/// The periodic check: runs the notes made before the previous one. Whether a check woke
/// fibers (a cycle under `Deadlock::Panic`).
pub(crate) fn run_older(checks: &RefCell<LazyChecks>) -> bool {
    let count = checks.borrow_mut().start_older();
    run(checks, count)
}

/// Runs every note. Whether a check woke fibers.
pub(crate) fn run_all(checks: &RefCell<LazyChecks>) -> bool {
    let count = checks.borrow_mut().start_all();
    run(checks, count)
}

/// Runs the oldest `count` notes whose waits are still on, one at a time with `checks` not
/// borrowed: a check that finds a cycle under `Deadlock::Panic` wakes its fibers, and the
/// last reference to a fiber may go with its note.
fn run(checks: &RefCell<LazyChecks>, count: usize) -> bool {
    let mut woke = false;
    for _ in 0..count {
        let Some((fiber, generation)) = checks.borrow_mut().noted.pop_front() else {
            break;
        };
        if fiber.diag.publishes(generation) && fiber.latch.is_suspended() {
            woke |= cycle::check(&fiber);
        }
    }
    woke
}

#[cfg(test)]
mod tests {
    use super::LazyChecks;

    #[test]
    fn the_periodic_check_takes_the_notes_made_before_the_previous_one() {
        crate::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| {
                let core = crate::sched::with_running(|core| {
                    let core = core.expect("in a fiber");
                    core.shared.fibers.get(core.id.as_u64()).expect("listed")
                });
                let generations = |checks: &LazyChecks| -> Vec<u64> {
                    checks.noted.iter().map(|note| note.1).collect()
                };
                let mut checks = LazyChecks::default();
                checks.note(core.clone(), 1);
                assert_eq!(checks.start_older(), 0);
                checks.note(core.clone(), 3);
                assert_eq!(
                    checks.start_older(),
                    1,
                    "only the note before the last check"
                );
                checks.noted.pop_front();
                assert_eq!(generations(&checks), [3]);
                checks.note(core.clone(), 5);
                assert_eq!(checks.start_older(), 1);
                checks.noted.pop_front();
                assert_eq!(checks.start_all(), 1);
                assert_eq!(generations(&checks), [5]);
                checks.noted.pop_front();
                assert_eq!(
                    checks.start_older(),
                    0,
                    "a check of all leaves nothing older"
                );
            });
    }
}
