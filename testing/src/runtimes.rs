//! Runtimes of a given size for tests.

use fibra_runtime::{CancelToken, Cancelled, Fiber, FiberState, Runtime, ScopeOptions, WaitInfo};
use std::time::Duration;

/// The worker counts every rule whose outcome could depend on scheduling is checked under.
pub const WORKER_COUNTS: [usize; 3] = [1, 2, 4];

/// A fresh runtime with `workers` workers.
///
/// ```
/// assert_eq!(fibra_testing::runtime(2).handle().workers(), 2);
/// ```
pub fn runtime(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .build()
        .expect("building a test runtime")
}

/// Runs `f` as the main fiber of a fresh runtime with `workers` workers.
///
/// ```
/// assert_eq!(fibra_testing::on(1, || 7), 7);
/// ```
pub fn on<T>(workers: usize, f: impl FnOnce() -> T) -> T {
    runtime(workers).block_on(f)
}

/// Runs `f(workers)` as the main fiber of a fresh runtime for each of [`WORKER_COUNTS`].
///
/// ```
/// fibra_testing::on_each_worker_count(|workers| {
///     assert_eq!(fibra_runtime::Handle::current().workers(), workers);
/// });
/// ```
pub fn on_each_worker_count(f: impl Fn(usize)) {
    for workers in WORKER_COUNTS {
        on(workers, || f(workers));
    }
}

/// Lets the other ready fibers of this worker run (its ready queue is FIFO): afterwards, fibers
/// spawned locally before the call have run until they parked or finished.
///
/// ```
/// fibra_testing::on(1, || {
///     let child = fibra_runtime::spawn_local(|| ());
///     fibra_testing::let_others_run();
///     assert!(child.is_finished());
/// });
/// ```
pub fn let_others_run() {
    for _ in 0..8 {
        fibra_runtime::yield_now();
    }
}

/// Runs `f` in a `scope_with` whose token another fiber cancels after `delay`, so that a call
/// `f` parks in is cancelled while parked; the canceller is joined before this returns.
///
/// ```
/// fibra_testing::on(1, || {
///     let outcome = fibra_testing::cancel_after(std::time::Duration::from_millis(1), || {
///         fibra_runtime::sleep(std::time::Duration::from_secs(3600))
///     });
///     assert!(outcome.is_err());
/// });
/// ```
pub fn cancel_after<T>(delay: Duration, f: impl FnOnce() -> T) -> Result<T, Cancelled> {
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        fibra_runtime::spawn(move || {
            fibra_runtime::sleep(delay);
            token.cancel();
        })
    };
    let outcome = fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| f());
    canceller.join().expect("the canceller fiber ends");
    outcome
}

/// Yields until `fiber` is parked (as the runtime's dump sees it): a test's way to make sure a
/// wait has begun before it makes the wait end, without timing.
///
/// ```
/// fibra_testing::on(2, || {
///     let (tx, rx) = std::sync::mpsc::channel::<()>();
///     let parked = fibra_runtime::spawn(move || {
///         fibra_runtime::park();
///         drop(tx);
///     });
///     fibra_testing::until_parked(parked.fiber());
///     parked.fiber().unpark();
///     parked.join().unwrap();
///     assert!(rx.recv().is_err());
/// });
/// ```
pub fn until_parked(fiber: &Fiber) {
    let id = fiber.id().as_u64();
    while fibra_runtime::dump().fiber(id).map(|info| info.state) != Some(FiberState::Parked) {
        fibra_runtime::yield_now();
    }
}

/// Waits as [`until_parked`] does, then returns the wait the dump shows for `fiber`: what a
/// blocking call under test recorded.
///
/// # Panics
///
/// If the parked fiber shows no wait (its park recorded none), with the dump.
///
/// ```
/// fibra_testing::on(2, || {
///     let parked = fibra_runtime::spawn(fibra_runtime::park);
///     let wait = fibra_testing::parked_wait(parked.fiber());
///     assert_eq!(wait.kind, fibra_runtime::wait::WaitKind::Park);
///     parked.fiber().unpark();
///     parked.join().unwrap();
/// });
/// ```
pub fn parked_wait(fiber: &Fiber) -> WaitInfo {
    until_parked(fiber);
    let dump = fibra_runtime::dump();
    let info = dump.fiber(fiber.id().as_u64());
    match info.and_then(|info| info.wait.clone()) {
        Some(wait) => wait,
        None => panic!(
            "the parked fiber {} shows no wait:\n{dump}",
            fiber.id().as_u64()
        ),
    }
}
