//! After `block_on` returns, no worker or driver thread is alive and every fiber stack is
//! unmapped.
//! Alone in its binary so that no other test's threads change the count.

use fibra_runtime::{scope, Runtime};
use std::fs;
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn threads() -> usize {
    fs::read_dir("/proc/self/task").unwrap().count()
}

/// The thread count once it reaches `expected`, or after a generous while. A joined thread
/// has finished, but the kernel may still list it for a moment: `pthread_join` returns when
/// the thread's id is cleared, which comes before its task is reaped.
fn threads_settled_to(expected: usize) -> usize {
    let give_up = Instant::now() + Duration::from_secs(5);
    loop {
        let now = threads();
        if now == expected || Instant::now() >= give_up {
            return now;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The mappings of this process, as `(start, end)` ranges.
fn mappings() -> Vec<(usize, usize)> {
    fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next()?.split_once('-'))
        .map(|(start, end)| {
            (
                usize::from_str_radix(start, 16).unwrap(),
                usize::from_str_radix(end, 16).unwrap(),
            )
        })
        .collect()
}

#[test]
fn shutdown_joins_every_worker_and_unmaps_every_stack() {
    let before = threads();
    let stacks = Mutex::new(Vec::new());
    let runtime = Runtime::builder().workers(4).build().unwrap();
    assert_eq!(
        threads(),
        before + 5,
        "workers 1..4, the driver and the monitor start at build"
    );
    let stack_mappings = runtime.block_on(|| {
        let marker = 0u8;
        stacks.lock().unwrap().push(&marker as *const u8 as usize);
        // The blocking pool's threads are the driver's too.
        assert_eq!(fibra_runtime::blocking(|| 1), 1);
        scope(|s| {
            for _ in 0..1_000 {
                s.spawn(|| {
                    let marker = 0u8;
                    stacks.lock().unwrap().push(&marker as *const u8 as usize);
                    fibra_runtime::yield_now();
                });
            }
        });
        // The mappings the stacks live in, while they are still mapped. Compared as exact
        // ranges afterwards: a later allocation may reuse the addresses, not the ranges.
        let stacks = stacks.lock().unwrap();
        let mut ranges: Vec<(usize, usize)> = mappings()
            .into_iter()
            .filter(|&(start, end)| stacks.iter().any(|a| (start..end).contains(a)))
            .collect();
        ranges.sort();
        ranges
    });
    assert_eq!(
        threads_settled_to(before),
        before,
        "a worker, driver, monitor or blocking thread outlived the runtime"
    );
    assert_eq!(stacks.into_inner().unwrap().len(), 1_001);
    assert!(!stack_mappings.is_empty());
    let now = mappings();
    let still_mapped: Vec<_> = stack_mappings.iter().filter(|r| now.contains(r)).collect();
    assert!(
        still_mapped.is_empty(),
        "stack mappings still there: {still_mapped:x?}"
    );
}
