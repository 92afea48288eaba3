//! The order in which a worker runs its own fibers: woken fibers and batches of unstarted ones.
//!
//! The fibers a running fiber spawns form a *batch*. When the spawner suspends, its batch goes
//! onto the worker's queue of unstarted fibers, on top of the batches before it (the queue is
//! a stack that other workers steal from at the bottom), oldest child on top, so the children
//! of one parent start in spawn order and the newest batch goes first (depth first: a tree of
//! spawns and joins keeps few stacks in use). A fiber woken while a batch is being started
//! runs once that batch's remaining fibers have started, before any older batch: a parent
//! woken by its first child finds the other children started (often finished) when it runs,
//! instead of parking again for each. A batch whose fibers have all started no longer counts,
//! unless the woken fiber spawned it: then it runs next, and finishes that part of the tree
//! before its siblings start. Woken fibers run in the order they were woken.
//!
//! This is kept as a stack of *levels*. Each level is a batch's count of fibers still queued
//! (as far as this worker knows: thieves take from the bottom of the queue unseen, which only
//! makes a count too high until the queue is found empty) and the fibers woken while it was
//! the top level, which are contiguous in one FIFO. The bottom level has no batch and holds
//! wakes that arrive while no batch is queued.

use std::collections::VecDeque;

pub(crate) struct RunOrder<T> {
    /// Woken fibers, the wakes of each level after those of the levels below it.
    woken: VecDeque<T>,
    /// Bottom first; never empty. The bottom level has no batch: its `queued` and
    /// `first_woken` stay 0.
    levels: Vec<Level>,
}

struct Level {
    /// The fiber that spawned the batch.
    spawner: u64,
    /// Fibers of this level's batch still in the worker's queue of unstarted fibers.
    queued: usize,
    /// Where this level's wakes start in `woken`.
    first_woken: usize,
}

/// What a worker runs next from its own queues.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<T> {
    /// The fiber at the top of the queue of unstarted fibers (counted as taken).
    Unstarted,
    Woken(T),
    /// Nothing counted: the queue of unstarted fibers may still hold fibers no batch counts.
    Empty,
}

impl<T> RunOrder<T> {
    pub(crate) fn new() -> RunOrder<T> {
        RunOrder {
            woken: VecDeque::new(),
            levels: vec![Level {
                spawner: 0,
                queued: 0,
                first_woken: 0,
            }],
        }
    }

    /// A fiber woken (or pinned here unstarted), whose id is `id`: it runs after the rest of
    /// the top level's batch. Levels whose batches have all started are left first, unless
    /// `id` spawned the batch: a fiber woken by its own children runs before its siblings.
    #[inline]
    pub(crate) fn wake(&mut self, fiber: T, id: u64) {
        if self.levels.len() > 1 {
            self.leave_used_up_levels(id);
        }
        self.woken.push_back(fiber);
    }

    /// Pops the top levels whose batches have all started and whose wakes have all run,
    /// down to one `id` spawned.
    fn leave_used_up_levels(&mut self, id: u64) {
        while self.levels.len() > 1 {
            let top = self.levels.last().expect("the bottom level stays");
            let used_up = top.queued == 0 && self.woken.len() <= top.first_woken;
            if !used_up || top.spawner == id {
                break;
            }
            self.levels.pop();
        }
    }

    /// `fibers` unstarted fibers, spawned by the fiber whose id is `spawner`, were pushed onto
    /// the queue as one batch.
    pub(crate) fn batch(&mut self, fibers: usize, spawner: u64) {
        if fibers > 0 {
            self.levels.push(Level {
                spawner,
                queued: fibers,
                first_woken: self.woken.len(),
            });
        }
    }

    /// Fibers woken and waiting to run.
    #[inline]
    pub(crate) fn woken_len(&self) -> usize {
        self.woken.len()
    }

    /// The woken fibers [`next`](Self::next) takes first, in its order, unless a batch's
    /// unstarted fibers come before them.
    pub(crate) fn upcoming(&self) -> impl Iterator<Item = &T> {
        let top = self.levels.last().expect("the bottom level stays");
        self.woken.range(top.first_woken.min(self.woken.len())..)
    }

    #[inline]
    pub(crate) fn next(&mut self) -> Next<T> {
        // Most steps find only the bottom level, which has no batch and whose wakes start at
        // the front.
        if self.levels.len() == 1 {
            debug_assert!(self.levels[0].queued == 0 && self.levels[0].first_woken == 0);
            return self.woken.pop_front().map_or(Next::Empty, Next::Woken);
        }
        self.next_in_levels()
    }

    fn next_in_levels(&mut self) -> Next<T> {
        loop {
            let top = self.levels.last_mut().expect("the bottom level stays");
            if top.queued > 0 {
                top.queued -= 1;
                return Next::Unstarted;
            }
            if self.woken.len() > top.first_woken {
                // Most steps take the front (the bottom level's batch starts there), which
                // `pop_front` does in a few instructions where `remove` weighs both halves.
                let fiber = match top.first_woken {
                    0 => self.woken.pop_front(),
                    at => self.woken.remove(at),
                };
                return Next::Woken(fiber.expect("in range"));
            }
            if self.levels.len() == 1 {
                return Next::Empty;
            }
            self.levels.pop();
        }
    }

    /// The queue of unstarted fibers was found empty: other workers took what was counted.
    pub(crate) fn queue_empty(&mut self) {
        for level in &mut self.levels {
            level.queued = 0;
        }
    }

    /// Removes the woken fiber `is` picks, wherever it waits.
    pub(crate) fn remove_woken(&mut self, is: impl Fn(&T) -> bool) -> Option<T> {
        let at = self.woken.iter().position(is)?;
        for level in &mut self.levels {
            if level.first_woken > at {
                level.first_woken -= 1;
            }
        }
        self.woken.remove(at)
    }

    /// Takes every woken fiber, forgetting the batches.
    pub(crate) fn take_woken(&mut self) -> VecDeque<T> {
        self.levels.truncate(1);
        std::mem::take(&mut self.woken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `order` to its end, with `queue` as the stack of unstarted fibers (top last).
    fn drain(order: &mut RunOrder<&'static str>, queue: &mut Vec<&'static str>) -> Vec<String> {
        let mut ran = Vec::new();
        loop {
            match order.next() {
                Next::Unstarted => match queue.pop() {
                    Some(fiber) => ran.push(fiber.to_owned()),
                    None => order.queue_empty(),
                },
                Next::Woken(fiber) => ran.push(format!("woken {fiber}")),
                Next::Empty => return ran,
            }
        }
    }

    #[test]
    fn a_fiber_woken_during_a_batch_runs_after_the_batch_and_before_older_batches() {
        let mut order = RunOrder::new();
        // Older batch: a, b (a on top), spawned by 1; then the newer batch c, d, spawned by 2.
        let mut queue = vec!["b", "a"];
        order.batch(2, 1);
        queue.extend(["d", "c"]);
        order.batch(2, 2);
        assert_eq!(order.next(), Next::Unstarted);
        assert_eq!(queue.pop(), Some("c"));
        order.wake("parent", 1);
        assert_eq!(
            drain(&mut order, &mut queue),
            ["d", "woken parent", "a", "b"]
        );
    }

    #[test]
    fn a_used_up_batch_keeps_only_its_spawner_ahead_of_older_batches() {
        let mut order = RunOrder::new();
        let mut queue = vec!["b", "a"];
        order.batch(2, 1);
        assert_eq!(order.next(), Next::Unstarted);
        assert_eq!(queue.pop(), Some("a"));
        // a (id 2) spawns one child, which starts.
        queue.push("a1");
        order.batch(1, 2);
        assert_eq!(order.next(), Next::Unstarted);
        assert_eq!(queue.pop(), Some("a1"));
        // a1 wakes a, its spawner: a runs before its sibling b.
        order.wake("a", 2);
        assert_eq!(order.next(), Next::Woken("a"));
        // a finishes and wakes the parent (id 1): a's batch is used up, so the parent waits
        // for the rest of its own.
        order.wake("parent", 1);
        assert_eq!(drain(&mut order, &mut queue), ["b", "woken parent"]);
    }

    #[test]
    fn wakes_without_a_batch_run_in_wake_order() {
        let mut order = RunOrder::new();
        order.wake("x", 1);
        order.wake("y", 2);
        assert_eq!(drain(&mut order, &mut Vec::new()), ["woken x", "woken y"]);
    }

    #[test]
    fn counts_stolen_from_under_the_owner_are_forgotten_when_the_queue_is_empty() {
        let mut order = RunOrder::new();
        order.batch(3, 1);
        order.wake("w", 2);
        // A thief took two of the three.
        let mut queue = vec!["a"];
        assert_eq!(drain(&mut order, &mut queue), ["a", "woken w"]);
    }

    #[test]
    fn removing_a_woken_fiber_keeps_the_levels_in_place() {
        let mut order = RunOrder::new();
        order.wake("low", 1);
        order.batch(1, 1);
        order.wake("high", 2);
        assert_eq!(order.remove_woken(|f| *f == "low"), Some("low"));
        assert_eq!(drain(&mut order, &mut vec!["u"]), ["u", "woken high"]);
    }
}
