//! What `#[fibra::main]` and `#[fibra::test]` expand to: the attribute macros stay a thin
//! rewrite, and the behaviour lives here, in ordinary code.

use crate::{CancelToken, Deadlock, Runtime, ScopeOptions};
use std::sync::mpsc;
use std::time::Duration;

/// How long a timed-out test may take to unwind before the process is ended for it: as long
/// as its timeout, within these bounds.
const UNWIND_GRACE: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(5));

fn runtime(workers: Option<usize>, deadlock: Option<Deadlock>) -> Runtime {
    let builder = match deadlock {
        Some(policy) => Runtime::builder().on_deadlock(policy),
        None => Runtime::builder(),
    };
    let builder = match workers {
        Some(workers) => builder.workers(workers),
        None => builder,
    };
    builder
        .build()
        .unwrap_or_else(|error| panic!("fibra: cannot start the runtime: {error}"))
}

/// `#[fibra::main]`: runs `body` as the main fiber.
pub fn main<T>(workers: Option<usize>, body: impl FnOnce() -> T + Send) -> T
where
    T: Send,
{
    runtime(workers, None).block_on(body)
}

/// `#[fibra::test]`: runs `body` as the main fiber, cancelled at `timeout` after printing a dump
/// of its fibers; a body that cannot be cancelled ends the process after a grace period. A
/// deadlock panics (unless `FIBRA_DEADLOCK` says otherwise).
pub fn test<T>(workers: Option<usize>, timeout: Duration, body: impl FnOnce() -> T + Send) -> T
where
    T: Send,
{
    let (finished, watched) = mpsc::channel::<()>();
    let name = std::thread::current().name().unwrap_or("test").to_owned();
    let grace = timeout.clamp(UNWIND_GRACE.0, UNWIND_GRACE.1);
    let deadlock = std::env::var_os("FIBRA_DEADLOCK")
        .is_none()
        .then_some(Deadlock::Panic);
    let runtime = runtime(workers, deadlock);
    let handle = runtime.handle();
    let token = CancelToken::new();
    let cancel = token.clone();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = watched.recv_timeout(timeout) {
            eprintln!(
                "fibra::test: `{name}` outlasted its timeout of {timeout:?}; cancelling it\n{}",
                handle.dump()
            );
            cancel.cancel();
        } else {
            return;
        }
        if let Err(mpsc::RecvTimeoutError::Timeout) = watched.recv_timeout(grace) {
            eprintln!(
                "fibra::test: `{name}` outlasted its timeout of {timeout:?} and could not be \
                 cancelled for {grace:?} (a call that blocks its thread?); ending the test \
                 process"
            );
            std::process::exit(101);
        }
    });
    let outcome =
        runtime.block_on(|| crate::scope_with(ScopeOptions::new().token(token), |_| body()));
    drop(finished);
    watchdog.join().expect("the test watchdog does not panic");
    match outcome {
        Ok(value) => value,
        Err(_) => {
            panic!("fibra::test: the test outlasted its timeout of {timeout:?} and was cancelled")
        }
    }
}
