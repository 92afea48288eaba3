//! After `block_on` returns, no worker or driver thread is alive and every fiber stack is
//! unmapped.
//! Alone in its binary so that no other test's threads change the count.

use fibra_runtime::{scope, Runtime};
use std::fs;
use std::sync::Mutex;

fn threads() -> usize {
    fs::read_dir("/proc/self/task").unwrap().count()
}

/// Whether `address` lies inside any mapping of this process.
fn mapped(address: usize) -> bool {
    fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next()?.split_once('-'))
        .any(|(start, end)| {
            let start = usize::from_str_radix(start, 16).unwrap();
            let end = usize::from_str_radix(end, 16).unwrap();
            (start..end).contains(&address)
        })
}

#[test]
fn shutdown_joins_every_worker_and_unmaps_every_stack() {
    let before = threads();
    let stacks = Mutex::new(Vec::new());
    let runtime = Runtime::builder().workers(4).build().unwrap();
    assert_eq!(
        threads(),
        before + 4,
        "workers 1..4 and the driver start at build"
    );
    runtime.block_on(|| {
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
    });
    assert_eq!(
        threads(),
        before,
        "a worker, driver or blocking thread outlived the runtime"
    );
    let stacks = stacks.into_inner().unwrap();
    assert_eq!(stacks.len(), 1_001);
    let still_mapped: Vec<_> = stacks.iter().filter(|&&a| mapped(a)).collect();
    assert!(
        still_mapped.is_empty(),
        "{} stacks still mapped",
        still_mapped.len()
    );
}
