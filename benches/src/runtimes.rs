//! How each system's runtime is set up, the same way for every round and every bench.
//!
//! fibra and tokio get a fresh runtime per round, rayon a fresh pool (built outside the timed
//! region); `may` has one process-wide scheduler, configured once at start-up with
//! [`MAY_WORKERS`] workers. The code under measurement always runs on a worker of its own runtime
//! (a fibra fiber, a tokio task, a `may` coroutine, a rayon pool thread), so no system gets the
//! calling thread as an extra worker.

use std::future::Future;

/// Worker threads of `may`'s process-wide scheduler.
pub const MAY_WORKERS: usize = 2;

/// Configures `may`'s scheduler; must run before the first coroutine is spawned.
pub fn init_may() {
    may::config().set_workers(MAY_WORKERS);
}

/// A fibra runtime with `workers` workers (worker 0 is the thread that calls `block_on`).
pub fn fibra(workers: usize) -> fibra::Runtime {
    fibra::Runtime::builder()
        .workers(workers)
        .build()
        .expect("build the fibra runtime")
}

/// A tokio multi-thread runtime with `workers` worker threads.
pub fn tokio_multi(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .build()
        .expect("build the tokio runtime")
}

/// A tokio multi-thread runtime with `workers` worker threads and its timer enabled.
pub fn tokio_multi_timed(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("build the tokio runtime")
}

/// A tokio multi-thread runtime with `workers` worker threads and its reactor enabled.
pub fn tokio_multi_io(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .expect("build the tokio runtime")
}

/// A tokio current-thread runtime (the calling thread is its only worker).
pub fn tokio_current() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("build the tokio runtime")
}

/// A rayon thread pool with `threads` threads.
pub fn rayon(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("build the rayon pool")
}

/// Runs `future` as a task on one of `runtime`'s workers and waits for its output.
pub fn tokio_on_worker<F>(runtime: &tokio::runtime::Runtime, future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let task = runtime.spawn(future);
    runtime.block_on(task).expect("tokio task panicked")
}
