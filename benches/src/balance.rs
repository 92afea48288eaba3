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
