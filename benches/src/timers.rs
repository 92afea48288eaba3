//! `timers`: many tasks sleeping `SLEEP` at once; the spawner spawns them all, then joins them
//! all. Three metrics per variant: the wall time of the whole workload (`ms_total`), the CPU
//! time the process spent on it (`cpu_ms`, user + system over every thread of the process, from
//! `getrusage(RUSAGE_SELF)`; the idle threads of the systems not running at the time are part of
//! the process for every system alike), and the process's minor page faults per task
//! (`faults_per_task`, from the same `getrusage`: memory touched for the first time, such as a
//! fresh fiber stack's top page). Each metric gets its own set of alternating rounds.
//!
//! Variant `2w` (100 000 sleepers, full runs only): fibra fibers in a scope calling
//! `fibra::sleep` vs tokio tasks awaiting `tokio::time::sleep` on a 2-worker multi-thread
//! runtime, each on a fresh runtime (fibra's stack pool starts empty). Variant `warm` (full runs
//! only): the same, but timing the second of two passes on one runtime, so that fibra's
//! sleepers run on stacks the first pass committed (and tokio's on its warmed allocator and
//! timer wheel). Variant `2w_20k` (20 000 sleepers, both modes): fibra vs tokio vs `may`
//! coroutines calling `may::coroutine::sleep`. `may` maps every coroutine stack with its own
//! guard page, two kernel mappings per coroutine, so with the default `vm.max_map_count`
//! (65 530) it cannot hold 100 000 coroutines at once; it is compared on the smaller count only.
//! Every run checks the sum of the sleepers' indices and that the whole run took at least
//! `SLEEP`.
//!
//! ## Figures
//!
//! fibra / tokio medians, two alternated full runs of the binary before and after the stack
//! pool's batched discards and guards (load average 5 to 10 on 2 shared cores, so wall ratios
//! move by ±0.4 between runs; CPU ratios are steadier):
//!
//! | variant | metric | before | after |
//! | --- | --- | --- | --- |
//! | `2w` | `ms_total` | 3.19×, 2.63× | 2.77×, 2.53× |
//! | `2w` | `cpu_ms` | 2.92×, 3.15× | 2.66×, 2.82× |
//! | `2w` | `faults_per_task` (tokio 0.107) | 0.261, 0.245 | 0.248, 0.254 |
//! | `warm` | `ms_total` | 2.94×, 2.90× | 2.33×, 1.89× |
//! | `warm` | `cpu_ms` | 2.93×, 3.13× | 2.50×, 2.57× |
//! | `warm` | `faults_per_task` (tokio 0.10) | 0.181, 0.201 | 0.073, 0.044 |
//!
//! A sleeping fiber touches one stack page (1.0 fault per fiber with `warm_stacks(0)`), and
//! fewer fibers than the 100 000 are alive at once (the first finish while the spawner goes
//! on), so the cold run faults 0.25 times per fiber, not once. Kernel work per five passes of
//! 100 000 sleepers on one runtime (`perf stat`): 144 653 `madvise` calls and 132 070 faults
//! before (every stack past the 4 096 warm ones per worker went back with its own
//! `MADV_DONTNEED`, a TLB shootdown each, and faulted again when reused; every fresh slot got
//! its guard in a call of its own); 45 `madvise` and 2 257 `process_madvise` calls and 49 717
//! faults after (`MADV_FREE`, 64 stacks per call, reused without a fault; guards in batches).
//! The kernel's share of fibra's CPU samples fell from 25 % to 17 %.
//! Committing the top pages of each batch of fresh slots too (`MADV_POPULATE_WRITE` in the
//! same `process_madvise` breath) cut the traps to 14 823 per five passes but not the CPU
//! (`2w` fibra `cpu_ms` 511 and 504 without, 580 and 551 with, alternated, load average 4 to
//! 5): the kernel populates each range on its own walk, which costs what the fault did, and
//! `getrusage` counts the populated pages as minor faults all the same. It was left out.
//!
//! Where the rest goes (`perf record -e cpu-clock`, six passes on one runtime, after): 22 % on
//! the first instructions after a switch into a resumed fiber (12 % in `park_fiber_with`, 10 %
//! in `run_worker`), stalls on a cache line and TLB entry of a stack page no other fiber
//! shares, which tokio's tasks, packed in the heap, do not pay; 15 % in the allocator; 7 % in
//! the diagnostics' fiber table (insert at spawn, remove at exit); 4 % holds and 3 %
//! `clock_gettime` on the timer path; 6 % tokio's own timer wheel, which both systems pay;
//! 17 % the kernel (the `MADV_FREE` page walk 4 %, faults 3 %). Both targets of the timers
//! item (warm ≤ 1.0×, cold ≤ 1.5× tokio) stay out of reach from the stack pool alone: the
//! stack switches and the per-spawn costs (allocator, fiber table) are more than tokio's whole
//! CPU per task, and belong to the spawn path and the scheduler loop.
//!
//! Second pass (2026-12-06): what a sleeper costs besides its stack. A probe of the warm pass
//! alone (100 000 sleepers on 2 workers, medians of five alternated runs, CPU / wall ms): 324 /
//! 176 before. The runtime's holds sharded per thread (every armed timer took a hold under one
//! lock, with one reference count, shared by both workers): 296 / 162. Stacks past the warm
//! bound kept until they have waited through an aging of the pool, so a pass reuses the last
//! pass's stacks without giving their memory back in between, and `process_madvise` calls cut
//! at 1 024 ranges (a longer list made the kernel refuse the call, which turned batching off
//! for the process): 245 / 139. The fiber table placing a shard's fibers in id order (its share
//! of the samples 7.9 % → 3.6 %), then a timer armed without reading the clock: 226 against 249
//! in a last set. In `fibra-compare timers`, one alternation of the binaries before and after:
//! `2w` wall 1.90× → 1.58×, CPU 2.61× → 2.06× tokio; `warm` wall 2.62× → 1.81×, CPU 1.87× →
//! 1.65×. A full run after (load average near 2): `2w` 2.32× / 2.29×, `warm` 1.79× / 1.91×.
//! Both targets stay out of reach.
//!
//! A spawn's packet made a part of its `Core` (one allocation per fiber instead of two; see
//! `spawn_join`): two alternated pairs of the binaries before and after (load average 1.8–2.2),
//! fibra / tokio, before → after: `2w` CPU 2.35×, 2.04× → 1.97×, 1.96×, wall 2.01×, 1.77× →
//! 1.73×, 1.80×; `warm` CPU 1.80×, 1.71× → 1.48×, 1.54×, wall 1.73×, 1.60× → 1.83×, 1.67×.
//! The full run after: `2w` 1.72× wall, 2.11× CPU; `warm` 1.47× wall, 1.53× CPU.
//!
//! 2026-12-07: callgrind of a probe (20 000 sleepers a pass, one worker) put 60 % of a warm
//! pass's instructions in `memmove`, from the worker's run order: the wakes of every batch
//! level sat in one queue, and taking the top level's next wake removed it from the middle,
//! shifting the thousands of wakes of the levels below (the sleepers' timers fire while their
//! spawner's later batches are still starting). Each level now has its own queue: 11 300 → 5 300
//! instructions per sleeper (callgrind counts each `rep movsb` step, so the wall gain is
//! smaller). On the machine, 100 000 sleepers a pass on one worker: process CPU 2.81, 2.40,
//! 2.81 s before, 2.42, 2.17, 2.67 s after for four passes (three alternated runs); on two
//! workers `memmove` had been 1.4 % of the samples, and two alternated full runs of this bench
//! moved within their noise (`warm` CPU 1.76×, 1.86× → 1.53×, 1.59× tokio; `2w` CPU 1.71×,
//! 1.75× → 1.84×, 2.09×).

use std::time::{Duration, Instant};

use crate::cpu::{process_cpu, process_minor_faults};
use crate::report::{Case, Metric};
use crate::rounds::{compare, sum_below, Contender};
use crate::runtimes;

/// How long every task sleeps.
const SLEEP: Duration = Duration::from_millis(10);
/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system and metric.
const ROUNDS: usize = 5;
/// Sleepers of the full-run variants.
const MANY: u64 = 100_000;

/// Runs the variants and prints their JSON lines.
pub fn run(quick: bool) {
    if !quick {
        compare_variant("2w", MANY, &[("fibra", &fibra), ("tokio", &tokio)]);
        compare_variant(
            "warm",
            MANY,
            &[("fibra", &fibra_warm), ("tokio", &tokio_warm)],
        );
    }
    compare_variant(
        "2w_20k",
        20_000,
        &[("fibra", &fibra), ("tokio", &tokio), ("may", &may)],
    );
}

/// The metrics, each measured in rounds of its own.
const METRICS: [Metric; 3] = [Metric::MsTotal, Metric::CpuMs, Metric::FaultsPerTask];

/// One system of a variant: its name and a round of `tasks` sleepers.
type Round<'a> = (&'static str, &'a dyn Fn(u64) -> Spent);

/// Alternating rounds of `systems` with `tasks` sleepers, for every metric in turn.
fn compare_variant(variant: &'static str, tasks: u64, systems: &[Round<'_>]) {
    for metric in METRICS {
        let case = Case {
            bench: "timers",
            variant,
            metric,
        };
        let mut contenders: Vec<Contender<'_>> = systems
            .iter()
            .map(|&(system, round)| {
                Contender::new(system, move || round(tasks).value(metric, tasks))
            })
            .collect();
        compare(&case, ROUNDS, &mut contenders);
    }
}

/// What one run took.
#[derive(Clone, Copy, Debug)]
struct Spent {
    /// Wall time.
    wall: Duration,
    /// CPU time of the whole process.
    cpu: Duration,
    /// Minor page faults of the whole process.
    faults: u64,
}

impl Spent {
    /// The run's value in `metric`, for a run of `tasks` sleepers.
    fn value(self, metric: Metric, tasks: u64) -> f64 {
        match metric {
            Metric::MsTotal => self.wall.as_secs_f64() * 1e3,
            Metric::CpuMs => self.cpu.as_secs_f64() * 1e3,
            Metric::FaultsPerTask => self.faults as f64 / tasks as f64,
            other => panic!("timers does not measure {}", other.name()),
        }
    }
}

/// The start of a measured region.
struct Start {
    wall: Instant,
    cpu: Duration,
    faults: u64,
}

impl Start {
    fn now() -> Start {
        Start {
            faults: process_minor_faults(),
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }

    /// What the region took since [`Start::now`]; read the CPU clock first, as `now` read it
    /// last, so the wall time covers the CPU time's region.
    fn spent(&self) -> Spent {
        let cpu = process_cpu();
        let wall = self.wall.elapsed();
        Spent {
            wall,
            cpu: cpu.saturating_sub(self.cpu),
            faults: process_minor_faults().saturating_sub(self.faults),
        }
    }
}

/// Checks a run: every sleeper returned its index, and nothing finished before [`SLEEP`].
fn check(sum: u64, tasks: u64, spent: Spent) -> Spent {
    assert_eq!(sum, sum_below(tasks), "sleepers lost");
    assert!(spent.wall >= SLEEP, "woke early: {:?}", spent.wall);
    spent
}

/// fibra on a fresh runtime: its stack pool starts empty.
fn fibra(tasks: u64) -> Spent {
    runtimes::fibra(WORKERS).block_on(move || fibra_pass(tasks))
}

/// fibra's second pass on one runtime, the first untimed: the sleepers run on stacks the
/// first pass committed.
fn fibra_warm(tasks: u64) -> Spent {
    runtimes::fibra(WORKERS).block_on(move || {
        fibra_pass(tasks);
        fibra_pass(tasks)
    })
}

/// The main fiber spawns every sleeper in a scope, then joins them in order.
fn fibra_pass(tasks: u64) -> Spent {
    let start = Start::now();
    let sum = fibra::scope(|s| {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                s.spawn(move || {
                    fibra::sleep(SLEEP);
                    i
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sleeping fiber panicked"))
            .sum::<u64>()
    });
    check(sum, tasks, start.spent())
}

/// tokio on a fresh 2-worker multi-thread runtime with its timer on.
fn tokio(tasks: u64) -> Spent {
    let runtime = runtimes::tokio_multi_timed(WORKERS);
    runtimes::tokio_on_worker(&runtime, tokio_pass(tasks))
}

/// tokio's second pass on one runtime, the first untimed, like [`fibra_warm`].
fn tokio_warm(tasks: u64) -> Spent {
    let runtime = runtimes::tokio_multi_timed(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        tokio_pass(tasks).await;
        tokio_pass(tasks).await
    })
}

/// The spawner is itself a task: it spawns every sleeper, then awaits them in order.
async fn tokio_pass(tasks: u64) -> Spent {
    let start = Start::now();
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            tokio::spawn(async move {
                tokio::time::sleep(SLEEP).await;
                i
            })
        })
        .collect();
    let mut sum = 0;
    for handle in handles {
        sum += handle.await.expect("sleeping task panicked");
    }
    check(sum, tasks, start.spent())
}

/// may: the spawner is itself a coroutine on may's 2-worker scheduler.
fn may(tasks: u64) -> Spent {
    let spawner = move || {
        let start = Start::now();
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let sleeper = move || {
                    may::coroutine::sleep(SLEEP);
                    i
                };
                // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between
                // threads (so a thread-local must not be held across a switch) and has a small
                // fixed stack. The sleeper touches no thread-local of its own (only may's timer,
                // made for coroutines) and uses a few hundred bytes of stack.
                unsafe { may::coroutine::spawn(sleeper) }
            })
            .collect();
        let mut sum = 0;
        for handle in handles {
            sum += handle.join().expect("sleeping coroutine panicked");
        }
        check(sum, tasks, start.spent())
    };
    // SAFETY: as for the sleepers: the spawner touches no thread-local (only `Instant`,
    // `getrusage`, the allocator and may's own join handles, made for coroutines) and its frames
    // are a few hundred bytes, far within may's default coroutine stack.
    let handle = unsafe { may::coroutine::spawn(spawner) };
    handle.join().expect("may spawner panicked")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_wakes_every_sleeper() {
        // Each function checks the sum and the minimum wall time itself.
        runtimes::init_may();
        fibra(1000);
        fibra_warm(1000);
        tokio(1000);
        tokio_warm(1000);
        may(1000);
    }
}
