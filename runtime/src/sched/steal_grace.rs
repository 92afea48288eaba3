//! When an idle worker may steal a lone unstarted fiber from another worker.
//!
//! A fiber that spawns one child and then waits on it (a request to a process it just
//! started, one end of a ping-pong, a spawn-then-join) leaves the child alone in its worker's
//! queue of unstarted fibers until it parks; then its worker starts the child at once. An idle
//! worker that steals the child in that moment puts the two on different workers for good
//! (started fibers never move), and every wake between them then crosses threads. So a thief
//! leaves a queue that holds a single fiber alone for [`GRACE`] after it first sees that fiber
//! there; a queue of two or more is stolen from at once (a burst, which placement spreads
//! anyway), and after the grace a lone fiber is stolen too, so a spawner that goes on computing
//! delays its child by no more than that. Go's scheduler waits the same way before it steals
//! another processor's `runnext`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a thief leaves a lone unstarted fiber queued after it first sees it: longer than a
/// spawner takes from the spawn to its park when it only sends a message or two in between.
pub(crate) const GRACE: Duration = Duration::from_micros(5);

/// How many fibers a worker has queued as unstarted, so that a thief can tell whether the lone
/// fiber it sees is the one it saw before. Only the owning worker writes it.
#[derive(Default)]
pub(crate) struct Queued(AtomicU64);

impl Queued {
    /// Counts one more fiber queued; called by the owning worker only, so a plain load and
    /// store suffice (no read-modify-write on the spawn path).
    #[inline]
    pub(crate) fn count(&self) {
        let queued = self.0.load(Ordering::Relaxed);
        self.0.store(queued.wrapping_add(1), Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A thief's first sightings of lone fibers, one per victim worker.
pub(crate) struct Sightings {
    seen: Box<[Cell<Option<Sighting>>]>,
    /// [`GRACE`], unless a test changed it.
    grace: Duration,
}

/// A victim's queue seen holding one fiber: which one (by the victim's [`Queued`] count) and
/// when.
#[derive(Clone, Copy)]
struct Sighting {
    queued: u64,
    at: Instant,
}

impl Sightings {
    pub(crate) fn new(workers: usize, grace: Duration) -> Sightings {
        Sightings {
            seen: (0..workers).map(|_| Cell::new(None)).collect(),
            grace,
        }
    }

    /// Whether to leave the one fiber queued at `victim`, the `queued`th it queued, alone for
    /// now: this thief first saw it there less than the grace before `now`.
    pub(crate) fn leave(&self, victim: usize, queued: u64, now: Instant) -> bool {
        let seen = &self.seen[victim];
        match seen.get() {
            Some(sighting) if sighting.queued == queued => {
                now.saturating_duration_since(sighting.at) < self.grace
            }
            _ => {
                seen.set(Some(Sighting { queued, at: now }));
                true
            }
        }
    }

    /// `victim`'s queue holds no fiber or several: a lone fiber seen there later is new.
    pub(crate) fn forget(&self, victim: usize) {
        self.seen[victim].set(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn this_worker() -> usize {
        crate::current_worker().expect("on a worker")
    }

    /// Spawns a fiber that tells when it has started and returns its worker.
    fn spawn_lone_child() -> (Arc<AtomicBool>, crate::JoinHandle<usize>) {
        let started = Arc::new(AtomicBool::new(false));
        let flag = started.clone();
        let child = crate::spawn(move || {
            flag.store(true, Ordering::Relaxed);
            this_worker()
        });
        (started, child)
    }

    /// Spins without a runtime operation until `done` or `limit` has passed; whether `done`.
    fn spin_until(limit: Duration, done: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while !done() {
            if start.elapsed() > limit {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    }

    #[test]
    fn a_lone_child_waits_for_its_spawner_to_park_and_starts_on_its_worker() {
        for workers in [2, 4] {
            // A grace no run of this test outlasts: no idle worker may take the child while
            // the spawner computes, however long the machine keeps it from parking.
            let runtime = crate::Runtime::builder()
                .workers(workers)
                .steal_grace(Duration::from_secs(3600))
                .build()
                .unwrap();
            runtime.block_on(|| {
                for _ in 0..10 {
                    let (started, child) = spawn_lone_child();
                    // Long enough for the other workers to wake up and look at the queue.
                    let stolen = spin_until(Duration::from_millis(20), || {
                        started.load(Ordering::Relaxed)
                    });
                    assert!(
                        !stolen,
                        "an idle worker took the lone child ({workers} workers)"
                    );
                    assert_eq!(child.join().unwrap(), this_worker());
                }
            });
        }
    }

    #[test]
    fn a_lone_child_of_a_spawner_that_goes_on_computing_is_stolen_after_the_grace() {
        for workers in [2, 4] {
            let runtime = crate::Runtime::builder().workers(workers).build().unwrap();
            runtime.block_on(|| {
                let (started, child) = spawn_lone_child();
                // Only another worker can start it while this fiber holds its own.
                let stolen =
                    spin_until(Duration::from_secs(30), || started.load(Ordering::Relaxed));
                assert!(stolen, "the lone child never started ({workers} workers)");
                assert_ne!(child.join().unwrap(), this_worker());
            });
        }
    }

    #[test]
    fn a_lone_fiber_is_left_for_the_grace_after_it_is_first_seen() {
        let sightings = Sightings::new(2, GRACE);
        let first = Instant::now();
        assert!(sightings.leave(1, 7, first));
        assert!(sightings.leave(1, 7, first + GRACE / 2));
        assert!(!sightings.leave(1, 7, first + GRACE));
    }

    #[test]
    fn a_new_lone_fiber_gets_its_own_grace() {
        let sightings = Sightings::new(2, GRACE);
        let first = Instant::now();
        assert!(sightings.leave(1, 7, first));
        // The owner started fiber 7 and queued fiber 8 meanwhile.
        assert!(sightings.leave(1, 8, first + GRACE));
        assert!(!sightings.leave(1, 8, first + 2 * GRACE));
    }

    #[test]
    fn each_victim_has_its_own_sighting() {
        let sightings = Sightings::new(3, GRACE);
        let first = Instant::now();
        assert!(sightings.leave(1, 7, first));
        assert!(sightings.leave(2, 3, first + GRACE));
        assert!(!sightings.leave(1, 7, first + GRACE));
        assert!(sightings.leave(2, 3, first + GRACE));
    }

    #[test]
    fn a_fiber_seen_alone_again_after_a_busier_queue_starts_a_new_grace() {
        let sightings = Sightings::new(2, GRACE);
        let first = Instant::now();
        assert!(sightings.leave(1, 7, first));
        // Seen with a second fiber queued behind it, then alone again (the other was stolen).
        sightings.forget(1);
        assert!(sightings.leave(1, 7, first + GRACE));
    }
}
