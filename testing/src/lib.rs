//! Test support shared by fibra's crates, for their tests only: runtimes of the worker counts
//! every scheduling-dependent rule is checked under, a drop counter, a guard that fails a
//! hanging scenario, running one test in a child copy of the test binary (for tests that must
//! crash, exit, or own the whole process), and temporary directories.

mod child;
mod hang_guard;
mod runtimes;
mod temp_dir;

pub use child::{
    assert_all_asleep_reported, assert_killed_by, assert_passed, in_child, is_child, run_child,
    run_child_within, spawn_child,
};
pub use hang_guard::bounded;
pub use runtimes::{
    cancel_after, let_others_run, on, on_each_worker_count, parked_wait, runtime, until_parked,
    WORKER_COUNTS,
};

use std::future::Future;
use std::task::{Context, Poll, Waker};
pub use temp_dir::TempDir;

use std::borrow::Borrow;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its drops in the counter it holds (borrowed or shared).
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let drops = AtomicUsize::new(0);
/// drop(fibra_testing::Counted(&drops));
/// assert_eq!(drops.load(Ordering::SeqCst), 1);
/// ```
#[derive(Debug)]
pub struct Counted<C: Borrow<AtomicUsize>>(pub C);

impl<C: Borrow<AtomicUsize>> Drop for Counted<C> {
    fn drop(&mut self) {
        self.0.borrow().fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `future` once with a waker that does nothing.
///
/// ```
/// assert!(fibra_testing::poll_once(&mut std::future::ready(3)).is_ready());
/// ```
pub fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// A tokio multi-thread runtime of two worker threads, for tests whose tokio tasks wait on
/// fibers or wake them.
///
/// ```
/// let tokio = fibra_testing::tokio_multi_thread();
/// assert_eq!(tokio.block_on(async { 7 }), 7);
/// ```
pub fn tokio_multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a tokio runtime for the test")
}

/// A waker whose last handle panics when it is dropped: a user's waker misbehaving where a
/// primitive drops it (a given-up or stale waiter's).
pub fn panics_on_drop() -> Waker {
    struct PanicsOnDrop;

    impl std::task::Wake for PanicsOnDrop {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a user waker's drop panicked");
        }
    }

    Waker::from(std::sync::Arc::new(PanicsOnDrop))
}
