//! The monitor thread's warnings (a fiber that runs too long, a worker blocked in a call
//! outside fibra, a stalled driver) and the dump printed on `FIBRA_DUMP_SIGNAL`. Each runs in
//! a child process, whose stderr the parent reads.

// The dump signal needs tokio's signal support, compiled out under `--cfg loom`.
#![cfg(not(loom))]

use fibra_runtime::{Builder, Handle};
use fibra_testing::{assert_killed_by, in_child, run_child, runtime, spawn_child};
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn stderr_of(test: &str, vars: &[(&str, &str)]) -> String {
    let output = run_child(test, vars);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "child failed:\n{stderr}");
    stderr
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|line| line.contains(needle)).collect()
}

/// Runs on the calling thread without a fibra operation for `duration`.
fn spin_for(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// The calling thread's CPU time so far (Linux: `/proc/thread-self/schedstat`).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns = stat.split_whitespace().next().expect("a first field");
    Duration::from_nanos(ns.parse().expect("nanoseconds"))
}

/// As [`spin_for`], until the calling thread has had `cpu` of CPU time: on a loaded machine
/// wall time says little about how long the monitor saw the thread run.
fn spin_for_cpu(cpu: Duration) {
    let start = thread_cpu();
    while thread_cpu() - start < cpu {
        spin_for(Duration::from_millis(1));
    }
}

/// Worker 0's slice count.
fn slices() -> u64 {
    Handle::current().metrics().workers[0].slices
}

/// Runs `stretch`, then a checkpoint, up to `tries` times, until a checkpoint yields (the
/// worker's slice count goes up); whether one did. For a fiber alone on worker 0, whose slice
/// budget is far from used up: only the monitor's request makes a checkpoint yield. A loaded
/// machine may hold the monitor off for a while, hence the tries.
fn until_a_checkpoint_yields(tries: usize, stretch: impl Fn()) -> bool {
    until_an_operation_yields(tries, stretch, fibra_runtime::checkpoint)
}

/// [`until_a_checkpoint_yields`] with another runtime operation in place of the checkpoint.
fn until_an_operation_yields(tries: usize, stretch: impl Fn(), operation: impl Fn()) -> bool {
    (0..tries).any(|_| {
        stretch();
        let before = slices();
        operation();
        slices() > before
    })
}

#[test]
fn a_fiber_spinning_past_the_threshold_is_reported_once_and_yields_at_its_next_checkpoint() {
    const TEST: &str =
        "a_fiber_spinning_past_the_threshold_is_reported_once_and_yields_at_its_next_checkpoint";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            let spinner = Builder::new()
                .name("spinner")
                .spawn(|| {
                    // Each stretch runs three thresholds of CPU time: the monitor asks the
                    // slice to yield at half the threshold and reports it past the threshold,
                    // both before the stretch's checkpoint.
                    let yielded = until_a_checkpoint_yields(100, || {
                        spin_for_cpu(Duration::from_millis(150));
                    });
                    assert!(yielded, "a checkpoint yielded");
                    let before = slices();
                    fibra_runtime::checkpoint();
                    assert_eq!(slices(), before, "only once");
                })
                .unwrap();
            spinner.join().unwrap();
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    let warnings = lines_with(&stderr, "without yielding");
    assert_eq!(warnings.len(), 1, "stderr:\n{stderr}");
    assert!(warnings[0].contains("\"spinner\""), "{}", warnings[0]);
    assert!(warnings[0].contains("tests/sysmon.rs"), "{}", warnings[0]);
    assert!(lines_with(&stderr, "blocked for").is_empty(), "{stderr}");
}

#[test]
fn a_fiber_whose_few_operations_are_slow_is_asked_to_yield_and_never_reported() {
    const TEST: &str = "a_fiber_whose_few_operations_are_slow_is_asked_to_yield_and_never_reported";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            // Each stretch stands for a slow operation (a process spawn, a large socket
            // write): far too few of them to use up the slice's budget before the threshold.
            let yielded = until_a_checkpoint_yields(1_000, || spin_for(Duration::from_millis(2)));
            assert!(yielded, "a checkpoint yielded");
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    assert!(!stderr.contains("fibra:"), "stderr:\n{stderr}");
}

#[test]
fn a_fiber_whose_spawns_are_slow_yields_at_a_spawn_when_asked_and_is_never_reported() {
    const TEST: &str =
        "a_fiber_whose_spawns_are_slow_yields_at_a_spawn_when_asked_and_is_never_reported";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            // A spawn is a runtime operation: it yields when the monitor asks, although it is
            // no cancellation point.
            let yielded = until_an_operation_yields(
                1_000,
                || spin_for(Duration::from_millis(2)),
                || drop(fibra_runtime::spawn(|| ())),
            );
            assert!(yielded, "a spawn yielded");
            // The request is taken with the hint, so a dump does not show a cancellation.
            let me = fibra_runtime::current().id().as_u64();
            let dump = fibra_runtime::dump();
            let info = dump.fibers.iter().find(|fiber| fiber.id == me);
            assert!(!info.expect("listed").cancelling, "{dump}");
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    assert!(!stderr.contains("fibra:"), "stderr:\n{stderr}");
}

#[test]
fn a_fiber_that_yields_often_is_never_reported() {
    const TEST: &str = "a_fiber_that_yields_often_is_never_reported";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(200) {
                spin_for(Duration::from_millis(1));
                fibra_runtime::yield_now();
            }
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    assert!(!stderr.contains("fibra:"), "stderr:\n{stderr}");
}

#[test]
fn a_worker_blocked_in_thread_sleep_is_reported_with_the_fibers_behind_it() {
    const TEST: &str = "a_worker_blocked_in_thread_sleep_is_reported_with_the_fibers_behind_it";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            let sleeper = Builder::new()
                .name("sleeper")
                .spawn_local(|| std::thread::sleep(Duration::from_millis(300)))
                .unwrap();
            let behind: Vec<_> = (0..2).map(|_| fibra_runtime::spawn_local(|| ())).collect();
            sleeper.join().unwrap();
            behind.into_iter().for_each(|fiber| fiber.join().unwrap());
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    let warnings = lines_with(&stderr, "blocked for");
    assert_eq!(warnings.len(), 1, "stderr:\n{stderr}");
    let warning = warnings[0];
    assert!(warning.contains("\"sleeper\""), "{warning}");
    assert!(warning.contains("2 ready fibers"), "{warning}");
    assert!(warning.contains("fibra::blocking"), "{warning}");
    assert!(
        lines_with(&stderr, "without yielding").is_empty(),
        "{stderr}"
    );
}

/// An unwinding fiber that waits blocks its worker's thread (it must not let the worker's
/// other fibers run): the warning says so, and names the wait, instead of blaming a call
/// outside fibra.
#[test]
fn a_worker_blocked_by_an_unwinding_fibers_wait_is_reported_with_that_wait() {
    const TEST: &str = "a_worker_blocked_by_an_unwinding_fibers_wait_is_reported_with_that_wait";
    if in_child(TEST) {
        struct LockOnDrop(Arc<fibra::sync::Mutex<()>>);
        impl Drop for LockOnDrop {
            fn drop(&mut self) {
                drop(self.0.lock());
            }
        }
        runtime(1).block_on(|| {
            let mutex = Arc::new(fibra::sync::Mutex::new(()));
            let (locked, holding) = std::sync::mpsc::channel();
            let holder = {
                let mutex = mutex.clone();
                std::thread::spawn(move || {
                    let _held = mutex.lock();
                    locked.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(300));
                })
            };
            holding.recv().unwrap();
            let options = fibra_runtime::ScopeOptions::new().timeout(Duration::from_millis(1));
            let cancelled = fibra_runtime::scope_with(options, |s| {
                s.spawn(move || {
                    let _unlocks = LockOnDrop(mutex);
                    fibra_runtime::sleep(Duration::from_secs(3600));
                });
                // Ready behind the unwinding fiber (how many are left then is timing's).
                let behind: Vec<_> = (0..2).map(|_| fibra_runtime::spawn_local(|| ())).collect();
                behind.into_iter().for_each(|fiber| fiber.join().unwrap());
            });
            assert!(
                cancelled.is_err(),
                "the scope was cancelled by its deadline"
            );
            holder.join().unwrap();
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    let warnings = lines_with(&stderr, "blocked for");
    assert_eq!(warnings.len(), 1, "stderr:\n{stderr}");
    let warning = warnings[0];
    assert!(
        warning.contains("is unwinding and waits for mutex"),
        "{warning}"
    );
    assert!(
        warning.contains("ready fibers of this worker cannot run"),
        "{warning}"
    );
}

#[test]
fn a_blocking_task_on_the_driver_thread_is_reported_with_the_stalls_length() {
    const TEST: &str = "a_blocking_task_on_the_driver_thread_is_reported_with_the_stalls_length";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            // A tokio task spawned in a fiber runs on the driver thread.
            tokio::spawn(async { std::thread::sleep(Duration::from_millis(300)) });
            fibra_runtime::sleep(Duration::from_millis(400));
        });
        return;
    }
    let stderr = stderr_of(TEST, &[]);
    assert_eq!(
        lines_with(&stderr, "driver thread has been stalled").len(),
        1,
        "stderr:\n{stderr}"
    );
    let ended = lines_with(&stderr, "driver thread was stalled for");
    assert_eq!(ended.len(), 1, "stderr:\n{stderr}");
    let ms: u64 = ended[0]
        .split("stalled for ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no length in {:?}", ended[0]));
    assert!(ms >= 50, "at least the threshold: {}", ended[0]);
}

/// The runtime's monitor thread (the only one in a child process): its `/proc` directory,
/// looked for, from a fiber, until the new thread has named itself.
fn monitor_task() -> std::path::PathBuf {
    for _ in 0..10_000 {
        let tasks = std::fs::read_dir("/proc/self/task").expect("list this process's threads");
        let named = tasks
            .map(|task| task.expect("a thread's entry").path())
            .find(|task| {
                std::fs::read_to_string(task.join("comm"))
                    .is_ok_and(|comm| comm == "fibra-sysmon\n")
            });
        if let Some(task) = named {
            return task;
        }
        fibra_runtime::sleep(Duration::from_millis(1));
    }
    panic!("no thread named fibra-sysmon");
}

/// How often the runtime's monitor thread has been put on a CPU so far: the third field of
/// its `schedstat`.
fn monitor_runs(monitor: &std::path::Path) -> u64 {
    let stat = std::fs::read_to_string(monitor.join("schedstat")).expect("schedstat");
    let runs = stat.split_whitespace().nth(2).expect("a third field");
    runs.parse().expect("a count")
}

#[test]
fn the_monitor_waits_untimed_while_every_fiber_waits_for_a_timer() {
    const TEST: &str = "the_monitor_waits_untimed_while_every_fiber_waits_for_a_timer";
    if in_child(TEST) {
        runtime(2).block_on(|| {
            // With a 2 ms threshold a monitor that kept ticking would run every millisecond.
            let monitor = monitor_task();
            let before = monitor_runs(&monitor);
            fibra_runtime::sleep(Duration::from_millis(300));
            let runs = monitor_runs(&monitor) - before;
            assert!(
                runs < 30,
                "the monitor ran {runs} times while the only fiber slept"
            );
        });
        return;
    }
    stderr_of(TEST, &[("FIBRA_STUCK_MS", "2")]);
}

#[test]
fn the_dump_signal_prints_the_dump_on_stderr_and_the_program_goes_on() {
    const TEST: &str = "the_dump_signal_prints_the_dump_on_stderr_and_the_program_goes_on";
    if in_child(TEST) {
        runtime(2).block_on(|| {
            let (keep, wait) = std::sync::mpsc::channel::<()>();
            let parked = Builder::new()
                .name("dump-me")
                .spawn(move || fibra_runtime::blocking(move || wait.recv().unwrap_err()))
                .unwrap();
            fibra_testing::until_parked(parked.fiber());
            println!("ready");
            // Until the parent has seen the dump and closes our stdin.
            fibra_runtime::blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).unwrap();
            drop(keep);
            parked.join().unwrap();
        });
        return;
    }
    let mut child = spawn_child(TEST, &[("FIBRA_DUMP_SIGNAL", "SIGQUIT")]);
    let stderr = Arc::new(Mutex::new(String::new()));
    let collector = {
        let stderr = stderr.clone();
        let mut from_child = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0; 4096];
            while let Ok(read @ 1..) = from_child.read(&mut chunk) {
                stderr
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        })
    };
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    // The test harness's "test … ... " comes first on the line.
    let ready = stdout
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.ends_with("ready"));
    assert!(ready, "the child never got ready");
    let drain = std::thread::spawn(move || stdout.for_each(drop));
    // SAFETY: `kill` has no memory preconditions; the pid is our own live child's.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) }, 0);
    // A guard against hanging, not a timing assertion.
    let give_up = Instant::now() + Duration::from_secs(60);
    while !stderr.lock().unwrap().contains("\"dump-me\"") && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    collector.join().unwrap();
    drain.join().unwrap();
    let stderr = stderr.lock().unwrap().clone();
    assert!(status.success(), "child failed: {status:?}\n{stderr}");
    assert!(stderr.contains("fibra dump: "), "stderr:\n{stderr}");
    assert!(
        stderr.contains("\"dump-me\" [parked on blocking"),
        "stderr:\n{stderr}"
    );
}

#[test]
fn a_bad_dump_signal_is_reported_in_one_line_and_installs_nothing() {
    const TEST: &str = "a_bad_dump_signal_is_reported_in_one_line_and_installs_nothing";
    if in_child(TEST) {
        runtime(1).block_on(|| {
            // With no handler installed, the default action ends the process.
            // SAFETY: `raise` has no memory preconditions.
            unsafe { libc::raise(libc::SIGQUIT) };
        });
        return;
    }
    let output = run_child(TEST, &[("FIBRA_DUMP_SIGNAL", "SIGKILL")]);
    let stderr = assert_killed_by(&output, libc::SIGQUIT);
    let reports = lines_with(&stderr, "fibra:");
    assert_eq!(reports.len(), 1, "stderr:\n{stderr}");
    assert!(
        reports[0].contains("FIBRA_DUMP_SIGNAL=\"SIGKILL\""),
        "{}",
        reports[0]
    );
}
