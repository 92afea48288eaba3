//! `sysmon_cpu`: what the runtime's monitor thread (stuck fibers, blocked workers, a stalled
//! driver) costs to run: its CPU time, read from the kernel's `schedstat` for that thread,
//! over 10 s (2 s with `--quick`) of a 2-worker runtime, as a percentage of one core. Variant
//! `idle`: the main fiber sleeps the whole time, so every worker sleeps too (target: under
//! 0.5 %). Variant `busy`: two fibers yield the whole time, and the monitor looks at the
//! workers once a tick. fibra only; a system without `/proc` prints a skip line.
//!
//! ## Measured
//!
//! 2026-12-06, the shared 2-core machine at a load average near 3.9 (another engineer's
//! benchmarks running): `idle` 0.149 % and 0.228 % of one core in two runs, `busy` 0.510 %.
//! Idle, the monitor still wakes every 25 ms (half the stuck threshold) to watch the driver
//! thread, about 40 times a second: its `schedstat` counted 202 wake-ups and 14 ms of CPU in
//! 5 s, about 70 µs a wake-up on this nested VM, most of it system calls (the timed wait and
//! the driver probe's wake-up).
//!
//! 2026-12-07: the monitor no longer ticks while every worker sleeps and the driver runs only
//! the runtime's own tasks, open holds or not (a sleeping fiber's timer is one): nothing that
//! could stall is running then. Full run, load average near 1.9: `idle` 0.003 % (0.512 % in the
//! last full run before), `busy` 1.078 %.

use std::collections::HashSet;
use std::fs;
use std::time::{Duration, Instant};

use crate::report::{self, Case, Metric, Outcome};

/// The monitor thread's name (`ps -L`, `/proc/<pid>/task/<tid>/comm`).
const MONITOR: &str = "fibra-sysmon";
/// Workers of the runtime.
const WORKERS: usize = 2;

/// Runs both variants and prints their JSON lines, or a skip line.
pub fn run(quick: bool) {
    if fs::read_dir("/proc/self/task").is_err() {
        eprintln!("sysmon_cpu: skipped: no /proc/self/task to read a thread's CPU time from");
        return;
    }
    let span = Duration::from_secs(if quick { 2 } else { 10 });
    for (variant, busy) in [("idle", false), ("busy", true)] {
        let percent = monitor_share(span, busy);
        eprintln!("sysmon_cpu/{variant}: the monitor thread took {percent:.3} % of one core");
        let case = Case {
            bench: "sysmon_cpu",
            variant,
            metric: Metric::PercentOfCore,
        };
        let outcome = Outcome {
            system: "fibra",
            value: percent,
            runs: 1,
        };
        for line in report::lines(&case, &[outcome]) {
            println!("{line}");
        }
    }
}

/// The monitor thread's CPU time over `span` of a fresh runtime, in percent of the wall
/// time: with two fibers yielding throughout when `busy`, else with the main fiber asleep.
fn monitor_share(span: Duration, busy: bool) -> f64 {
    let before = monitors();
    let runtime = fibra::Runtime::builder()
        .workers(WORKERS)
        .build()
        .expect("build the fibra runtime");
    // Read from the main fiber, while the runtime (and so its monitor) runs.
    runtime.block_on(move || {
        let monitor = new_monitor(&before);
        let cpu_before = thread_cpu(monitor);
        let start = Instant::now();
        if busy {
            fibra::scope(|s| {
                for _ in 0..WORKERS {
                    s.spawn(|| {
                        while start.elapsed() < span {
                            for _ in 0..1000 {
                                fibra::yield_now();
                            }
                        }
                    });
                }
            });
        } else {
            fibra::sleep(span);
        }
        let cpu = thread_cpu(monitor).saturating_sub(cpu_before);
        100.0 * cpu.as_secs_f64() / start.elapsed().as_secs_f64()
    })
}

/// The one monitor thread that is not among `before`. A new thread names itself once it runs,
/// so it is looked for a few times.
fn new_monitor(before: &HashSet<u32>) -> u32 {
    for _ in 0..1000 {
        let started: Vec<u32> = monitors().difference(before).copied().collect();
        match started[..] {
            [] => fibra::sleep(Duration::from_millis(1)),
            [monitor] => return monitor,
            _ => panic!("a new runtime started {} monitor threads", started.len()),
        }
    }
    panic!("no monitor thread named {MONITOR} appeared");
}

/// The ids of this process's threads named [`MONITOR`].
fn monitors() -> HashSet<u32> {
    fs::read_dir("/proc/self/task")
        .expect("list this process's threads")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let tid = entry.file_name().to_str()?.parse().ok()?;
            let comm = fs::read_to_string(entry.path().join("comm")).ok()?;
            (comm.trim_end() == MONITOR).then_some(tid)
        })
        .collect()
}

/// The CPU time thread `tid` of this process has had so far: the first field of its
/// `schedstat`, in nanoseconds.
fn thread_cpu(tid: u32) -> Duration {
    let path = format!("/proc/self/task/{tid}/schedstat");
    let stat = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let ns = stat
        .split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .unwrap_or_else(|| panic!("{path} reads `{stat}`, not nanoseconds first"));
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_thread_is_found_by_its_name_and_its_cpu_time_read() {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(MONITOR.to_owned())
            .spawn(move || {
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(5) {
                    std::hint::spin_loop();
                }
                // `/proc/thread-self` links to `<pid>/task/<tid>`.
                let link = fs::read_link("/proc/thread-self").unwrap();
                let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
                tid_tx.send(tid).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        assert!(monitors().contains(&tid));
        let spent = thread_cpu(tid);
        assert!(spent > Duration::ZERO);
        assert!(thread_cpu(tid) >= spent);
        done_tx.send(()).unwrap();
        thread.join().unwrap();
    }
}
