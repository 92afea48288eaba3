//! Cycle checks that run only for waits that last: a fiber suspending on a wait with a known
//! owner notes a check with its worker, and the worker runs the notes of fibers still
//! suspended when it next looks. A fiber ends its note when it resumes, so a note never holds
//! the last reference to its fiber, and every suspension in such a wait (a spurious wake
//! parks again) notes a check of its own.
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
use crate::slab::Slab;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// One worker's noted checks.
#[derive(Default)]
pub(crate) struct LazyChecks {
    notes: Slab<Note>,
    /// The notes not yet run, oldest first, each with its serial (a key is reused once its
    /// note ended, so a stale one is told apart).
    unchecked: VecDeque<(usize, u64)>,
    /// How many of `unchecked` were noted before the last periodic check.
    older: usize,
    serial: u64,
}

struct Note {
    serial: u64,
    fiber: Arc<Core>,
    /// The generation of the wait the fiber suspended in.
    generation: u64,
}

impl LazyChecks {
    /// Notes a check for `fiber`, which has committed to suspend in its wait of `generation`;
    /// the key ends the note.
    pub(crate) fn note(&mut self, fiber: Arc<Core>, generation: u64) -> usize {
        self.serial += 1;
        let serial = self.serial;
        let key = self.notes.insert(Note {
            serial,
            fiber,
            generation,
        });
        self.unchecked.push_back((key, serial));
        key
    }

    /// Ends the note at `key`: its fiber has resumed.
    pub(crate) fn end(&mut self, key: usize) {
        self.notes.remove(key);
    }

    /// Starts the periodic check: how many notes it runs, those made before the previous one.
    fn start_older(&mut self) -> usize {
        let count = self.older;
        self.older = self.unchecked.len() - count;
        count
    }

    /// Starts a check of every note: how many.
    fn start_all(&mut self) -> usize {
        self.older = 0;
        self.unchecked.len()
    }

    /// The next unchecked note still on: its fiber and the generation of its wait.
    fn next(&mut self) -> Option<Option<(Arc<Core>, u64)>> {
        let (key, serial) = self.unchecked.pop_front()?;
        let note = self.notes.get_mut(key).filter(|note| note.serial == serial);
        Some(note.map(|note| (note.fiber.clone(), note.generation)))
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

/// Runs the oldest `count` notes, one at a time with `checks` not borrowed: a check that
/// finds a cycle under `Deadlock::Panic` wakes its fibers. The fiber of a note still on is
/// suspended on this worker and cannot resume meanwhile, so the note's reference outlives the
/// one taken here.
fn run(checks: &RefCell<LazyChecks>, count: usize) -> bool {
    let mut woke = false;
    for _ in 0..count {
        let Some(next) = checks.borrow_mut().next() else {
            break;
        };
        let Some((fiber, generation)) = next else {
            continue;
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
    fn the_periodic_check_takes_the_notes_made_before_the_previous_one_and_skips_ended_ones() {
        crate::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| {
                let core = crate::sched::with_running(|core| {
                    let core = core.expect("in a fiber");
                    core.shared.fibers.get(core.id.as_u64()).expect("listed")
                });
                let generation = |next: Option<Option<(_, u64)>>| next.map(|n| n.map(|n| n.1));
                let mut checks = LazyChecks::default();
                checks.note(core.clone(), 1);
                assert_eq!(checks.start_older(), 0);
                let ended = checks.note(core.clone(), 3);
                assert_eq!(
                    checks.start_older(),
                    1,
                    "only the note before the last check"
                );
                assert_eq!(generation(checks.next()), Some(Some(1)));
                checks.end(ended);
                // The ended note's key is reused: the serial tells the new note apart.
                checks.note(core.clone(), 5);
                assert_eq!(checks.start_older(), 1);
                assert_eq!(
                    generation(checks.next()),
                    Some(None),
                    "an ended note is skipped"
                );
                assert_eq!(checks.start_all(), 1);
                assert_eq!(generation(checks.next()), Some(Some(5)));
                assert_eq!(generation(checks.next()), None);
                assert_eq!(
                    checks.start_older(),
                    0,
                    "a check of all leaves nothing older"
                );
            });
    }
}
