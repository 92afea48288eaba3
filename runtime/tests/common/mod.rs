//! Helpers shared by the test crates (each uses a different subset): runtimes of a given size,
//! a drop counter, and running a test's crashing or environment-dependent part in a child
//! process, where the test binary re-runs itself with one test selected and the parent checks
//! the child from outside.
#![allow(dead_code)]

use fibra_runtime::Runtime;
use std::env;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh runtime with `workers` workers.
pub fn runtime(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

/// Runs `f` as the main fiber of a fresh runtime with `workers` workers.
pub fn on<T>(workers: usize, f: impl FnOnce() -> T) -> T {
    runtime(workers).block_on(f)
}

/// Counts its drops.
pub struct Counted<'a>(pub &'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

const CHILD: &str = "FIBRA_TEST_CHILD";

/// Whether this process is the child of `test`, which then does the part checked from outside.
/// A child never writes a core file.
pub fn in_child(test: &str) -> bool {
    let child = env::var(CHILD).is_ok_and(|role| role == test);
    if child {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `none` is a valid rlimit; setting it only affects this process.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
    }
    child
}

/// Runs `test` alone in a child copy of this test binary, with `vars` added to its environment.
pub fn run_child(test: &str, vars: &[(&str, &str)]) -> Output {
    Command::new(env::current_exe().expect("test binary path"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .envs(vars.iter().copied())
        .output()
        .expect("spawning the test binary")
}
