//! Helpers shared by the test crates (each uses a subset): programs of processes on runtimes
//! of a given size (with small stacks); the rest is in `fibra-testing`.
#![allow(dead_code)]

use fibra_process::{self as process, Inbox};
use fibra_runtime::Runtime;

/// A fresh runtime with `workers` workers and small stacks.
pub(crate) fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .stack_size(64 * 1024)
        .build()
        .unwrap()
}

/// Runs `main` as the main process of a program on a fresh runtime with `workers` workers
/// and returns the program's exit status.
pub(crate) fn program<M: Send + 'static>(
    workers: usize,
    main: impl FnOnce(Inbox<M>) + Send + 'static,
) -> i32 {
    runtime(workers).block_on(move || process::run(main))
}
