//! Helpers shared by the test crates (each uses a subset): programs of processes on runtimes
//! of a given size (with small stacks); the rest is in `fibra-testing`.
#![allow(dead_code)]

use fibra_process::{self as process, Inbox, Pid, Signal};
use fibra_runtime::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

/// Spawns a process that holds `held` until it ends, reports to `main` that it has started,
/// then receives forever, counting the messages it gets in `seen`.
pub(crate) fn spawn_parked(
    main: &Pid<()>,
    seen: &Arc<AtomicUsize>,
    held: impl Send + 'static,
) -> Pid<u8> {
    let (main, seen) = (main.clone(), seen.clone());
    process::spawn(move |inbox: Inbox<u8>| {
        let _held = held;
        main.send(());
        loop {
            if let Signal::Msg(_) = inbox.recv() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    })
}
