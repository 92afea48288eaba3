//! `parked_memory`: resident memory per parked task, 2 workers each.
//!
//! Variant `2w` (100 000 parked, full runs only): fibra vs tokio. Variant `2w_20k` (20 000
//! parked, in both modes): fibra vs tokio vs `may`. `may` maps every coroutine stack with its own
//! guard page, two kernel mappings per coroutine, so with the default `vm.max_map_count` (65 530)
//! it cannot hold 100 000 coroutines at once; it is compared on the smaller count only.
//!
//! Every measurement runs in a child process of its own (see [`crate::child`]) so that one
//! system's heap and stacks never sit under another's baseline. The child starts its runtime,
//! spawns and joins one warm-up task, reads `VmRSS`, spawns the tasks, waits until every one has
//! counted itself in and parked, reads `VmRSS` again, then releases and joins them all. The value
//! is the difference divided by the task count. fibra fibers `park()` and are unparked one by one
//! through their join handles; tokio tasks await a shared
//! `Notify`; `may` coroutines wait on a shared `may::sync::SyncFlag`.

use std::pin::pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use may::sync::SyncFlag;
use tokio::sync::Notify;

use crate::child;
use crate::report::{Case, Metric};
use crate::rounds::{compare, Contender};
use crate::rss::resident_bytes;
use crate::runtimes;

/// The first word of this bench's child jobs.
const JOB: &str = "parked_memory";
/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system (each is a child process).
const ROUNDS: usize = 3;

/// The variants: name, parked tasks, the systems compared (see the module docs for why `may`
/// sits one out) and whether `--quick` runs it.
const VARIANTS: [(&str, usize, &[&str], bool); 2] = [
    ("2w", 100_000, &["fibra", "tokio"], false),
    ("2w_20k", 20_000, &["fibra", "tokio", "may"], true),
];

/// Runs the bench (each round in a child process) and prints its JSON lines.
pub fn run(quick: bool) {
    for (variant, tasks, systems, in_quick) in VARIANTS {
        if quick && !in_quick {
            continue;
        }
        let case = Case {
            bench: JOB,
            variant,
            metric: Metric::BytesPerTask,
        };
        let mut contenders: Vec<Contender<'_>> = systems
            .iter()
            .map(|&system| Contender::new(system, move || in_child(system, tasks)))
            .collect();
        compare(&case, ROUNDS, &mut contenders);
    }
}

/// One round in a child process: the bytes per task of `tasks` parked tasks of `system`.
fn in_child(system: &str, tasks: usize) -> f64 {
    let out = child::run(&format!("{JOB} {system} {tasks}"));
    out.parse::<f64>()
        .unwrap_or_else(|_| panic!("child printed `{out}`, not a number"))
}

/// The child side: runs the job `parked_memory <system> <tasks>` and prints bytes per task.
pub fn run_child(job: &str) -> ExitCode {
    let parsed = match job.split_whitespace().collect::<Vec<_>>()[..] {
        [JOB, system, tasks] => tasks
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .map(|n| (system, n)),
        _ => None,
    };
    let (grown, tasks) = match parsed {
        Some(("fibra", n)) => (fibra(n), n),
        Some(("tokio", n)) => (tokio(n), n),
        Some(("may", n)) => (may(n), n),
        _ => {
            eprintln!("fibra-compare: bad child job `{job}`");
            return ExitCode::from(2);
        }
    };
    println!("{:.1}", grown as f64 / tasks as f64);
    ExitCode::SUCCESS
}

/// fibra: `tasks` fibers in a scope, each parked until released; returns the RSS growth.
fn fibra(tasks: usize) -> u64 {
    runtimes::fibra(WORKERS).block_on(move || {
        fibra::spawn(|| ()).join().expect("warm-up fiber");
        let parked = AtomicUsize::new(0);
        let released = AtomicBool::new(false);
        let main = fibra::current();
        let baseline = resident_bytes();
        fibra::scope(|s| {
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    s.spawn(|| {
                        if parked.fetch_add(1, Ordering::AcqRel) + 1 == tasks {
                            main.unpark();
                        }
                        while !released.load(Ordering::Acquire) {
                            fibra::park();
                        }
                    })
                })
                .collect();
            while parked.load(Ordering::Acquire) < tasks {
                fibra::park();
            }
            let grown = resident_bytes().saturating_sub(baseline);
            released.store(true, Ordering::Release);
            for handle in &handles {
                handle.fiber().unpark();
            }
            for handle in handles {
                handle.join().expect("parked fiber panicked");
            }
            grown
        })
    })
}

/// What the parked tokio tasks share.
struct TokioGate {
    parked: AtomicUsize,
    all_parked: Notify,
    release: Notify,
}

/// tokio: `tasks` tasks awaiting one `Notify`; returns the RSS growth.
fn tokio(tasks: usize) -> u64 {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        tokio::spawn(async {}).await.expect("warm-up task");
        let gate = Arc::new(TokioGate {
            parked: AtomicUsize::new(0),
            all_parked: Notify::new(),
            release: Notify::new(),
        });
        let baseline = resident_bytes();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let gate = Arc::clone(&gate);
                tokio::spawn(async move {
                    let mut released = pin!(gate.release.notified());
                    // Registered as a waiter before counting in, so `notify_waiters` sees it.
                    released.as_mut().enable();
                    if gate.parked.fetch_add(1, Ordering::AcqRel) + 1 == tasks {
                        gate.all_parked.notify_one();
                    }
                    released.await;
                })
            })
            .collect();
        gate.all_parked.notified().await;
        let grown = resident_bytes().saturating_sub(baseline);
        gate.release.notify_waiters();
        for handle in handles {
            handle.await.expect("parked task panicked");
        }
        grown
    })
}

/// What the parked `may` coroutines share.
struct MayGate {
    parked: AtomicUsize,
    all_parked: SyncFlag,
    release: SyncFlag,
}

/// may: `tasks` coroutines waiting on one `SyncFlag`; returns the RSS growth.
fn may(tasks: usize) -> u64 {
    // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between threads (a
    // thread-local must not be held across a switch) and has a small fixed stack; this empty
    // coroutine does neither.
    let warm_up = unsafe { may::coroutine::spawn(|| ()) };
    warm_up.join().expect("warm-up coroutine");
    let gate = Arc::new(MayGate {
        parked: AtomicUsize::new(0),
        all_parked: SyncFlag::new(),
        release: SyncFlag::new(),
    });
    let baseline = resident_bytes();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let gate = Arc::clone(&gate);
            let body = move || {
                if gate.parked.fetch_add(1, Ordering::AcqRel) + 1 == tasks {
                    gate.all_parked.fire();
                }
                gate.release.wait();
            };
            // SAFETY: as for the warm-up: the body touches no thread-local (only atomics and
            // may's own `SyncFlag`, made for coroutines) and needs a few hundred bytes of stack.
            unsafe { may::coroutine::spawn(body) }
        })
        .collect();
    gate.all_parked.wait();
    let grown = resident_bytes().saturating_sub(baseline);
    gate.release.fire();
    for handle in handles {
        handle.join().expect("parked coroutine panicked");
    }
    grown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_parks_and_releases_all_tasks() {
        // Behaviour only: every task parks, is released and joins; the sizes are not checked.
        runtimes::init_may();
        fibra(100);
        tokio(100);
        may(100);
    }
}
