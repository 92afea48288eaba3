//! `balance`: does work spread over the workers when one fiber starts it all? One task spawns
//! 1 000 tasks that each do 100 rounds of a little CPU work, a `yield_now` and a ping-pong with a
//! partner task over a pair of capacity-1 channels (a park and an unpark). Metric: ms for the
//! whole workload, fibra (started fibers never migrate: placement decides) vs tokio
//! multi-thread (which steals running tasks), 2 workers each.
//!
//! A second case, `worker_share`, reports the busiest worker's share of the work rounds over
//! the idlest one's for each system (1.0 is even), counted by the thread each round ran on.
//!
//! Where fibra's time went (issue 20's second pass). Placement was not it: with the
//! hand-off runs of `sched/placement.rs` nearly every pair starts on one worker, and a run
//! counted about 1 100–1 700 wakes through each worker's inbox (cross-worker) against about
//! 100 000 slices per worker. The work rounds cost the same in both systems; the runtime's
//! share per round was the gap. Counted with callgrind on the same workload without the work,
//! on 1 worker (tokio: current-thread), per run of 100 000 task-rounds:
//!
//! | | instructions | parks |
//! | --- | --- | --- |
//! | fibra before | 250.0 M | 99 500 |
//! | `WakeList` drop of an empty list made one inlined test | 218.2 M | 99 500 |
//! | a retry goes behind the woken fibers only | 158.8 M | 50 000 |
//! | tokio | 160.6 M | |
//!
//! The parks: in a round, B waits in its receive first; A's send wakes B and A's receive
//! finds nothing yet. With 500 yielders ready on the worker a retry (a yield) cost more turns
//! than a retry budget holds, so A parked too, though B, woken, ran next and answered at once.
//! A retry now runs again right behind the woken fibers, and gets B's answer without the lock
//! or a wake-up.
//!
//! `fibra-compare balance --quick`, three alternated runs of each binary, on the shared
//! 2-core machine at a load average of 7.4–7.6: fibra/tokio 2.24×, 1.71×, 1.67× before (median
//! 1.71×), 1.53×, 1.45×, 1.40× after (median 1.45×); worker share 1.02 in every run, tokio's
//! 1.01–1.04. Again at a load average of 2.1–2.4: 1.58×, 1.59×, 1.63× before, 1.40×, 1.43×,
//! 1.45× after (fibra 363–376 ms → 329–341 ms, tokio 229–236 ms), worker share 1.02–1.05.
//! `spawn_join --quick` 2w 1.15×, 1.24× before, 1.15×, 1.11× after; `skynet --quick`
//! 2w_100k 1.14×, 0.86× before, 0.68×, 0.88× after, 2w_10k 1.06×, 1.30× before, 0.84×, 0.70×
//! after (load 7.4–9.0); at load 2.1–7.7, `spawn_join` 0.69×, 0.78× before, 0.70×, 0.68×
//! after, `skynet` 2w_100k 1.05×, 0.97× before, 0.96×, 0.95× after, 2w_10k 0.71×, 1.01×
//! before, 1.10×, 1.07× after.
//!
//! What is left is memory, not instructions: the same workload cut to 100 tasks doing 1 000
//! rounds each (the same 100 000 task-rounds) runs as fast as tokio (1 worker: fibra 220 ms,
//! 219 ms against tokio 208 ms, 217 ms; best of five, load 3.3–3.6), while with 1 000 tasks
//! fibra takes 322–338 ms against tokio's 229–262 ms; tokio's time hardly depends on the
//! number of tasks. A cpu-clock profile of the 1 000-task run on 1 worker puts 14.5 % of the
//! samples on the first instruction after a yield's switch back into the fiber and 5 % on the
//! worker loop, two thirds of that on one load: each resume of a yielder (500 others ran
//! since its last turn) misses the cache on its `Core` and on the top of its stack, roughly
//! 1–2 KiB of frames on the wait path, where a tokio task's state is a few hundred bytes.
//! Prefetching the next yielder's stack top (and the `Core` of the one after) before each
//! resume moved those stalls into the load of the `Core` and gained about 5 % (1 worker:
//! 297–316 ms against 321–331 ms without, and one 391 ms; best of five, three alternations),
//! within the noise of the `balance` runs, so that form was not kept. What was kept
//! (`fiber::warm` in the runtime) asks for the lines where the next fiber *suspended* (each
//! suspension notes its stack pointer; 128 bytes below it, 256 above, never past the stack's
//! top) and for the `Core` of the fiber after it, so that `Core` is in the cache by its turn,
//! behind a queue of at least 8 fibers. The same binary with the warming switched off,
//! alternated, full runs at a load average of 3.6–4.0: 1.39×, 1.35×, 1.59×, 1.28×, 1.31×
//! without (median 1.35×), 1.16×, 1.36×, 1.33×, 1.21×, 1.23× with (median 1.23×); `--quick`:
//! 1.55×, 1.44×, 0.84×, 1.69× without, 1.20×, 0.92×, 1.46×, 1.20× with. Under load the gap
//! grows: a worker thread the OS deschedules holds up its half of the fibers, where tokio's
//! other worker steals them.
//!
//! Third pass: where the floor is. A probe of this workload without the work, on 1 worker
//! (tokio: current-thread), 100 000 task-rounds cut into more or fewer tasks (medians of 5,
//! load average 4.2–5.4), shows the cost grow with the number of live fibers where tokio's
//! hardly does:
//!
//! | tasks × rounds | 20 × 5 000 | 100 × 1 000 | 200 × 500 | 500 × 200 | 1 000 × 100 | 2 000 × 50 |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | tokio ms | 23.7 | 30.0 | 28.5 | 30.4 | 32.1 | 32.3 |
//! | fibra ms | 23.8 | 41.5 | 40.6 | 47.8 | 47.6 | 82.2 |
//!
//! With 20 fibers everything stays in the L1 cache and the two are equal. From 100 on, a
//! fiber resumed after a `yield_now` (every other fiber ran since) misses on the memory it
//! touches. Counted with cachegrind (32 KiB 8-way L1; 1 000 tasks on 1 worker; the run with
//! 40 rounds less the run with 20, per task-round): fibra 1 886 instructions and 31.3 L1
//! misses (18.8 reads, 12.5 writes), tokio 1 588 instructions and 22.9 misses (18.4 reads,
//! 4.5 writes). The reads are alike (channel state, the task or the `Core`); the eight extra
//! write misses are the fiber's own stack. A blocked `recv` suspends about 1 KiB below the
//! task's closure (gdb, frame by frame: `recv` 80 bytes, the operation's loop 128, the wait
//! 240, the park 112 and 304), and `send` and `recv` write the same range on the way; each
//! fiber has its own, out of the cache once hundreds of others have run. tokio runs the same
//! work on the worker thread's stack, one for every task and always in the cache; its task
//! keeps only the future's few hundred bytes. Touching 4 KiB more of the stack per round in
//! the probe's closure about doubled fibra's CPU time and added about a third to tokio's. A
//! cpu-clock profile (1 000 tasks) puts 17 % of the samples on the prefetch of the next
//! fiber's stack (`fiber::warm`), 8 % with 200 tasks: the first touch of a fiber's stack
//! page, most likely a page walk (the machine is a KVM guest).
//!
//! Kept: a `Core` lays out the fields a suspension, a wake and a resume touch first (216 bytes, 232
//! with the `Arc`'s counts: four or five cache lines, where they were spread over all five or six),
//! and the warming asks only for those. Cachegrind as above: 29.9 misses per task-round (from
//! 31.3), 1 878 instructions (from 1 886). In wall-clock time that is within the noise:
//! `fibra-compare balance spawn_join`, alternated with the binary before, two sets of three runs at
//! load averages of 7.6–22 and 9.6–16: `balance` 1.03×, 1.08×, 1.37×, 1.25×, 1.20×, 1.39× before
//! (median 1.23×), 1.32×, 1.55×, 1.35×, 1.09×, 1.20×, 1.27× after (median 1.29×), and a last pair
//! at 6.2: 1.32× before, 1.35× after (fibra 608 ms, tokio 451 ms), worker share 1.03 with both
//! (tokio's 1.02, 1.03); `spawn_join` 2w 1.30×, 1.43×, 0.89×, 0.84×, 1.19×, 0.99× before, 1.41×,
//! 1.76×, 0.67×, 0.92×, 0.68×, 1.19× after; `skynet --quick` (six pairs, load 7.1–13) 2w_100k
//! 1.00×, 0.80×, 0.77×, 0.79×, 1.08×, 1.13× before, 0.99×, 0.91×, 0.85×, 0.83×, 1.16×, 1.02× after,
//! 2w_10k 1.93×, 0.52×, 0.79×, 1.94×, 1.89×, 0.91× before, 1.55×, 1.64×, 1.32×, 1.12×, 1.30×, 1.09×
//! after; `yield_pingpong` 1w 0.61×, 0.51×, 0.69× before, 0.47×, 0.52×, 0.51× after;
//! `chan_pingpong` 1w 0.57×, 0.50×, 0.54× before, 0.45×, 0.49×, 0.51× after.
//!
//! The floor, then: with the bench's work (about 1 µs a round) the runtime's share per
//! task-round on one worker is about 480 ns against tokio's 320 ns (1.1× in total), and on 2
//! workers of a loaded machine a pinned fiber also waits for its descheduled worker where
//! tokio steals it.
//!
//! Fourth pass: the blocking path's frames off the fiber's stack. Measured by painting the
//! stack below the task's closure (1 worker, 200 yielders beside a pair, so that the receive
//! parks): a `yield_now` writes 88 bytes below the closure's frame, a receive that parks 992
//! (the deepest are the registration's frames under the channel's lock, below the park's
//! switch), the send that wakes it 608, a receive a retry completes 344. Tried, in the commit
//! "Experiment: channel transactions on the worker's stack" and reverted after it: every
//! transaction under a channel's lock, with the wakes after it, ran on the worker thread's
//! stack (corosensei's `on_parent_stack`, Go's `systemstack`), and a plain park left its cold
//! cases (deadline, cycle check, unwinding) out of line: 816, 208 and 344 bytes. Cachegrind as
//! above, per task-round: L1 misses 30.0 → 26.7 (writes 12.1 → 8.6, reads 17.9 → 18.1),
//! instructions 1 859 → 1 925; with a 1 MiB last level standing in for the L2, 22.5 → 18.8
//! misses (tokio: 0.9). In time, nothing: `fibra-compare balance`, eight alternations at a load
//! average of 3.1–3.5, 1.13×–1.21× before (median 1.17×), 1.14×–1.27× after (median 1.18×);
//! the workload on 2 workers with the work, best of 15: 126.9 ms before, 127.0 ms after, tokio
//! 108.0 ms. The lines saved were lines first written, which the store buffer absorbs; the
//! misses that stall are reads, and those stayed.
//!
//! Where the floor is: how much memory a fiber touches per round.
//! Yields alone (1 worker, 200 000 yields cut into more or fewer tasks, best of 8, load
//! 2.2–3.3): fibra is faster than tokio until its fibers' memory outgrows the 512 KiB L2, then
//! falls behind, where tokio stays flat:
//!
//! | tasks | 20 | 200 | 500 | 1 000 | 1 500 | 2 000 |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | tokio ms | 18.4 | 17.3 | | 18.3 | | 18.9 |
//! | fibra ms | 14.3 | 15.5 | 17.9 | 23.4 | 32.1 | 44.1 |
//!
//! A yielding fiber touches its `Core`'s hot lines and a few lines of its stack, about eight
//! lines where a tokio task touches two or three. The ping-pong adds the channels' lines: of
//! the 10.6 read misses per task-round that missed a 1 MiB L2 in cachegrind, about 5 were the
//! channel's, 2 the `Core`'s and 2 the stack's on resume. A page per task is not the cost:
//! tokio tasks each writing a line of a page of their own every round ran as fast as without
//! (1 000 tasks, best of 10: 38.9 ms against 39.2 ms; fibra 67.1 ms).
//!
//! Tried, and reverted when it was merged: a channel's ring kept its head and tail, and the
//! channel its retry slots, beside its other fields instead of on cache lines of their own.
//! It cost the channels between threads too much: full `chan_throughput` runs on a quiet
//! machine (load average 2.2), three alternations, fibra's ns per message 36–92 before against
//! 78–261 after for 1x1 and 37–305 against 117–466 for 4x4, a producer and a consumer on two
//! threads now writing one line. What it gained here, cachegrind as above, per task-round: L1
//! read misses 17.9 → 13.8 (tokio 17.5), misses of a 1 MiB L2 22.5 → 16.4 (reads 10.8 → 4.8),
//! instructions 1 859 → 1 867. The workload without the work on 1 worker, best of 12 at a load
//! average of 2.4–3.2: 66.2 ms → 59.0 ms (tokio 39.4 ms). `fibra-compare balance`, alternated with
//! the binary before, twelve runs each at a load average of 2.2–2.5: 0.89×–1.44× before (median
//! 1.17×), 1.05×–1.18× after (median 1.09×); eight each at 2.9–3.4: 1.07×–1.27× before (median
//! 1.17×), 1.12×–1.21× after (median 1.15×); six each at 2.5: 1.05×–1.12× before (median 1.09×,
//! fibra 109.5 ms, tokio 99.5 ms), 1.04×–1.11× after (median 1.06×, fibra 105.2 ms, tokio 99.7 ms);
//! the worker share 0.93–1.07× tokio's in the last two sets. `spawn_join --quick` 2w 1.29×, 1.25×,
//! 1.21× before, 1.18×, 1.02×, 0.67× after; `skynet --quick` 2w_100k 1.12×, 0.71×, 0.96× before,
//! 1.03×, 1.01×, 1.01× after, 2w_10k 1.18×, 1.46×, 1.11× before, 1.23×, 1.11×, 1.09× after (load
//! 3.2–7.0). `chan_throughput --quick`, seven alternations at 2.3–4.6 (medians; each ratio spreads
//! over 2× between runs): 1x1 0.33× tokio before, 0.31× after; 4x4 0.81× crossbeam and 0.49×
//! async_channel before, 0.93× and 0.40× after. `chan_pingpong --quick`, three: 1w 0.56× tokio
//! before, 0.51× after; 2w 3.04× before, 3.05× after.
//!
//! The floor. Per round a fiber touches its `Core`'s hot lines (232 bytes), its stack from
//! the closure down (about 1 000 bytes for the task whose receive parks, 600 for its partner)
//! and its share of the channels, about 1.4 KiB a fiber: 1 000 fibers taking turns need more
//! than twice the 512 KiB L2 of a core, so each line a fiber reads in its round comes from the
//! L3. A tokio task's round touches a few hundred bytes, and 1 000 of them fit (0.9 misses of
//! a 1 MiB L2 per task-round in cachegrind, fibra 16.4). Shaving lines helps only once the
//! whole fits: the worker-stack experiment took about 300 bytes a fiber off and changed nothing
//! in time. With yields alone, where a fiber touches about 500 bytes, fibra is ahead of tokio
//! up to a few hundred fibers and falls behind from 1 000 (table above), where they fill the
//! L2. So ≤ 1.0× on this workload needs a fiber's round to touch about half of what it does
//! now — the stack experiment, a `Core` whose hot part is one or two lines, a channel wait that
//! reads fewer lines without sharing the ones other threads write — not any one of them.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::report::{self, Case, Metric, Outcome};
use crate::rounds::compare_timed;
use crate::runtimes;

/// Workers of both systems.
const WORKERS: usize = 2;
/// Tasks spawned by the one spawner (an even number: they work in pairs).
const TASKS: u64 = 1_000;
/// Work rounds per task.
const ROUNDS_PER_TASK: u32 = 100;

/// Work rounds counted per thread: each task counts its own, then adds them in once.
#[derive(Default)]
struct Shares(Mutex<HashMap<ThreadId, u64>>);

impl Shares {
    fn add(&self, counted: HashMap<ThreadId, u64>) {
        let mut shares = self.0.lock().expect("shares lock");
        for (thread, rounds) in counted {
            *shares.entry(thread).or_default() += rounds;
        }
    }

    /// The busiest thread's rounds over the idlest's, over `threads` threads (one that ran
    /// nothing counts as zero: an infinite ratio).
    fn max_over_min(&self, threads: usize) -> f64 {
        let shares = self.0.lock().expect("shares lock");
        let total: u64 = shares.values().sum();
        assert_eq!(
            total,
            TASKS * u64::from(ROUNDS_PER_TASK),
            "every work round is counted"
        );
        let max = shares.values().copied().max().unwrap_or(0);
        let min = if shares.len() < threads {
            0
        } else {
            shares.values().copied().min().unwrap_or(0)
        };
        max as f64 / min as f64
    }
}

/// A little CPU work: about a microsecond.
fn work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..400 {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
}

/// Counts one work round on the current thread.
fn count(counted: &mut HashMap<ThreadId, u64>) {
    *counted.entry(std::thread::current().id()).or_default() += 1;
}

/// Runs the case and prints its JSON lines.
pub fn run(quick: bool) {
    let rounds = if quick { 3 } else { 5 };
    let fibra_shares = Mutex::new(Vec::new());
    let tokio_shares = Mutex::new(Vec::new());
    compare_timed(
        "balance",
        "2w",
        Metric::MsTotal,
        TASKS,
        rounds,
        &[
            ("fibra", &|tasks| {
                timed(&fibra_shares, |shares| fibra(tasks, shares))
            }),
            ("tokio", &|tasks| {
                timed(&tokio_shares, |shares| tokio(tasks, shares))
            }),
        ],
    );
    let case = Case {
        bench: "balance",
        variant: "worker_share",
        metric: Metric::MaxOverMin,
    };
    let outcomes: Vec<Outcome> = [("fibra", fibra_shares), ("tokio", tokio_shares)]
        .into_iter()
        .map(|(system, shares)| {
            let shares = shares.into_inner().expect("shares lock");
            Outcome {
                system,
                value: report::median(&shares),
                runs: shares.len(),
            }
        })
        .collect();
    for line in report::lines(&case, &outcomes) {
        println!("{line}");
    }
}

/// Runs one round with fresh counts and records its worker share.
fn timed(
    shares_of_rounds: &Mutex<Vec<f64>>,
    round: impl FnOnce(&Arc<Shares>) -> Duration,
) -> Duration {
    let shares = Arc::default();
    let elapsed = round(&shares);
    let share = shares.max_over_min(WORKERS);
    eprintln!("balance: busiest worker over idlest: {share:.2}");
    shares_of_rounds.lock().expect("shares lock").push(share);
    elapsed
}

/// fibra: the main fiber spawns every task; partners ping-pong over rendezvous pairs.
fn fibra(tasks: u64, shares: &Arc<Shares>) -> Duration {
    runtimes::fibra(WORKERS).block_on(|| {
        let start = Instant::now();
        fibra::scope(|s| {
            for pair in 0..tasks / 2 {
                let (to_b, from_a) = fibra::chan::bounded::<u64>(1);
                let (to_a, from_b) = fibra::chan::bounded::<u64>(1);
                s.spawn(move || {
                    let mut counted = HashMap::new();
                    for round in 0..ROUNDS_PER_TASK {
                        count(&mut counted);
                        let x = work(pair + u64::from(round));
                        fibra::yield_now();
                        to_b.send(x).expect("partner alive");
                        from_b.recv().expect("partner alive");
                    }
                    shares.add(counted);
                });
                s.spawn(move || {
                    let mut counted = HashMap::new();
                    for round in 0..ROUNDS_PER_TASK {
                        count(&mut counted);
                        let x = work(pair ^ u64::from(round));
                        fibra::yield_now();
                        let got = from_a.recv().expect("partner alive");
                        to_a.send(got ^ x).expect("partner alive");
                    }
                    shares.add(counted);
                });
            }
        });
        start.elapsed()
    })
}

/// tokio: one task spawns every task; partners ping-pong over `tokio::sync::mpsc` pairs.
fn tokio(tasks: u64, shares: &Arc<Shares>) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    let shares = shares.clone();
    runtimes::tokio_on_worker(&runtime, async move {
        let start = Instant::now();
        let mut handles = Vec::with_capacity(tasks as usize);
        for pair in 0..tasks / 2 {
            let (to_b, mut from_a) = tokio::sync::mpsc::channel::<u64>(1);
            let (to_a, mut from_b) = tokio::sync::mpsc::channel::<u64>(1);
            let a_shares = shares.clone();
            handles.push(tokio::spawn(async move {
                let mut counted = HashMap::new();
                for round in 0..ROUNDS_PER_TASK {
                    count(&mut counted);
                    let x = work(pair + u64::from(round));
                    tokio::task::yield_now().await;
                    to_b.send(x).await.expect("partner alive");
                    from_b.recv().await.expect("partner alive");
                }
                a_shares.add(counted);
            }));
            let b_shares = shares.clone();
            handles.push(tokio::spawn(async move {
                let mut counted = HashMap::new();
                for round in 0..ROUNDS_PER_TASK {
                    count(&mut counted);
                    let x = work(pair ^ u64::from(round));
                    tokio::task::yield_now().await;
                    let got = from_a.recv().await.expect("partner alive");
                    to_a.send(got ^ x).await.expect("partner alive");
                }
                b_shares.add(counted);
            }));
        }
        for handle in handles {
            handle.await.expect("balance task panicked");
        }
        start.elapsed()
    })
}
