//! Helpers shared by the test crates (each uses a different subset).
#![allow(dead_code)]

use std::future::Future;
use std::task::{Context, Poll, Waker};

/// The worker counts every multi-worker rule is checked under.
pub const WORKER_COUNTS: [usize; 3] = [1, 2, 4];

/// Runs `f` as the main fiber of a fresh runtime with `workers` workers.
pub fn on_workers<T>(workers: usize, f: impl FnOnce() -> T) -> T {
    fibra_runtime::Runtime::builder()
        .workers(workers)
        .build()
        .expect("build a runtime")
        .block_on(f)
}

/// Runs `f(workers)` in a fresh runtime for each of [`WORKER_COUNTS`].
pub fn on_each_worker_count(f: impl Fn(usize)) {
    for workers in WORKER_COUNTS {
        on_workers(workers, || f(workers));
    }
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Lets every other ready fiber on this worker run (FIFO ready queue): after this, fibers that
/// were spawned locally before the call have run until they parked or finished.
pub fn let_others_run() {
    for _ in 0..8 {
        fibra_runtime::yield_now();
    }
}
