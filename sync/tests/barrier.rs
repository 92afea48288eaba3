//! Barrier: cyclic, arrival indices and the leader, the action before release, breaking by
//! timeout or by a panicking action, reset.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Barrier, BarrierError};
use fibra_testing::{let_others_run, on, on_each_worker_count, until_parked};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

/// Parks a fiber of this worker in `barrier.wait()`, runs `break_it` while it waits there, and
/// checks that the wait then ends in `Broken`: what a timeout, a reset and a panicking action
/// must all do to a waiter.
fn breaks_a_parked_waiter(barrier: &Arc<Barrier>, break_it: impl FnOnce()) {
    let waiter = {
        let barrier = barrier.clone();
        fibra_runtime::spawn_local(move || barrier.wait())
    };
    let_others_run();
    break_it();
    assert_eq!(waiter.join().unwrap(), Err(BarrierError::Broken));
}

#[test]
fn every_cycle_has_one_leader_and_indices_zero_to_parties() {
    on_each_worker_count(|_| {
        let barrier = Barrier::new(5);
        let results = StdMutex::new(Vec::new());
        fibra_runtime::scope(|s| {
            for _ in 0..5 {
                s.spawn(|| {
                    for round in 0..4 {
                        let r = barrier.wait().unwrap();
                        results
                            .lock()
                            .unwrap()
                            .push((round, r.index(), r.is_leader()));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap();
        results.sort();
        let expected: Vec<_> = (0..4)
            .flat_map(|round| (0..5).map(move |i| (round, i, i == 4)))
            .collect();
        assert_eq!(results, expected);
    });
}

#[test]
fn nobody_passes_before_the_last_arrival() {
    on_each_worker_count(|_| {
        let barrier = Barrier::new(4);
        let arrived = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for round in 1..=10 {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        barrier.wait().unwrap();
                        assert!(arrived.load(Ordering::SeqCst) >= 4 * round);
                        // Wait again so nobody races into the next round's count early.
                        barrier.wait().unwrap();
                    }
                });
            }
        });
    });
}

#[test]
fn the_action_runs_once_in_the_leader_before_anyone_is_released() {
    on_each_worker_count(|_| {
        let barrier = Barrier::new(3);
        let (actions, released) = (AtomicUsize::new(0), AtomicUsize::new(0));
        fibra_runtime::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 1..=5 {
                        let r = barrier
                            .wait_with_action(|| {
                                assert_eq!(released.load(Ordering::SeqCst), 3 * (round - 1));
                                actions.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap();
                        assert_eq!(actions.load(Ordering::SeqCst), round);
                        released.fetch_add(1, Ordering::SeqCst);
                        if r.is_leader() {
                            assert_eq!(r.index(), 2);
                        }
                        barrier.wait().unwrap();
                    }
                });
            }
        });
        assert_eq!(actions.load(Ordering::SeqCst), 5);
    });
}

#[test]
fn a_timeout_breaks_the_barrier_for_everyone_until_reset() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(3));
        breaks_a_parked_waiter(&barrier, || {
            assert_eq!(
                barrier.wait_timeout(Duration::from_millis(5)),
                Err(BarrierError::TimedOut)
            );
        });
        assert!(barrier.is_broken());
        assert_eq!(barrier.wait(), Err(BarrierError::Broken));
        barrier.reset();
        assert!(!barrier.is_broken());
        // Usable again, from zero arrivals.
        let others: Vec<_> = (0..2)
            .map(|_| {
                let barrier = barrier.clone();
                fibra_runtime::spawn_local(move || barrier.wait().map(|r| r.index()))
            })
            .collect();
        let mine = barrier.wait_timeout(Duration::from_secs(60)).unwrap();
        let mut indices: Vec<_> = others
            .into_iter()
            .map(|o| o.join().unwrap().unwrap())
            .collect();
        indices.push(mine.index());
        indices.sort();
        assert_eq!(indices, [0, 1, 2]);
    });
}

#[test]
fn reset_breaks_current_waiters() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(2));
        breaks_a_parked_waiter(&barrier, || barrier.reset());
        assert!(!barrier.is_broken());
    });
}

#[test]
fn a_panicking_action_breaks_the_barrier_and_propagates() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(2));
        breaks_a_parked_waiter(&barrier, || {
            let leader = {
                let barrier = barrier.clone();
                fibra_runtime::spawn_local(move || {
                    barrier.wait_with_action(|| panic!("action failed"))
                })
            };
            assert!(leader.join().is_err());
        });
        assert!(barrier.is_broken());
    });
}

#[test]
fn an_action_that_fails_after_a_reset_leaves_the_reset_barrier_whole() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(2));
        breaks_a_parked_waiter(&barrier, || {
            let leader = {
                let barrier = barrier.clone();
                fibra_runtime::spawn_local(move || {
                    barrier.wait_with_action(|| {
                        barrier.reset();
                        panic!("action failed after a reset");
                    })
                })
            };
            assert!(leader.join().is_err());
        });
        // The reset started afresh while the failed cycle's action ran: its failure broke
        // that cycle's waiters (the reset had already), not the barrier after the reset.
        assert!(!barrier.is_broken());
        let other = {
            let barrier = barrier.clone();
            fibra_runtime::spawn_local(move || barrier.wait().map(|r| r.index()))
        };
        let mine = barrier.wait().unwrap().index();
        assert_eq!(mine + other.join().unwrap().unwrap(), 1);
    });
}

#[test]
fn a_single_party_barrier_never_waits() {
    let barrier = Barrier::new(1);
    for _ in 0..3 {
        let r = barrier.wait().unwrap();
        assert!(r.is_leader());
        assert_eq!(r.index(), 0);
    }
    assert_eq!(barrier.parties(), 1);
}

#[test]
#[should_panic(expected = "Barrier::new(0)")]
fn zero_parties_panics() {
    let _ = Barrier::new(0);
}

#[test]
fn zero_parties_panics_at_the_callers_line() {
    thread_local! {
        static AT: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
    }
    let previous = std::panic::take_hook();
    // Other tests' panics go on to the hook as before; this thread's location is recorded.
    std::panic::set_hook(Box::new(move |info| {
        let at = info.location().map(|l| (l.file().to_owned(), l.line()));
        AT.with(|cell| *cell.borrow_mut() = at);
        previous(info);
    }));
    let line = line!() + 1;
    let caught = std::panic::catch_unwind(|| Barrier::new(0));
    assert!(caught.is_err());
    let at = AT.with(|cell| cell.borrow_mut().take());
    assert_eq!(at, Some((file!().to_owned(), line)));
}

#[test]
fn errors_display() {
    assert_eq!(BarrierError::Broken.to_string(), "the barrier is broken");
    assert_eq!(
        BarrierError::TimedOut.to_string(),
        "the barrier wait timed out"
    );
}

/// A cycle whose last party has arrived is complete: a wait of the next cycle that times out
/// while the leader's action runs breaks the barrier for the next cycle only.
#[test]
fn a_timeout_in_the_next_cycle_during_the_action_leaves_the_completed_cycle_whole() {
    on_each_worker_count(|_| {
        let barrier = Arc::new(Barrier::new(2));
        let first = {
            let barrier = barrier.clone();
            fibra_runtime::spawn_local(move || barrier.wait())
        };
        let_others_run();
        let late = barrier.wait_with_action(|| {
            let next = barrier.clone();
            let timed_out = fibra_runtime::spawn(move || next.wait_timeout(Duration::ZERO));
            assert_eq!(timed_out.join().unwrap(), Err(BarrierError::TimedOut));
        });
        assert!(late.unwrap().is_leader());
        assert_eq!(first.join().unwrap().map(|r| r.index()), Ok(0));
        assert!(barrier.is_broken(), "broken for the next cycle");
        assert_eq!(barrier.wait(), Err(BarrierError::Broken));
    });
}

/// A cycle that completes while an earlier cycle's leader still acts is released once that
/// action returns, after the earlier cycle, with nobody broken.
#[test]
fn a_cycle_completing_during_an_earlier_action_is_released_after_it() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(2));
        let go_on = Arc::new(fibra_sync::Event::new());
        let waiter = |barrier: &Arc<Barrier>| {
            let barrier = barrier.clone();
            fibra_runtime::spawn_local(move || barrier.wait().map(|r| r.index()))
        };
        let first = waiter(&barrier);
        let_others_run();
        let leader = {
            let (barrier, go_on) = (barrier.clone(), go_on.clone());
            fibra_runtime::spawn_local(move || barrier.wait_with_action(|| go_on.wait()).unwrap())
        };
        let_others_run();
        // The next cycle completes, its leader without an action, while the first acts.
        let second = waiter(&barrier);
        let_others_run();
        assert!(barrier.wait().unwrap().is_leader());
        let_others_run();
        assert!(!second.is_finished(), "held back behind the acting cycle");
        go_on.set();
        assert!(leader.join().unwrap().is_leader());
        assert_eq!(first.join().unwrap(), Ok(0));
        assert_eq!(second.join().unwrap(), Ok(0));
        assert!(!barrier.is_broken());
    });
}

/// A party whose deadline passes after its cycle completed, while the leader's action runs, is
/// not short of anyone: it is released with its cycle when the action returns.
#[test]
fn a_deadline_passing_after_the_cycle_completed_releases_the_party_with_it() {
    on(1, || {
        let barrier = Barrier::new(2);
        fibra_runtime::scope(|s| {
            let party = s.spawn(|| barrier.wait_timeout(Duration::from_secs(1)));
            until_parked(party.fiber());
            let leader = barrier.wait_with_action(|| {
                // Until the party has met its deadline: it returned, or it waits without one.
                let id = party.fiber().id().as_u64();
                let waits_untimed = || {
                    let wait = fibra_runtime::dump().fiber(id).and_then(|f| f.wait.clone());
                    wait.is_some_and(|wait| !wait.timed)
                };
                while !party.is_finished() && !waits_untimed() {
                    fibra_runtime::sleep(Duration::from_millis(1));
                }
            });
            let leader = leader.expect("setup: the leader arrived before the party's deadline");
            assert!(leader.is_leader());
            assert_eq!(party.join().unwrap().map(|r| r.index()), Ok(0));
        });
        assert!(!barrier.is_broken());
    });
}

/// A timed party of a completed cycle that is cancelled while the action runs leaves nobody
/// short, and leaves the barrier whole for the next cycle.
#[test]
fn a_timed_party_of_a_completed_cycle_cancelled_during_the_action_leaves_it_whole() {
    on(1, || {
        let barrier = Barrier::new(2);
        let token = fibra_runtime::CancelToken::new();
        fibra_runtime::scope(|s| {
            let party = s.spawn(|| {
                let options = fibra_runtime::ScopeOptions::new().token(token.clone());
                fibra_runtime::scope_with(options, |_| {
                    let _ = barrier.wait_timeout(Duration::from_secs(60));
                })
            });
            until_parked(party.fiber());
            let leader = barrier.wait_with_action(|| {
                token.cancel();
                while !party.is_finished() {
                    let_others_run();
                }
            });
            assert!(leader.unwrap().is_leader());
            assert!(party.join().unwrap().is_err(), "the party was cancelled");
        });
        assert!(!barrier.is_broken());
        fibra_runtime::scope(|s| {
            let other = s.spawn(|| barrier.wait().map(|r| r.index()));
            until_parked(other.fiber());
            assert_eq!(barrier.wait().map(|r| r.index()), Ok(1));
            assert_eq!(other.join().unwrap(), Ok(0));
        });
    });
}
