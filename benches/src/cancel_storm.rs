//! `cancel_storm`: 100 000 parked children (20 000 with `--quick`) cancelled at once; the time
//! from the cancel to the moment every child has ended. Metric: ms for the whole cancellation.
//!
//! Variant `2w`: fibra children in a `scope_with` whose token the body cancels, each child
//! parked in a `fibra::park` loop, the body parking after the cancel until it is cancelled itself;
//! the time runs from `token.cancel()` to `scope_with` returning `Err`. vs tokio tasks in a
//! `JoinSet` on a 2-worker multi-thread runtime, each awaiting `std::future::pending`; the time
//! runs from `abort_all()` to `join_next()` returning `None`. In both, the spawner waits until
//! every child has started before the clock starts. Every run checks that every child started,
//! that every child's destructor ran exactly once (a counted guard in each), and that the scope
//! returned the token's cancellation / every join returned a cancelled `JoinError`. Peer
//! `unwind_floor`: the physical floor of unwinding cancellation, as many plain-thread
//! `catch_unwind(|| resume_unwind(..))` through the children's frame depth, on two threads.
//!
//! Variant `unstarted`: the same children spawned and cancelled at once, before they have run:
//! fibra's body cancels its token right after the last spawn, tokio's spawner calls
//! `abort_all()` right after filling its `JoinSet`; the time runs to the scope's return / the
//! set's last join. Every child's guard (moved into it) must drop exactly once. fibra's
//! runtime gets a slice longer than the spawn loop (`reductions`): a spawn costs a reduction,
//! so with the default slice of 4 000 the spawner gives way every 4 000 spawns and the batch
//! it spawned starts before the cancel (see below), while a tokio spawn costs no budget and
//! the spawner runs on. For the same reason its stuck threshold is a minute: the monitor asks
//! a slice to yield after half the threshold (25 ms by default, less than the 100 000 spawns
//! take), and a spawn honours that. Each fibra round logs how many of its children had
//! started (the idle worker takes a few hundred).
//!
//! # Measured (2026-12-06, the shared 2-core machine)
//!
//! Full runs of the binaries before and after the cancellation pass, alternated, three pairs
//! (load average 9.6–11.4 for the first two, 4.1–5.1 for the third; absolute times under such
//! load are two to four times an idle machine's, so the ratios are what compares). `2w`:
//! fibra / `unwind_floor` 2.24×, 2.60×, 2.64× before, 1.56×, 1.85×, 2.24× after; fibra /
//! tokio 18.9×, 18.2×, 19.9× before, 10.9×, 15.5×, 14.0× after (third pair: fibra 1 840 ms →
//! 1 270 ms, tokio 92.6 / 90.4 ms, `unwind_floor` 698 / 567 ms). `unstarted`: fibra / tokio
//! 13.2×, 21.7×, 17.2× before, 16.4×, 14.2×, 11.8× after. Two more pairs on a nearly idle
//! machine (load average 0.2–1.7): `2w` fibra 1 280 ms → 1 084 ms, fibra / `unwind_floor`
//! 3.74×, 3.88× → 3.21×, 3.16× (`unwind_floor` 339 / 330 ms), fibra / tokio 13.0×, 14.0× →
//! 11.1×, 10.5×; `unstarted` fibra / tokio 13.5×, 16.9× → 11.7×, 11.1×. So the 1.5× target is
//! not met: besides the unwinding the pass cut, each child still costs a wake across workers,
//! a switch onto its cache-cold stack and the stack's return (past the pool's warm limit, one
//! `madvise` each: the stack pool's work, not this path's).
//!
//! Per cancelled parked child (`2w`'s workload, the cancellation alone): callgrind, one worker,
//! 2 000 children: 47.7k instructions before, 27.6k after; `unwind_floor` spends 32.5k per
//! unwind. CPU time (`getrusage`, two workers, 100 000 children): 15.6 µs before, 11.2–12.7 µs
//! after; `unwind_floor` 6.4–6.6 µs. What the cancellation costs, from `perf` of that phase
//! before the pass: 53 % the unwinder (`libgcc_s`: for each frame an FDE lookup and its CFA
//! program, in both passes, and a restart for every cleanup on the way), 20 % the kernel
//! returning stacks past the warm limit (one `madvise(MADV_DONTNEED)` each), the rest the
//! wake, the switch onto a cold stack and the fiber's end. The pass cut the unwinding: the
//! park unwinds with no cleanup left in its frame and from one frame higher.
//!
//! Why `2w` cannot reach 3× tokio: tokio drops a future, fibra must unwind a stack through
//! DWARF tables, and the floor of that alone (`unwind_floor`, 326.8 ms for 100 000 on an idle
//! run, 64.9 ms for tokio) is already 5× tokio; add to it a cache-cold stack per child and its
//! return to the pool (memory traffic `unwind_floor` never pays: its two threads unwind on
//! one hot stack each).
//!
//! Why `unstarted` stayed where `2w` is while it ran on the default slice: every child had
//! started when the cancellation came. A spawn costs a reduction; after 4 000 the spawner's
//! slice ends, it yields, and the batch it spawned starts (takes a stack and parks) before it
//! runs again, so the variant measured unwinding, not what its name says. A fiber cancelled
//! before it starts is dropped without a stack or an unwind, and the token marks the scope on
//! the cancelling thread before `cancel` returns. With the slice longer than the spawn loop
//! (2026-12-07, one full run, load average near 2): 4 to 289 of the 100 000 children started
//! per round, and the cancellation took 30.7–55.1 ms against tokio's 79.7–99.1 ms, 0.597× tokio.
//!
//! Stacks returned past the warm bound now keep their memory until the pool ages (see the
//! runtime's stack pool), so the cancellation no longer gives back a stack in every batch of 64
//! on its way. One alternation of the binaries before and after (2026-12-06): `2w` 1.88× →
//! 1.48× `unwind_floor`, 5.44× → 4.78× tokio; `unstarted` 6.26× → 5.97× tokio. The full run
//! after: `2w` 1.63× `unwind_floor` and 3.91× tokio, `unstarted` 4.11×.
//!
//! One allocation per spawn (the packet a part of the `Core`), two alternated pairs of the
//! binaries before and after (load average 1.8–2.2): `2w` 1.29×, 1.51× → 1.22×, 1.23×
//! `unwind_floor` (4.44×, 4.73× → 4.72×, 4.54× tokio), `unstarted` 5.17×, 7.19× → 4.94×, 6.67×
//! tokio. The full run after: `2w` 1.30× `unwind_floor`, 5.63× tokio; `unstarted` 7.76×.

use std::cell::Cell;
use std::future;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::report::Metric;
use crate::rounds::compare_timed;
use crate::runtimes;

/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let children = if quick { 20_000 } else { 100_000 };
    compare_timed(
        "cancel_storm",
        "2w",
        Metric::MsTotal,
        children,
        ROUNDS,
        &[
            ("fibra", &fibra),
            ("tokio", &tokio),
            ("unwind_floor", &unwind_floor),
        ],
    );
    compare_timed(
        "cancel_storm",
        "unstarted",
        Metric::MsTotal,
        children,
        ROUNDS,
        &[("fibra", &fibra_unstarted), ("tokio", &tokio_unstarted)],
    );
}

/// Frames between a child's park and the catch that ends its unwinding, as fibra's children
/// have them (the park, its loop, the child's closure, the fiber's entry).
const UNWIND_DEPTH: u32 = 4;

/// The floor of unwinding cancellation: as many unwinds as there are children, each from
/// [`UNWIND_DEPTH`] frames down to a `catch_unwind` with a guard dropped on the way, split over
/// two plain threads (the other systems' two workers). `resume_unwind` runs no panic hook and
/// captures no backtrace, as fibra's cancellation does.
fn unwind_floor(children: u64) -> Duration {
    #[inline(never)]
    fn unwind_from(depth: u32) {
        if depth == 0 {
            std::panic::resume_unwind(Box::new(()));
        }
        unwind_from(depth - 1);
        std::hint::black_box(());
    }
    let dropped = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for half in [children / 2, children - children / 2] {
            let dropped = &dropped;
            s.spawn(move || {
                for _ in 0..half {
                    let caught = std::panic::catch_unwind(|| {
                        let _guard = Dropped(dropped);
                        unwind_from(UNWIND_DEPTH);
                    });
                    assert!(caught.is_err());
                }
            });
        }
    });
    let elapsed = start.elapsed();
    assert_eq!(dropped.load(Ordering::Relaxed), children, "drops lost");
    elapsed
}

/// fibra, variant `unstarted`: the body spawns every child and cancels its token at once; a
/// child not yet started when the cancellation comes is dropped unstarted (its guard, moved
/// into it, drops with it), one that a worker has started unwinds from its park. The slice
/// and the stuck threshold outlast the spawn loop, so the body never gives way to its children.
fn fibra_unstarted(children: u64) -> Duration {
    let runtime = fibra::Runtime::builder()
        .workers(WORKERS)
        .reductions(u32::try_from(children + 1).unwrap_or(u32::MAX))
        .stuck_threshold(Duration::from_secs(60))
        .build()
        .expect("build the fibra runtime");
    runtime.block_on(move || {
        let token = fibra::CancelToken::new();
        let (started, dropped) = (AtomicU64::new(0), AtomicU64::new(0));
        let cancelled_at = Cell::new(None);
        let outcome = fibra::scope_with(fibra::ScopeOptions::new().token(token.clone()), |s| {
            for _ in 0..children {
                let guard = Dropped(&dropped);
                let started = &started;
                s.spawn(move || {
                    let _guard = guard;
                    started.fetch_add(1, Ordering::Relaxed);
                    loop {
                        fibra::park();
                    }
                });
            }
            cancelled_at.set(Some(Instant::now()));
            token.cancel();
            loop {
                fibra::park();
            }
        });
        let elapsed = cancelled_at.get().expect("the body cancelled").elapsed();
        assert!(outcome.is_err(), "the scope was cancelled");
        assert_eq!(dropped.load(Ordering::Relaxed), children, "drops lost");
        eprintln!(
            "cancel_storm unstarted fibra: {} of {children} children had started",
            started.load(Ordering::Relaxed)
        );
        elapsed
    })
}

/// tokio, variant `unstarted`: the spawner fills a `JoinSet` and aborts it at once, then
/// drains it.
fn tokio_unstarted(children: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let dropped = Arc::new(AtomicU64::new(0));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..children {
            let guard = Dropped(dropped.clone());
            set.spawn(async move {
                let _guard = guard;
                future::pending::<()>().await;
            });
        }
        let start = Instant::now();
        set.abort_all();
        while let Some(joined) = set.join_next().await {
            assert!(joined.expect_err("a pending task finished").is_cancelled());
        }
        let elapsed = start.elapsed();
        assert_eq!(dropped.load(Ordering::Relaxed), children, "drops lost");
        elapsed
    })
}

/// Counts its own drop: one per child, run when the child unwinds or its future is dropped.
/// `C` is `&AtomicU64` for fibra's scoped children and `Arc<AtomicU64>` for tokio's tasks.
struct Dropped<C: Deref<Target = AtomicU64>>(C);

impl<C: Deref<Target = AtomicU64>> Drop for Dropped<C> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Checks the counts a run ends with: every child started and was dropped exactly once.
fn check(children: u64, started: &AtomicU64, dropped: &AtomicU64) {
    assert_eq!(started.load(Ordering::Relaxed), children, "children lost");
    assert_eq!(dropped.load(Ordering::Relaxed), children, "drops lost");
}

/// fibra: the main fiber's `scope_with` spawns every child, waits until all have started, then
/// cancels its own token and parks until the cancellation reaches it.
fn fibra(children: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let token = fibra::CancelToken::new();
        let (started, dropped) = (AtomicU64::new(0), AtomicU64::new(0));
        // Set by the body, which never returns: it is read after the scope has unwound it.
        let cancelled_at = Cell::new(None);
        let outcome = fibra::scope_with(fibra::ScopeOptions::new().token(token.clone()), |s| {
            for _ in 0..children {
                let (started, dropped) = (&started, &dropped);
                s.spawn(move || {
                    let _guard = Dropped(dropped);
                    started.fetch_add(1, Ordering::Relaxed);
                    loop {
                        fibra::park();
                    }
                });
            }
            while started.load(Ordering::Relaxed) < children {
                fibra::yield_now();
            }
            cancelled_at.set(Some(Instant::now()));
            token.cancel();
            loop {
                fibra::park();
            }
        });
        let elapsed = cancelled_at.get().expect("the body cancelled").elapsed();
        let cancelled = outcome.expect_err("the scope was cancelled");
        assert_eq!(cancelled.cause(), fibra::CancelCause::Token);
        check(children, &started, &dropped);
        elapsed
    })
}

/// tokio: the spawner is itself a task on a 2-worker multi-thread runtime; it fills a `JoinSet`,
/// waits until every task has started, then aborts them all and drains the set.
fn tokio(children: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let started = Arc::new(AtomicU64::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..children {
            let (started, dropped) = (started.clone(), dropped.clone());
            set.spawn(async move {
                let _guard = Dropped(dropped);
                started.fetch_add(1, Ordering::Relaxed);
                future::pending::<()>().await;
            });
        }
        while started.load(Ordering::Relaxed) < children {
            tokio::task::yield_now().await;
        }
        let start = Instant::now();
        set.abort_all();
        let mut aborted = 0;
        while let Some(joined) = set.join_next().await {
            let error = joined.expect_err("a pending task finished");
            assert!(error.is_cancelled(), "task did not end by abort: {error}");
            aborted += 1;
        }
        let elapsed = start.elapsed();
        assert_eq!(aborted, children, "joins lost");
        check(children, &started, &dropped);
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_cancels_every_child() {
        // Each function checks the outcome and the counts itself.
        fibra(1000);
        tokio(1000);
        unwind_floor(1000);
        fibra_unstarted(1000);
        tokio_unstarted(1000);
    }
}
