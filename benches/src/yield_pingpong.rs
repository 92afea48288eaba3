//! `yield_pingpong`: control handed back and forth between two tasks on one worker; ns per round
//! trip (A wakes B and sleeps, B wakes A and sleeps).
//!
//! Variant `1w` (1 000 000 round trips, 100 000 with `--quick`): two fibra fibers on a 1-worker
//! runtime using `unpark` + `park`, vs a raw corosensei coroutine (one `resume` + `suspend` pair
//! per round trip, the floor under any stackful switch), vs two tokio tasks on a current-thread
//! runtime using `Notify`. Fibers and tasks follow a shared turn counter, so a stray wake-up
//! only costs a re-check.
//!
//! The floor under fibra's design (a scratch loop: two corosensei coroutines resumed from a
//! `VecDeque` by a loop, each parking on a three-state latch with the same three atomic
//! operations per switch as fibra's) is about 26 ns per round trip on this machine, against
//! fibra's 120–140: the rest is the scheduler's bookkeeping. Trimmed on 2026-12-06 (the run
//! order's common case without walking its levels, a plain park that notes nothing for its
//! worker, the deadlock verdict checked inline, the remote dispatch out of line): 923 → 715
//! instructions per round trip (callgrind), 0.69× → 0.60× tokio (three alternated runs each).

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use corosensei::{Coroutine, Yielder};
use tokio::sync::Notify;

use crate::rounds::{checked_elapsed, compare_per_op};
use crate::runtimes;

/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let trips = if quick { 100_000 } else { 1_000_000 };
    compare_per_op(
        "yield_pingpong",
        "1w",
        trips,
        ROUNDS,
        &[
            ("fibra", &fibra),
            ("corosensei", &corosensei),
            ("tokio", &tokio),
        ],
    );
}

/// Sleeps with `sleep` until the turn counter reads `value`.
///
/// Round trip `i` moves the counter from `2i` to `2i + 1` (A hands over to B) and then to
/// `2i + 2` (B hands back to A).
fn wait_for(turn: &AtomicU64, value: u64, mut sleep: impl FnMut()) {
    while turn.load(Ordering::Acquire) != value {
        sleep();
    }
}

/// fibra: fibers A and B in a scope on a 1-worker runtime, each unparking the other.
pub(crate) fn fibra(trips: u64) -> Duration {
    runtimes::fibra(1).block_on(move || {
        let turn = AtomicU64::new(0);
        let fiber_a: OnceLock<fibra::Fiber> = OnceLock::new();
        let fiber_b: OnceLock<fibra::Fiber> = OnceLock::new();
        let start = Instant::now();
        fibra::scope(|s| {
            s.spawn(|| {
                fiber_b.get_or_init(fibra::current);
                for i in 0..trips {
                    wait_for(&turn, 2 * i + 1, fibra::park);
                    turn.store(2 * i + 2, Ordering::Release);
                    // A published its handle before it first handed over.
                    fiber_a.get().expect("A is known").unpark();
                }
            });
            s.spawn(|| {
                fiber_a.get_or_init(fibra::current);
                let b: fibra::Fiber = loop {
                    match fiber_b.get() {
                        Some(b) => break b.clone(),
                        None => fibra::yield_now(),
                    }
                };
                for i in 0..trips {
                    turn.store(2 * i + 1, Ordering::Release);
                    b.unpark();
                    wait_for(&turn, 2 * i + 2, fibra::park);
                }
            });
        });
        checked_elapsed(start, turn.into_inner(), 2 * trips)
    })
}

/// Raw corosensei: one `resume` into a coroutine that `suspend`s straight back.
fn corosensei(trips: u64) -> Duration {
    let mut coroutine = Coroutine::new(|yielder: &Yielder<(), u64>, ()| {
        let mut count = 0u64;
        loop {
            count += 1;
            yielder.suspend(count);
        }
    });
    let start = Instant::now();
    let mut last = 0;
    for _ in 0..trips {
        if let corosensei::CoroutineResult::Yield(count) = coroutine.resume(()) {
            last = black_box(count);
        }
    }
    checked_elapsed(start, last, trips)
}

/// What the two tokio tasks share.
struct Table {
    turn: AtomicU64,
    wake_a: Notify,
    wake_b: Notify,
}

/// tokio: tasks A and B on a current-thread runtime, each `notify_one`-ing the other.
fn tokio(trips: u64) -> Duration {
    let table = Arc::new(Table {
        turn: AtomicU64::new(0),
        wake_a: Notify::new(),
        wake_b: Notify::new(),
    });
    runtimes::tokio_current().block_on(async move {
        let start = Instant::now();
        let b = tokio::spawn({
            let table = Arc::clone(&table);
            async move {
                for i in 0..trips {
                    while table.turn.load(Ordering::Acquire) != 2 * i + 1 {
                        table.wake_b.notified().await;
                    }
                    table.turn.store(2 * i + 2, Ordering::Release);
                    table.wake_a.notify_one();
                }
            }
        });
        let a = tokio::spawn({
            let table = Arc::clone(&table);
            async move {
                for i in 0..trips {
                    table.turn.store(2 * i + 1, Ordering::Release);
                    table.wake_b.notify_one();
                    while table.turn.load(Ordering::Acquire) != 2 * i + 2 {
                        table.wake_a.notified().await;
                    }
                }
            }
        });
        a.await.expect("task A panicked");
        b.await.expect("task B panicked");
        checked_elapsed(start, table.turn.load(Ordering::Acquire), 2 * trips)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_round_trip() {
        // Each function asserts the final turn or count itself.
        fibra(1000);
        corosensei(1000);
        tokio(1000);
    }
}
