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
//! makes a count too high until the queue is found empty) and its own FIFO of the fibers
//! woken while it was the top level. The bottom level has no batch and holds wakes that arrive
//! while no batch is queued. Each level's wakes are a queue of their own so that taking the
//! top level's next wake never moves the wakes waiting below it (a timer firing for thousands
//! of sleepers while their spawner's batches are still starting queues them on several
//! levels at once).

use std::collections::VecDeque;

pub(crate) struct RunOrder<T> {
    /// Wakes that arrived while no batch was queued: the bottom level, which has no batch.
    bottom: VecDeque<T>,
    /// The levels above the bottom one, bottom first.
    above: Vec<Level<T>>,
    /// Woken fibers on every level.
    woken: usize,
    /// Queues of levels that were left, kept for the next levels' wakes.
    spare: Vec<VecDeque<T>>,
}

struct Level<T> {
    /// The fiber that spawned the batch.
    spawner: u64,
    /// Fibers of this level's batch still in the worker's queue of unstarted fibers.
    queued: usize,
    /// Fibers woken while this was the top level, in wake order.
    woken: VecDeque<T>,
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
            bottom: VecDeque::new(),
            above: Vec::new(),
            woken: 0,
            spare: Vec::new(),
        }
    }

    /// A fiber woken (or pinned here unstarted), whose id is `id`: it runs after the rest of
    /// the top level's batch. Levels whose batches have all started are left first, unless
    /// `id` spawned the batch: a fiber woken by its own children runs before its siblings.
    #[inline]
    pub(crate) fn wake(&mut self, fiber: T, id: u64) {
        self.woken += 1;
        if self.above.is_empty() {
            self.bottom.push_back(fiber);
        } else {
            self.wake_above(fiber, id);
        }
    }

    fn wake_above(&mut self, fiber: T, id: u64) {
        self.leave_used_up_levels(id);
        match self.above.last_mut() {
            Some(top) => top.woken.push_back(fiber),
            None => self.bottom.push_back(fiber),
        }
    }

    /// Pops the top levels whose batches have all started and whose wakes have all run,
    /// down to one `id` spawned.
    fn leave_used_up_levels(&mut self, id: u64) {
        while let Some(top) = self.above.last() {
            let used_up = top.queued == 0 && top.woken.is_empty();
            if !used_up || top.spawner == id {
                break;
            }
            self.leave_top();
        }
    }

    /// Pops the top level, whose wakes have all run, keeping its queue for a later level.
    fn leave_top(&mut self) {
        if let Some(top) = self.above.pop() {
            debug_assert!(top.woken.is_empty());
            self.spare.push(top.woken);
        }
    }

    /// `fibers` unstarted fibers, spawned by the fiber whose id is `spawner`, were pushed onto
    /// the queue as one batch.
    pub(crate) fn batch(&mut self, fibers: usize, spawner: u64) {
        if fibers > 0 {
            let woken = self.spare.pop().unwrap_or_default();
            self.above.push(Level {
                spawner,
                queued: fibers,
                woken,
            });
        }
    }

    /// Fibers of the top level's batch still queued, as far as this worker knows (too many
    /// if thieves took some): unstarted fibers beyond these belong to older batches.
    pub(crate) fn top_batch_queued(&self) -> usize {
        self.above.last().map_or(0, |top| top.queued)
    }

    /// Fibers woken and waiting to run.
    #[inline]
    pub(crate) fn woken_len(&self) -> usize {
        self.woken
    }

    /// The woken fibers [`next`](Self::next) takes first, in its order, unless a batch's
    /// unstarted fibers come before them.
    pub(crate) fn upcoming(&self) -> impl Iterator<Item = &T> {
        self.above
            .last()
            .map_or(&self.bottom, |top| &top.woken)
            .iter()
    }

    #[inline]
    pub(crate) fn next(&mut self) -> Next<T> {
        // Most steps find only the bottom level, which has no batch.
        if self.above.is_empty() {
            return self.next_from_bottom();
        }
        self.next_in_levels()
    }

    /// The bottom level's next wake: what runs once no batch level is left.
    #[inline]
    fn next_from_bottom(&mut self) -> Next<T> {
        match self.bottom.pop_front() {
            Some(fiber) => {
                self.woken -= 1;
                Next::Woken(fiber)
            }
            None => Next::Empty,
        }
    }

    fn next_in_levels(&mut self) -> Next<T> {
        while let Some(top) = self.above.last_mut() {
            if top.queued > 0 {
                top.queued -= 1;
                return Next::Unstarted;
            }
            if let Some(fiber) = top.woken.pop_front() {
                self.woken -= 1;
                return Next::Woken(fiber);
            }
            self.leave_top();
        }
        self.next_from_bottom()
    }

    /// The queue of unstarted fibers was found empty: other workers took what was counted.
    pub(crate) fn queue_empty(&mut self) {
        for level in &mut self.above {
            level.queued = 0;
        }
    }

    /// Removes the woken fiber `is` picks, wherever it waits.
    pub(crate) fn remove_woken(&mut self, is: impl Fn(&T) -> bool) -> Option<T> {
        let fiber = std::iter::once(&mut self.bottom)
            .chain(self.above.iter_mut().map(|level| &mut level.woken))
            .find_map(|woken| {
                let at = woken.iter().position(&is)?;
                woken.remove(at)
            })?;
        self.woken -= 1;
        Some(fiber)
    }

    /// Takes every woken fiber, bottom level first, forgetting the batches.
    pub(crate) fn take_woken(&mut self) -> VecDeque<T> {
        let mut woken = std::mem::take(&mut self.bottom);
        for mut level in self.above.drain(..) {
            woken.append(&mut level.woken);
            self.spare.push(level.woken);
        }
        self.woken = 0;
        woken
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
    fn each_levels_wakes_run_in_wake_order_top_level_first() {
        let mut order = RunOrder::new();
        order.wake("low 1", 9);
        order.batch(1, 1);
        order.wake("mid 1", 9);
        order.wake("mid 2", 9);
        order.batch(1, 2);
        order.wake("high 1", 9);
        order.wake("high 2", 9);
        assert_eq!(order.woken_len(), 5);
        assert_eq!(
            order.upcoming().copied().collect::<Vec<_>>(),
            ["high 1", "high 2"]
        );
        assert_eq!(
            drain(&mut order, &mut vec!["m", "h"]),
            [
                "h",
                "woken high 1",
                "woken high 2",
                "m",
                "woken mid 1",
                "woken mid 2",
                "woken low 1"
            ]
        );
        assert_eq!(order.woken_len(), 0);
    }

    #[test]
    fn taking_every_woken_fiber_takes_them_bottom_level_first() {
        let mut order = RunOrder::new();
        order.wake("low", 9);
        order.batch(1, 1);
        order.wake("high", 9);
        assert_eq!(order.take_woken(), ["low", "high"]);
        assert_eq!(order.woken_len(), 0);
        // The batch is forgotten: a later wake runs at once.
        order.wake("later", 9);
        assert_eq!(order.next(), Next::Woken("later"));
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
