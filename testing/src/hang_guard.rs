//! Failing a test whose scenario hangs, instead of hanging the test run.

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` on a thread of its own and returns its value (re-raising its panic), or panics if
/// it has not returned within `limit`: for a scenario whose regression is a hang, so that it
/// fails the test instead. The limit is a hang guard, never a timing assertion: choose it far
/// above what the scenario needs on a loaded machine. A scenario that hangs is left running.
///
/// ```
/// let value = fibra_testing::bounded(std::time::Duration::from_secs(60), || 6 * 7);
/// assert_eq!(value, 42);
/// ```
#[track_caller]
pub fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, outcome) = mpsc::channel();
    thread::Builder::new()
        .name("bounded scenario".to_owned())
        .spawn(move || {
            // The receiver is gone only after the limit passed, when nobody wants the value.
            let _ = done.send(panic::catch_unwind(AssertUnwindSafe(f)));
        })
        .expect("spawning a scenario's thread");
    match outcome.recv_timeout(limit) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("the scenario hung: it did not finish within {limit:?}"),
    }
}
