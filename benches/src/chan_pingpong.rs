//! `chan_pingpong`: a value sent back and forth between two tasks over two capacity-1
//! channels; ns per round trip (ping out, pong back).
//!
//! Variant `1w` (1 000 000 round trips, 100 000 with `--quick`): two fibra fibers on a
//! 1-worker runtime vs two tokio tasks on a current-thread runtime (`tokio::sync::mpsc`).
//! Variant `2w`: fibra with the two fibers on different workers of a 2-worker runtime vs two
//! tokio tasks on a 2-worker multi-thread runtime, two `may` coroutines on `may`'s 2 workers
//! (`may::sync::mpsc`, unbounded: `may` has no bounded channel), and two plain threads over
//! `crossbeam-channel` and `flume` (capacity 1). Every round trip checks the value it gets
//! back.
//!
//! ## Measured: yielding after registering
//!
//! A blocked channel operation retries (yielding) before it registers; whether it should also
//! yield 32 times *after* registering, before it parks, was measured again once the retries
//! existed (`--quick`, alternating rounds of both builds on a shared, busy 2-core machine,
//! 2026-12-03; lower is better). Medians of the per-round fibra/peer ratios, seven rounds:
//!
//! | bench, variant, peer | park at once | 32 yields first |
//! | --- | --- | --- |
//! | `chan_pingpong` 1w, tokio | 0.569 | 0.568 |
//! | `chan_pingpong` 2w, tokio | 4.19 | 24.4 |
//! | `chan_throughput` 1x1, tokio | 0.597 | 1.171 |
//! | `chan_throughput` 4x4, crossbeam | 1.907 | 1.778 |
//! | `select2` 2w, tokio | 0.730 | 0.774 |
//!
//! Medians of fibra's own ns per operation over every round (23 to 39 of `chan_throughput`):
//! 1x1 152 without the yields, 142 with; 4x4 76.4 and 76.9; `chan_pingpong` 2w equal. On that
//! machine the two-worker figures vary several-fold between rounds, so neither form clearly
//! pays; a registered waiter parks at once, the simpler policy (documented on `fibra::wait`).
//!
//! ## Measured: the scheduler loop's cost per slice
//!
//! In `1w` every slice ends in a yield (a receive retrying), so the worker loop runs once per
//! slice. Under callgrind (the child job `diag_overhead chan_pingpong_1w N` at 20 000 and
//! 40 000 round trips, the difference taken), 2026-12-05: the loop outside the fiber cost 169
//! instructions a slice before and 151 after it looked up its remote queues and diagnostics
//! slot once per run instead of once per step and made its periodic check a countdown; a
//! whole round trip 1 528 → 1 490. In wall time that is below the noise: `--quick`, six
//! alternated runs of each build on the shared 2-core machine (load average 3.1–3.8), median
//! 1w ratio vs tokio 0.560 before and 0.565 after (fibra 324 → 338 ns a round trip).
//!
//! ## Measured: what the one waiting toolkit added to a `1w` round trip, and taking it back
//!
//! `1w` was 0.518× tokio before the waiting toolkit (commit 038c340) and 0.56–0.59× after
//! (f8e05e9). Instructions a round trip under callgrind, counted as above (the base build
//! given the same child job), 2026-12-05, by where they run:
//!
//! | part | before the toolkit | with it | now |
//! | --- | --- | --- | --- |
//! | scheduler loop (two slices) | 201 | 306 | 298 |
//! | the two fiber switches | 80 | 80 | 80 |
//! | channel operations, retries included | 928 | 1 070 | 900 |
//! | the bench's own loop | 58 | 30 | 40 |
//! | round trip | 1 271 | 1 493 | 1 324 |
//!
//! Every round trip is two blocked receives, each a failed try, one retry (a yield) and a
//! try that succeeds, and two sends that complete at once. On the channel side the toolkit had
//! cost 142 instructions: the ring's `pop` was no longer inlined into a receive's try (a call
//! four times a round trip, its result going through memory: about 90 of them), a blocked
//! operation's loop took the operation as `&dyn Operation` (each try a virtual call), the
//! first retry's slot handling had become calls of its own, and the retry budget's yield cost
//! (a turn per fiber ready on the worker) took and gave back two borrows. With `pop` always
//! inlined (1 493 → 1 404), the blocked loop generic over the operation and the retry's slot
//! handling inlined (→ 1 368), the yield cost read without borrow flags (→ 1 347) and a lone
//! operation's retry slot gathered where its type is known, without a virtual call
//! (→ 1 324), the channel side costs a little less than it did before.
//!
//! The scheduler loop's 97 more instructions stay: they are the run order's rules, not
//! overhead. A yielder now runs after every other runnable fiber, so each slice looks at the
//! inbox, the hand-offs, the unstarted queue and the injector before it takes the yielder
//! (before the toolkit, a yielder went to the one ready queue and was found first), and a
//! slice records the running fiber in the worker's diagnostics slot. Only switching from fiber
//! to fiber without the loop would take them away.
//!
//! In wall time, `--quick`, the three builds' runs alternated on the shared 2-core machine,
//! median of the per-run 1w ratios vs tokio (each run's own median of five rounds); the last
//! column's build is the one of 1 347 instructions in the first two series, of 1 324 in the
//! third:
//!
//! | runs (load average) | before the toolkit | with it | after |
//! | --- | --- | --- | --- |
//! | five of each (4.0–7.3) | 0.520 | 0.588 | 0.520 |
//! | three of each (1.5–4.9) | 0.488 | 0.601 | 0.528 |
//! | three of each (6.8–8.7) | 0.485 | 0.602 | 0.548 |
//!
//! Most of the wall-time loss is taken back, not all of it: what is left is of the order of
//! the scheduler loop's 97 instructions (7 % of a round trip). In the second series
//! `chan_throughput` and `select2` ran too (their medians, before / with / after):
//! `chan_throughput` 1x1 vs tokio 0.965 / 0.365 / 0.369, 4x4 vs crossbeam 0.530 / 1.088 /
//! 0.772; `select2` 2w vs tokio 0.616 / 0.235 / 0.390. The 2w figures vary several-fold
//! between runs on that machine, as above.
//!
//! ## Measured: `2w` when the two workers share a CPU (2026-12-06)
//!
//! Under load the `2w` ping-pong took 10–14 µs a round trip (20–40× tokio), against some
//! 0.6 µs on the quiet machine. The runtime's counters showed why: 33 slices and one park on
//! each worker every round trip. With the two worker threads waiting for one CPU, a blocked
//! receive spent all 32 of its retries (each a fiber yield that came straight back, nothing
//! else being ready) before the peer's worker got the CPU to answer, then parked, and the
//! answer came through the inbox. A retry with nothing else ready on its worker now yields the
//! thread as well. The same ping-pong (`2w`, 20 000 round trips) with the process confined to
//! one CPU (`taskset -c 0`): 13.1–13.4 µs a round trip before, 2.8–3.0 µs after, with one
//! slice and no park a round trip; on both CPUs at load 2–3 the medians of four rounds were
//! 1.0–1.1 µs before and 0.85–0.95 µs after. `channels/tests/retry_on_one_cpu.rs` holds the
//! rule (399 parks in 200 round trips without it, none with it).
//!
//! ## Measured: pausing instead of yielding the thread (2026-12-06, AMD EPYC guest)
//!
//! On a 2-core AMD EPYC guest a thread yield is a system call of about 1 µs and one spin-loop
//! hint takes 27 ns. There the `2w` ping-pong took 1.2–2.0 µs a round trip (1.9–3.1× tokio in
//! eight runs, load average 1.5–3.5), `may` 0.3 µs: each retry that found nothing sat in a
//! thread yield while the peer's answer, a few hundred nanoseconds away, waited. Now the first
//! three retries alone on a worker pause the thread for four hints instead (the later ones
//! still yield it, for the one-CPU case above), and the idle spin looks for its inbox every
//! four hints instead of every 64 and a thread yield. Rounds now take either 0.26–0.38 µs or
//! 0.68–0.78 µs (which of the two, run to run, was not explained); per run, fibra ÷ tokio
//! 0.53, 0.55 and one 1.45 with three pausing retries, 0.48–0.58 in six of eight runs with
//! half the budget pausing. Half the budget cost `select2` about 15 % (see `RetryBudget` in
//! the runtime), three did not clearly.

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// Workers of every multi-worker system in variant `2w`.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs both variants and prints their JSON lines.
pub fn run(quick: bool) {
    let trips = if quick { 100_000 } else { 1_000_000 };
    compare_per_op(
        "chan_pingpong",
        "1w",
        trips,
        ROUNDS,
        &[
            ("fibra", &|trips| fibra(1, trips)),
            ("tokio", &tokio_current),
        ],
    );
    compare_per_op(
        "chan_pingpong",
        "2w",
        trips,
        ROUNDS,
        &[
            ("fibra", &|trips| fibra(WORKERS, trips)),
            ("tokio", &tokio_multi),
            ("may", &may),
            ("crossbeam", &crossbeam),
            ("flume", &flume),
        ],
    );
}

/// The pinger's timed loop, the same for every blocking system: `trips` times, `ping(i)` and
/// expect `i + 1` from `pong()`.
fn ping_trips(
    trips: u64,
    mut ping: impl FnMut(u64),
    mut pong: impl FnMut() -> Option<u64>,
) -> Duration {
    let start = Instant::now();
    for i in 0..trips {
        ping(i);
        assert_eq!(pong(), Some(i + 1));
    }
    start.elapsed()
}

/// fibra: the main fiber pings, a child fiber pongs. With more than one worker the child is
/// placed on another worker: the main fiber spins (without yielding) until an idle worker has
/// stolen the child and reported in.
pub(crate) fn fibra(workers: usize, trips: u64) -> Duration {
    runtimes::fibra(workers).block_on(move || {
        let (ping_tx, ping_rx) = fibra::chan::bounded::<u64>(1);
        let (pong_tx, pong_rx) = fibra::chan::bounded::<u64>(1);
        let placed = AtomicBool::new(false);
        fibra::scope(|s| {
            s.spawn(|| {
                placed.store(fibra::current_worker() != Some(0), Ordering::Release);
                for v in ping_rx.iter() {
                    pong_tx.send(v + 1).expect("pong");
                }
            });
            if workers > 1 {
                while !placed.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            }
            let elapsed = ping_trips(trips, |i| ping_tx.send(i).expect("ping"), || pong_rx.recv());
            ping_tx.close();
            elapsed
        })
    })
}

/// The tokio ping-pong, on whatever runtime runs it.
async fn tokio_trips(trips: u64) -> Duration {
    let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let ponger = tokio::spawn(async move {
        while let Some(v) = ping_rx.recv().await {
            pong_tx.send(v + 1).await.expect("pong");
        }
    });
    let start = Instant::now();
    for i in 0..trips {
        ping_tx.send(i).await.expect("ping");
        assert_eq!(pong_rx.recv().await, Some(i + 1));
    }
    let elapsed = start.elapsed();
    drop(ping_tx);
    ponger.await.expect("tokio ponger panicked");
    elapsed
}

/// tokio: two tasks on a current-thread runtime.
fn tokio_current(trips: u64) -> Duration {
    runtimes::tokio_current().block_on(tokio_trips(trips))
}

/// tokio: two tasks on a 2-worker multi-thread runtime (the pinger is itself a task).
fn tokio_multi(trips: u64) -> Duration {
    runtimes::tokio_on_worker(&runtimes::tokio_multi(WORKERS), tokio_trips(trips))
}

/// may: two coroutines on may's 2-worker scheduler.
fn may(trips: u64) -> Duration {
    let pinger = move || {
        let (ping_tx, ping_rx) = may::sync::mpsc::channel::<u64>();
        let (pong_tx, pong_rx) = may::sync::mpsc::channel::<u64>();
        // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between
        // threads (so a thread-local must not be held across a switch) and has a small fixed
        // stack. The ponger touches no thread-local (only may's own channels, made for
        // coroutines) and uses a few hundred bytes of stack.
        let ponger = unsafe {
            may::coroutine::spawn(move || {
                while let Ok(v) = ping_rx.recv() {
                    pong_tx.send(v + 1).expect("pong");
                }
            })
        };
        let elapsed = ping_trips(
            trips,
            |i| ping_tx.send(i).expect("ping"),
            || pong_rx.recv().ok(),
        );
        drop(ping_tx);
        ponger.join().expect("may ponger panicked");
        elapsed
    };
    // SAFETY: as for the ponger: the pinger touches no thread-local (`Instant`, the allocator
    // and may's channels and join handle) and its frames are far within may's default stack.
    let handle = unsafe { may::coroutine::spawn(pinger) };
    handle.join().expect("may pinger panicked")
}

/// crossbeam-channel: the calling thread pings, a second thread pongs.
fn crossbeam(trips: u64) -> Duration {
    threads(
        trips,
        crossbeam_channel::bounded,
        crossbeam_channel::Sender::send,
        crossbeam_channel::Receiver::recv,
    )
}

/// flume: the calling thread pings, a second thread pongs.
fn flume(trips: u64) -> Duration {
    threads(
        trips,
        flume::bounded,
        flume::Sender::send,
        flume::Receiver::recv,
    )
}

/// The ping-pong between the calling thread and a second one over a blocking channel crate
/// (crossbeam-channel and flume share this API): `bounded` makes a channel, `send` and `recv`
/// are its ends' methods.
fn threads<Tx, Rx, SendError, RecvError>(
    trips: u64,
    bounded: impl Fn(usize) -> (Tx, Rx),
    send: impl Fn(&Tx, u64) -> Result<(), SendError> + Copy + Send + 'static,
    recv: impl Fn(&Rx) -> Result<u64, RecvError>,
) -> Duration
where
    Tx: Send + 'static,
    Rx: IntoIterator<Item = u64> + Send + 'static,
    SendError: Debug,
{
    let (ping_tx, ping_rx) = bounded(1);
    let (pong_tx, pong_rx) = bounded(1);
    let ponger = std::thread::spawn(move || {
        for v in ping_rx {
            send(&pong_tx, v + 1).expect("pong");
        }
    });
    let elapsed = ping_trips(
        trips,
        |i| send(&ping_tx, i).expect("ping"),
        || recv(&pong_rx).ok(),
    );
    drop(ping_tx);
    ponger.join().expect("ponger thread panicked");
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_round_trip() {
        // Each function checks every value it gets back.
        runtimes::init_may();
        fibra(1, 1000);
        fibra(WORKERS, 1000);
        tokio_current(1000);
        tokio_multi(1000);
        may(1000);
        crossbeam(1000);
        flume(1000);
    }
}
