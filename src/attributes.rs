//! What `#[fibra::main]` and `#[fibra::test]` expand to: the attribute macros stay a thin
//! rewrite, and the behaviour lives here, in ordinary code.

use crate::{CancelToken, Deadlock, Handle, Runtime, ScopeOptions};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a timed-out test may take to unwind before the process is ended for it: as long
/// as its timeout, within these bounds.
const UNWIND_GRACE: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(5));

fn runtime(workers: Option<usize>, deadlock: Option<Deadlock>) -> crate::RuntimeBuilder {
    let builder = match deadlock {
        Some(policy) => Runtime::builder().on_deadlock(policy),
        None => Runtime::builder(),
    };
    match workers {
        Some(workers) => builder.workers(workers),
        None => builder,
    }
}

fn build(builder: crate::RuntimeBuilder) -> Runtime {
    builder
        .build()
        .unwrap_or_else(|error| panic!("fibra: cannot start the runtime: {error}"))
}

/// `#[fibra::main]`: runs `body` as the main fiber.
pub fn main<T>(workers: Option<usize>, body: impl FnOnce() -> T) -> T {
    build(runtime(workers, None)).block_on(body)
}

/// `#[fibra::test]`: runs `body` as the main fiber, cancelled at `timeout` after printing a dump
/// of its fibers; fibers it detached are waited for within the same timeout, then cancelled; a
/// test that cannot be cancelled ends the process after a grace period. A deadlock panics
/// (unless `FIBRA_DEADLOCK` says otherwise).
pub fn test<T>(workers: Option<usize>, timeout: Duration, body: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let (finished, watched) = mpsc::channel::<()>();
    let name = std::thread::current().name().unwrap_or("test").to_owned();
    let grace = timeout.clamp(UNWIND_GRACE.0, UNWIND_GRACE.1);
    let deadlock = std::env::var_os("FIBRA_DEADLOCK")
        .is_none()
        .then_some(Deadlock::Panic);
    // Detached fibers still running when the test's own wait for them ends are cancelled by
    // the runtime's end, which waits `grace` before and `grace` after cancelling them.
    let runtime = build(runtime(workers, deadlock).shutdown_timeout(grace));
    let handle = runtime.handle();
    let token = CancelToken::new();
    let cancel = token.clone();
    let watchdog = std::thread::spawn(move || {
        fibra_runtime::__as_watchdog(|| watch(&name, timeout, grace, &watched, &handle, &cancel))
    });
    let (outcome, detached_left) = runtime.block_on(|| {
        // The token takes no hold: a deadlock in the test is found (and panics) while the
        // watchdog waits, rather than at the timeout.
        let options = ScopeOptions::new().__harness_token(token);
        let outcome = crate::scope_with(options, |_| body());
        let left = timeout.saturating_sub(started.elapsed());
        (outcome, !Handle::current().drain_detached_timeout(left))
    });
    drop(finished);
    watchdog.join().expect("the test watchdog does not panic");
    match outcome {
        Ok(_) if detached_left => panic!(
            "fibra::test: fibers the test detached outlasted its timeout of {timeout:?} and \
             were cancelled"
        ),
        Ok(value) => value,
        Err(_) => {
            panic!("fibra::test: the test outlasted its timeout of {timeout:?} and was cancelled")
        }
    }
}

/// The watchdog of test `name`: cancels it at its timeout, and ends the process if it cannot
/// be cancelled then; returns once `watched` says the test has finished.
fn watch(
    name: &str,
    timeout: Duration,
    grace: Duration,
    watched: &mpsc::Receiver<()>,
    handle: &Handle,
    cancel: &CancelToken,
) {
    if let Err(mpsc::RecvTimeoutError::Timeout) = watched.recv_timeout(timeout) {
        eprintln!(
            "fibra::test: `{name}` outlasted its timeout of {timeout:?}; cancelling it\n{}",
            handle.dump()
        );
        cancel.cancel();
    } else {
        return;
    }
    // The body's unwinding, then the runtime's wait for detached fibers and theirs.
    let unwinding = grace * 3;
    if let Err(mpsc::RecvTimeoutError::Timeout) = watched.recv_timeout(unwinding) {
        eprintln!(
            "fibra::test: `{name}` outlasted its timeout of {timeout:?} and its fibers \
             could not be cancelled for {unwinding:?} (a call that blocks its thread?); \
             ending the test process"
        );
        std::process::exit(101);
    }
}
