//! Runtime metrics: exact counts for workloads whose every scheduling step is known.

use fibra_runtime::{Handle, RuntimeMetrics, WorkerMetrics};
use fibra_testing::{runtime, until_parked};
use std::time::Duration;

const CHILDREN: u64 = 10;

fn metrics() -> RuntimeMetrics {
    Handle::current().metrics()
}

/// Sleeps 5 ms at a time until worker 0 went to sleep during one of the sleeps, and returns its
/// counts from before and after that sleep; `None` after 100 tries. A loaded machine can keep
/// an idle worker spinning through a short sleep (its spin runs by the wall clock).
fn sleep_until_the_worker_sleeps() -> Option<(WorkerMetrics, WorkerMetrics)> {
    (0..100).find_map(|_| {
        let before = metrics().workers[0].clone();
        fibra_runtime::sleep(Duration::from_millis(5));
        let after = metrics().workers[0].clone();
        (after.idle_sleeps > before.idle_sleeps).then_some((before, after))
    })
}

#[test]
fn spawning_and_joining_on_one_worker_counts_every_fiber_slice_park_and_stack() {
    runtime(1).block_on(|| {
        let children: Vec<_> = (0..CHILDREN).map(|_| fibra_runtime::spawn(|| ())).collect();
        for child in children {
            child.join().unwrap();
        }
        let metrics = metrics();
        assert_eq!(metrics.spawned, CHILDREN + 1, "the children and main");
        assert_eq!(metrics.finished, CHILDREN);
        assert_eq!(metrics.live, 1);
        let worker = &metrics.workers[0];
        // Main parks once, on the first join; the whole batch of children runs before main
        // is resumed, so the later joins find their child finished.
        assert_eq!(worker.parks, 1);
        assert_eq!(
            worker.slices,
            1 + CHILDREN + 1,
            "main, each child, main again"
        );
        assert_eq!(worker.steals, 0);
        assert_eq!(
            worker.inbox_wakes, 0,
            "every wake came from the worker itself"
        );
        assert_eq!(worker.idle_sleeps, 0);
        // Main's stack is in use; the children, one after another, reused one stack.
        assert_eq!(metrics.stacks.in_use, 1);
        assert_eq!(metrics.stacks.warm, 1);
        assert_eq!(metrics.stacks.committed_bytes, (8 << 20) + (1 << 20));
        assert_eq!(metrics.driver.timers_pending, 0);
    });
}

#[test]
fn a_worker_going_idle_keeps_no_batch_of_stacks_past_the_warm_bound() {
    let runtime = fibra_runtime::Runtime::builder()
        .workers(1)
        .warm_stacks(2)
        .build()
        .unwrap();
    // Enough past the warm bound for a worker going idle to give them back at once.
    const BURST: u64 = 100;
    runtime.block_on(|| {
        // All started before any ends: each yields once after its start.
        let burst: Vec<_> = (0..BURST)
            .map(|_| fibra_runtime::spawn(fibra_runtime::yield_now))
            .collect();
        burst.into_iter().for_each(|child| child.join().unwrap());
        assert!(
            sleep_until_the_worker_sleeps().is_some(),
            "the worker idled"
        );
        assert_eq!(metrics().stacks.warm, 2, "only the warm ones kept");
    });
}

#[test]
fn a_wake_from_the_driver_comes_through_the_inbox_while_the_worker_sleeps() {
    runtime(1).block_on(|| {
        let (before, after) = sleep_until_the_worker_sleeps().expect("the worker slept meanwhile");
        assert_eq!(
            after.inbox_wakes - before.inbox_wakes,
            1,
            "the timer's wake"
        );
        assert_eq!(after.parks - before.parks, 1);
    });
}

#[test]
fn pending_timers_and_blocking_jobs_are_counted_while_they_wait() {
    runtime(2).block_on(|| {
        let sleeper = fibra_runtime::spawn(|| fibra_runtime::sleep(Duration::from_secs(3600)));
        until_parked(sleeper.fiber());
        assert_eq!(metrics().driver.timers_pending, 1);
        let (started, wait) = std::sync::mpsc::channel();
        let (finish, finished) = std::sync::mpsc::channel::<()>();
        let job = fibra_runtime::spawn(move || {
            fibra_runtime::blocking(move || {
                started.send(()).unwrap();
                finished.recv().unwrap();
            })
        });
        fibra_runtime::blocking(move || wait.recv().unwrap());
        let driver = metrics().driver;
        assert_eq!((driver.blocking_queued, driver.blocking_running), (0, 1));
        finish.send(()).unwrap();
        job.join().unwrap();
        let driver = metrics().driver;
        assert_eq!((driver.blocking_queued, driver.blocking_running), (0, 0));
        // The join sees the job's result as soon as it is written; its worker counts the
        // fiber finished once the fiber has returned, which may come a moment later.
        let mut turns = 0;
        while metrics().live != 2 {
            turns += 1;
            assert!(
                turns < 100_000,
                "main and the sleeper: {:?}",
                metrics().live
            );
            fibra_runtime::yield_now();
        }
    });
}

#[test]
fn fibers_spawned_from_a_plain_thread_count_too() {
    let runtime = runtime(1);
    let handle = runtime.handle();
    let children = std::thread::spawn(move || {
        (0..CHILDREN)
            .map(|_| handle.spawn(|| ()))
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    assert_eq!(runtime.metrics().spawned, CHILDREN);
    runtime.block_on(move || {
        children.into_iter().for_each(|child| child.join().unwrap());
        let metrics = metrics();
        assert_eq!(metrics.spawned, CHILDREN + 1);
        assert_eq!((metrics.finished, metrics.live), (CHILDREN, 1));
        assert_eq!(
            metrics.workers[0].steals, 0,
            "taking from the injector is no steal"
        );
    });
}
