//! Jobs on the driver's blocking pool.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::runtime::Handle;

/// A job running (or queued) on the blocking pool of the driver `handle`: a future of what the
/// job returned, or of its panic payload.
///
/// Dropping it before the job has started drops the job; a job already running runs to its
/// end and its result is discarded.
///
/// ```
/// let mut driver = fibra_driver::Driver::start(2).unwrap();
/// let job = fibra_driver::spawn_blocking(driver.handle(), || 6 * 7);
/// assert_eq!(driver.handle().block_on(job).unwrap(), 42);
/// driver.shut_down();
/// ```
#[derive(Debug)]
#[must_use = "a blocking job's result is only had by polling it"]
pub struct BlockingJob<T>(tokio::task::JoinHandle<T>);

/// Runs `f` on the blocking pool of the driver `handle`.
///
/// ```
/// let mut driver = fibra_driver::Driver::start(1).unwrap();
/// let caller = std::thread::current().id();
/// let job = fibra_driver::spawn_blocking(driver.handle(), || std::thread::current().id());
/// // The job ran on a pool thread, not on the caller's.
/// assert_ne!(driver.handle().block_on(job).unwrap(), caller);
/// driver.shut_down();
/// ```
pub fn spawn_blocking<F, T>(handle: &Handle, f: F) -> BlockingJob<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    BlockingJob(handle.spawn_blocking(f))
}

impl<T> Future for BlockingJob<T> {
    type Output = std::thread::Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|outcome| match outcome {
            Ok(value) => Ok(value),
            Err(error) if error.is_panic() => Err(error.into_panic()),
            // Only shutting the driver down cancels a job we still wait for.
            Err(error) => panic!("fibra: the blocking pool dropped a job: {error}"),
        })
    }
}

impl<T> Drop for BlockingJob<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
