//! Where an unstarted fiber starts, and the per-worker load that decides it.
//!
//! A started fiber never moves, so the choice made at its start holds for its whole life. The
//! rule: a worker about to start a fiber from its own queue of unstarted fibers starts it itself
//! while its load is at most a band above the least loaded worker's; otherwise it hands the
//! fiber to that worker. The band between two loads is [`SLACK`], or a [`SPREAD`]th of the
//! smaller load when that is more. A worker's load counts the fibers homed on it (started or
//! pinned, not finished) plus those handed to it and not yet started, so a burst of hand-offs
//! spreads even while the receiving workers have not woken up yet: the decision depends on
//! counts, not on how fast other threads get a CPU.
//!
//! Hand-offs come in runs: once a worker hands a fiber to another, it goes on handing its next
//! ones to that worker until the target holds a band more than it, then starts its own until
//! it is the one a band ahead again. A burst is so dealt out in runs of about twice the band
//! rather than one by one: fibers spawned one after another often talk to each other (pairs,
//! pipelines, rings), and neighbours on one worker wake each other without a cross-thread
//! wake-up, which costs microseconds when the other worker's thread has to get a CPU first.
//! The band grows with the loads so that a large burst is cut into few runs (a ring of 1 000
//! processes spread over two workers crosses between them about 40 times per lap, not 200),
//! while the loads stay within a [`SPREAD`]th of each other.
//!
//! Spawn-then-join trees keep running depth first: the spawner parks on its join, its child
//! finishes before the load grows, and the loads of workers that run such trees stay within
//! the slack of each other.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many fibers more than the least loaded worker a worker may hold and still start its own
/// unstarted fibers itself.
pub(crate) const SLACK: usize = 2;
/// The band between two loads grows to this fraction of the smaller one.
pub(crate) const SPREAD: usize = 8;

/// How many fibers more than a worker with `load` another worker may hold and still start its
/// own unstarted fibers itself.
fn band(load: usize) -> usize {
    (load / SPREAD).max(SLACK)
}

/// Per-worker load counters. Written with atomic read-modify-writes (the owner on start and
/// finish, another worker on a hand-off), read relaxed: a stale read only makes one placement
/// a little less even.
pub(crate) struct Loads {
    counts: Box<[Count]>,
}

/// One worker's count, alone in its cache line: the owner changes it on every start and
/// finish, and sharing a line with another worker's count would make those two workers fight
/// over it.
#[repr(align(128))]
struct Count(AtomicUsize);

impl Loads {
    pub(crate) fn new(workers: usize) -> Loads {
        Loads {
            counts: (0..workers).map(|_| Count(AtomicUsize::new(0))).collect(),
        }
    }

    pub(crate) fn add(&self, worker: usize) {
        self.counts[worker].0.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn remove(&self, worker: usize) {
        self.counts[worker].0.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, worker: usize) -> usize {
        self.counts[worker].0.load(Ordering::Relaxed)
    }

    pub(crate) fn snapshot(&self) -> Vec<usize> {
        self.counts
            .iter()
            .map(|count| count.0.load(Ordering::Relaxed))
            .collect()
    }

    /// The worker that should start a fiber taken from `me`'s own queue: `None` for `me`
    /// itself, else the least loaded other worker (the first such after `me`, so equal loads
    /// share the hand-offs). `run` is the worker `me` handed its previous fiber to, if it did:
    /// the run of hand-offs to it goes on while it holds less than a band more than `me`.
    pub(crate) fn hand_off_target(&self, me: usize, run: Option<usize>) -> Option<usize> {
        let workers = self.counts.len();
        if workers == 1 {
            return None;
        }
        let mine = self.counts[me].0.load(Ordering::Relaxed);
        if let Some(target) = run {
            let theirs = self.counts[target].0.load(Ordering::Relaxed);
            if theirs < mine + band(mine.min(theirs)) {
                return Some(target);
            }
        }
        let (target, least) = (1..workers)
            .map(|offset| (me + offset) % workers)
            .map(|worker| (worker, self.counts[worker].0.load(Ordering::Relaxed)))
            .min_by_key(|&(_, load)| load)
            .expect("at least two workers");
        (mine > least + band(least)).then_some(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(counts: &[usize]) -> Loads {
        let loads = Loads::new(counts.len());
        for (worker, &count) in counts.iter().enumerate() {
            (0..count).for_each(|_| loads.add(worker));
        }
        loads
    }

    #[test]
    fn a_lone_worker_starts_everything_itself() {
        assert_eq!(loads(&[100]).hand_off_target(0, None), None);
    }

    #[test]
    fn within_the_slack_a_worker_starts_its_own_fibers() {
        assert_eq!(loads(&[SLACK, 0]).hand_off_target(0, None), None);
        assert_eq!(loads(&[SLACK + 3, 3, 7]).hand_off_target(0, None), None);
    }

    #[test]
    fn beyond_the_slack_the_least_loaded_worker_gets_the_fiber() {
        assert_eq!(loads(&[SLACK + 1, 0]).hand_off_target(0, None), Some(1));
        assert_eq!(loads(&[9, 5, 1, 4]).hand_off_target(0, None), Some(2));
        // Equal loads: the first worker after the caller.
        assert_eq!(loads(&[1, 1, 9, 1]).hand_off_target(2, None), Some(3));
    }

    #[test]
    fn a_burst_is_dealt_out_in_runs_of_consecutive_fibers() {
        let (placed, _) = deal(2, 4 * (2 * SLACK + 1) + SLACK + 1);
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for worker in placed {
            match runs.last_mut() {
                Some((last, length)) if *last == worker => *length += 1,
                _ => runs.push((worker, 1)),
            }
        }
        // The first run fills the slack; each later one is the width of the band.
        let run = 2 * SLACK + 1;
        assert_eq!(
            runs,
            [(0, SLACK + 1), (1, run), (0, run), (1, run), (0, run)]
        );
    }

    /// Where each of `fibers` spawned in a burst on worker 0 of `workers` starts.
    fn deal(workers: usize, fibers: usize) -> (Vec<usize>, Loads) {
        let loads = Loads::new(workers);
        let mut run = None;
        let placed = (0..fibers)
            .map(|_| {
                run = loads.hand_off_target(0, run);
                let worker = run.unwrap_or(0);
                loads.add(worker);
                worker
            })
            .collect();
        (placed, loads)
    }

    #[test]
    fn a_large_burst_is_cut_into_runs_that_grow_with_the_loads() {
        let (placed, loads) = deal(2, 1000);
        let changes = placed.windows(2).filter(|w| w[0] != w[1]).count();
        // With a fixed band of SLACK, runs of 2 * SLACK + 1: 199 changes.
        assert_eq!(changes, 35);
        let [a, b] = loads.snapshot()[..] else {
            unreachable!()
        };
        assert!(a.abs_diff(b) <= band(a.min(b)), "{a} and {b}");
        assert_eq!(a + b, 1000);
    }

    #[test]
    fn the_band_is_the_slack_until_a_spreadth_of_the_load_is_more() {
        assert_eq!(band(0), SLACK);
        assert_eq!(band(SLACK * SPREAD + SPREAD - 1), SLACK);
        assert_eq!(band(SPREAD * 10), 10);
        assert_eq!(
            loads(&[10 * SPREAD + 10, 10 * SPREAD]).hand_off_target(0, None),
            None
        );
        assert_eq!(
            loads(&[10 * SPREAD + 11, 10 * SPREAD]).hand_off_target(0, None),
            Some(1)
        );
    }

    #[test]
    fn removing_load_undoes_adding_it() {
        let loads = loads(&[SLACK + 1, 0]);
        loads.remove(0);
        assert_eq!(loads.snapshot(), [SLACK, 0]);
        assert_eq!(loads.hand_off_target(0, None), None);
    }
}
