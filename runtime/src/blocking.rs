//! Running blocking work off the workers.

use crate::block_on::block_on_as;
use crate::metrics::QueuedJob;
use crate::sched::with_worker;
use crate::wait::in_fiber;
use crate::wait::WaitKind;
use fibra_driver::spawn_blocking;
use std::panic;

/// Runs `f` on the blocking pool (tokio's `spawn_blocking` on the driver's runtime) and parks
/// the calling fiber until it returns; a panic in `f` resumes in the fiber. On a plain thread,
/// which may block anyway, `f` simply runs there.
///
/// A cancellation point: a caller already cancelled unwinds before `f` is queued. A
/// cancellation while waiting drops a job that has not started; one already running finishes
/// and its result is discarded.
///
/// ```
/// fibra::run(|| {
///     let on_a_worker = fibra::current_worker().is_some();
///     let in_the_pool = fibra::blocking(|| fibra::current_worker().is_none());
///     assert!(on_a_worker && in_the_pool);
/// });
/// ```
#[track_caller]
pub fn blocking<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let shared =
        with_worker(|local| local.map(|local| local.shared().clone())).filter(|_| in_fiber());
    let Some(shared) = shared else {
        return f();
    };
    // Before the job is queued: a pool thread may start it before a cancellation found only
    // afterwards could abort it.
    crate::cancel::check_current();
    let queued = QueuedJob::new(&shared.blocking);
    let job = spawn_blocking(&shared.tokio, move || {
        let _running = queued.start();
        f()
    });
    match block_on_as(WaitKind::Blocking, job) {
        Ok(value) => value,
        Err(payload) => panic::resume_unwind(payload),
    }
}
