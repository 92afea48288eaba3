//! `TaskTimer` outside every runtime: its timers share the process's fallback driver instead of
//! starting a thread each. Alone in its test binary, so no other test's threads come and go
//! while it counts.

use fibra_runtime::wait::TaskTimer;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| tasks.count())
        .unwrap_or(0)
}

#[test]
fn pending_timers_outside_any_runtime_start_no_thread_each() {
    if !std::path::Path::new("/proc/self/task").exists() {
        eprintln!("skipped: no /proc/self/task to count threads with");
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(3600);
    let before = threads();
    let mut timers: Vec<TaskTimer> = (0..64).map(|_| TaskTimer::at(deadline)).collect();
    let mut cx = Context::from_waker(Waker::noop());
    for timer in &mut timers {
        assert_eq!(Pin::new(timer).poll(&mut cx), Poll::Pending);
    }
    // The fallback driver's thread, started by the first timer.
    assert!(
        threads() <= before + 1,
        "{} threads for 64 pending timers (from {before})",
        threads()
    );

    // And they fire: one due now wakes its task through the same driver.
    let start = Instant::now();
    futures::executor::block_on(TaskTimer::at(start + Duration::from_millis(2)));
    assert!(Instant::now() >= start + Duration::from_millis(2));
}
