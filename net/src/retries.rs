//! Whether a fiber whose call said `WouldBlock` retries it a few times before it waits for the
//! reactor.
//!
//! A wait on the reactor costs a round trip through the driver thread: the reactor takes in
//! the readiness event there and wakes the fiber's worker, two thread wake-ups for every wait.
//! When the peer is a fiber on another worker (or a process on another core) the data often
//! arrives a few microseconds after the `WouldBlock`, well before that round trip ends. So a
//! fiber retries the call on its own worker, yielding between tries, up to [`RETRY_TURNS`]
//! times, and waits for the reactor only if none of the retries found the descriptor ready.
//!
//! Unlike a channel operation, a socket call retries that many times however many fibers are
//! ready on the worker: a retry behind a long queue waits while those fibers run (their peers
//! among them), and costs one syscall, where a wake-up from the reactor costs the driver
//! thread's work for the event and a cross-thread wake, whatever the queue. While the
//! runtime's [`RetryBudget`] can afford a retry it places it (behind just-woken fibers when
//! there are some); the tries beyond it are plain yields.
//!
//! Retries that find nothing cost a syscall each, so a descriptor whose retries keep missing
//! (an idle keep-alive connection, a peer parked on the same worker) stops retrying: after
//! `n` retry runs in a row that all missed, the next `2^n - 1` waits go straight to the
//! reactor (at most 63), and a run that finds the descriptor ready starts the
//! count again. So many connections that go idle at once (a server's fresh keep-alive
//! connections) each cost `RETRY_TURNS` failed syscalls on their first wait, spread over that
//! many turns of the worker's queue, and fewer and fewer after.
//!
//! A registered descriptor whose retries keep finding it ready is taken off the reactor (see
//! [`Retries::settled`]): the reactor takes in every readiness edge of a registered
//! descriptor, waited for or not, and on the driver thread each one costs a wake-up and its
//! share of a core. Two fibers on two workers trading messages over loopback find each
//! other's data by retrying every time, yet with their sockets registered (by one early wait)
//! each message also woke the driver thread: three threads on two cores, and the round trip
//! three times as long as without (`tcp_echo`'s `1c`). A later wait registers anew.
//!
//! The state is a hint: clones of a socket keep their own, and two fibers using one socket at
//! once may race on it, which changes only how often they retry.

use crate::source::would_block;
use fibra_runtime::wait::{RetryBudget, RETRY_TURNS};
use std::io;
use std::sync::atomic::{AtomicU8, Ordering};

/// Missed retry runs counted at most: the skipped waits stop doubling at `2^6 - 1`.
const MAX_MISSES: u8 = 6;
/// Retry runs in a row that found the descriptor ready, with no wait on the reactor between,
/// after which a registered descriptor leaves the reactor.
pub(crate) const SETTLING_HITS: u8 = 32;

/// One descriptor's retry hint (see the module docs).
#[derive(Default)]
pub(crate) struct Retries {
    /// Retry runs in a row that missed.
    misses: AtomicU8,
    /// Waits still to go to the reactor without retrying.
    skip: AtomicU8,
    /// Retry runs in a row that found the descriptor ready, up to [`SETTLING_HITS`].
    hits: AtomicU8,
}

impl Retries {
    /// Called by a fiber whose call said `WouldBlock`, before it waits for the reactor:
    /// unless the hint says to skip them, retries `op` [`RETRY_TURNS`] times, yielding before
    /// each try. `Some` with the first result that is not `WouldBlock`; `None` when the caller
    /// should wait.
    ///
    /// `unconfirmed`: no `WouldBlock` has confirmed that the descriptor is not ready (its
    /// readiness was cleared on a guess), so a wait that skips its retries still tries `op`
    /// once, at once, and counts it as no run.
    pub(crate) fn retry<R>(
        &self,
        unconfirmed: bool,
        op: &mut dyn FnMut() -> io::Result<R>,
    ) -> Option<io::Result<R>> {
        let skip = self.skip.load(Ordering::Relaxed);
        if skip > 0 {
            self.skip.store(skip - 1, Ordering::Relaxed);
            if unconfirmed {
                return Some(op()).filter(|result| !would_block(result));
            }
            return None;
        }
        let mut budget = RetryBudget::new();
        for _ in 0..RETRY_TURNS {
            if !budget.retry() {
                fibra_runtime::yield_now();
            }
            let result = op();
            if !would_block(&result) {
                self.misses.store(0, Ordering::Relaxed);
                let hits = self.hits.load(Ordering::Relaxed);
                self.hits
                    .store((hits + 1).min(SETTLING_HITS), Ordering::Relaxed);
                return Some(result);
            }
        }
        self.hits.store(0, Ordering::Relaxed);
        if RETRY_TURNS > 0 {
            let misses = (self.misses.load(Ordering::Relaxed) + 1).min(MAX_MISSES);
            self.misses.store(misses, Ordering::Relaxed);
            self.skip.store((1 << misses) - 1, Ordering::Relaxed);
        }
        None
    }

    /// Whether the last [`SETTLING_HITS`] retry runs all found the descriptor ready, with no
    /// wait between: its peer keeps up, and the caller may take it off the reactor. Counting
    /// starts again.
    pub(crate) fn settled(&self) -> bool {
        let settled = self.hits.load(Ordering::Relaxed) >= SETTLING_HITS;
        if settled {
            self.hits.store(0, Ordering::Relaxed);
        }
        settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most waits in a row that skip their retries, as the module docs promise.
    const MAX_SKIPPED: u8 = 63;

    fn blocked() -> io::Result<()> {
        Err(io::ErrorKind::WouldBlock.into())
    }

    /// Runs `retries` once on one worker with nothing else ready: how many times `op` ran and
    /// what came back, `op` saying `WouldBlock` until its `ready_at`th call.
    fn run(retries: &Retries, ready_at: Option<u32>) -> (u32, Option<io::Result<()>>) {
        let mut calls = 0;
        let result = retries.retry(false, &mut || {
            calls += 1;
            match ready_at {
                Some(at) if calls >= at => Ok(()),
                _ => blocked(),
            }
        });
        (calls, result)
    }

    fn on_one_worker<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_call_that_becomes_ready_during_the_retries_returns_without_a_wait() {
        on_one_worker(|| {
            let retries = Retries::default();
            let (calls, result) = run(&retries, Some(3));
            assert_eq!(calls, 3);
            assert!(result.is_some_and(|result| result.is_ok()));
        });
    }

    #[test]
    fn missed_runs_skip_twice_as_many_waits_each_time_and_a_hit_starts_again() {
        on_one_worker(|| {
            let retries = Retries::default();
            let mut skipped_after = Vec::new();
            for _ in 0..4 {
                let (calls, result) = run(&retries, None);
                assert_eq!(
                    calls,
                    fibra_runtime::wait::RETRY_TURNS,
                    "a full run of retries"
                );
                assert!(result.is_none(), "the caller waits");
                let mut skipped = 0;
                while retries.skip.load(Ordering::Relaxed) > 0 {
                    let (calls, result) = run(&retries, None);
                    assert_eq!(calls, 0, "a skipped wait retries nothing");
                    assert!(result.is_none());
                    skipped += 1;
                }
                skipped_after.push(skipped);
            }
            assert_eq!(skipped_after, [1, 3, 7, 15]);
            let (calls, result) = run(&retries, Some(1));
            assert_eq!(calls, 1);
            assert!(result.is_some());
            assert_eq!(
                retries.misses.load(Ordering::Relaxed),
                0,
                "a hit starts again"
            );
        });
    }

    #[test]
    fn settled_after_a_full_count_of_hit_runs_in_a_row_and_counting_starts_again() {
        on_one_worker(|| {
            let retries = Retries::default();
            let hits = |n: u8| {
                for _ in 0..n {
                    assert!(run(&retries, Some(1)).1.is_some());
                }
            };
            hits(SETTLING_HITS - 1);
            assert!(!retries.settled(), "one hit short");
            hits(1);
            assert!(retries.settled());
            assert!(!retries.settled(), "counting starts again");

            // A missed run starts the count again (the wait it skips makes no retries).
            hits(SETTLING_HITS - 1);
            assert!(run(&retries, None).1.is_none());
            assert_eq!(run(&retries, None).0, 0, "a skipped wait");
            hits(SETTLING_HITS - 1);
            assert!(!retries.settled(), "a miss started the count again");
            hits(1);
            assert!(retries.settled());
        });
    }

    #[test]
    fn an_unconfirmed_skipped_wait_tries_once_and_still_counts_as_skipped() {
        on_one_worker(|| {
            let retries = Retries::default();
            retries.skip.store(2, Ordering::Relaxed);
            let mut calls = 0;
            let found = retries.retry(true, &mut || {
                calls += 1;
                Ok(())
            });
            assert_eq!(calls, 1);
            assert!(found.is_some_and(|result| result.is_ok()));
            let mut calls = 0;
            let missed = retries.retry(true, &mut || {
                calls += 1;
                blocked()
            });
            assert_eq!(calls, 1, "one try, not a run");
            assert!(missed.is_none(), "the caller waits");
            assert_eq!(
                retries.skip.load(Ordering::Relaxed),
                0,
                "both waits skipped"
            );
            assert_eq!(retries.misses.load(Ordering::Relaxed), 0, "no run counted");
            assert_eq!(retries.hits.load(Ordering::Relaxed), 0, "no run counted");
        });
    }

    #[test]
    fn skipped_waits_never_exceed_the_cap() {
        on_one_worker(|| {
            let retries = Retries::default();
            for _ in 0..20 {
                run(&retries, None);
                assert!(retries.skip.load(Ordering::Relaxed) <= MAX_SKIPPED);
            }
        });
    }

    #[test]
    fn behind_a_long_queue_a_call_still_retries_and_the_queue_runs_between_tries() {
        on_one_worker(|| {
            use std::sync::atomic::AtomicU32;
            use std::sync::Arc;

            let retries = Retries::default();
            // More fibers ready than a budget holds turns: a channel operation would not retry.
            let queue = fibra_runtime::wait::RETRY_TURNS + 1;
            let turns = Arc::new(AtomicU32::new(0));
            let ready: Vec<_> = (0..queue)
                .map(|_| {
                    let turns = turns.clone();
                    fibra_runtime::spawn(move || {
                        turns.fetch_add(1, Ordering::Relaxed);
                        fibra_runtime::yield_now();
                        turns.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .collect();
            // Ready on its second try: every queued fiber has had its first turn by then.
            let mut seen = Vec::new();
            let result = retries.retry(false, &mut || {
                seen.push(turns.load(Ordering::Relaxed));
                if seen.len() < 2 {
                    blocked()
                } else {
                    Ok(())
                }
            });
            assert!(result.is_some_and(|result| result.is_ok()));
            assert_eq!(seen, [queue, 2 * queue]);
            ready.into_iter().for_each(|fiber| fiber.join().unwrap());
        });
    }
}
