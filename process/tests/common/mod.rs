//! Helpers shared by the test crates (each uses a subset): programs of processes on runtimes
//! of a given size, a drop counter, and running a test's part in a child copy of the test
//! binary, checked from outside.
#![allow(dead_code)]

use fibra_process::{self as process, Inbox};
use fibra_runtime::Runtime;
use std::env;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The worker counts that tests whose outcome could depend on scheduling run under.
pub const WORKERS: [usize; 3] = [1, 2, 4];

/// A fresh runtime with `workers` workers and small stacks.
pub fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .stack_size(64 * 1024)
        .build()
        .unwrap()
}

/// Runs `main` as the main process of a program on a fresh runtime with `workers` workers
/// and returns the program's exit status.
pub fn program<M: Send + 'static>(
    workers: usize,
    main: impl FnOnce(Inbox<M>) + Send + 'static,
) -> i32 {
    runtime(workers).block_on(move || process::run(main))
}

/// Counts its drops.
pub struct Counted(pub Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

const CHILD: &str = "FIBRA_PROCESS_TEST_CHILD";

/// Whether this OS process is the child of `test`, which then does the part checked from
/// outside.
pub fn in_child(test: &str) -> bool {
    env::var(CHILD).is_ok_and(|role| role == test)
}

/// Runs `test` alone in a child copy of this test binary.
pub fn run_child(test: &str) -> Output {
    Command::new(env::current_exe().expect("test binary path"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .expect("spawning the test binary")
}
