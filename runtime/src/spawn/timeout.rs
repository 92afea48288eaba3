//! `timeout`: a bound on a piece of fiber code.

use super::scope::run_scope;
use crate::cancel::ScopeOptions;
use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The error of [`timeout`]: the deadline passed first, and the closure was unwound.
///
/// ```
/// use std::time::Duration;
///
/// fibra::run(|| {
///     let hour = Duration::from_secs(3600);
///     let outcome = fibra::timeout(Duration::from_millis(1), || fibra::sleep(hour));
///     let elapsed: fibra::Elapsed = outcome.unwrap_err();
///     assert_eq!(elapsed.to_string(), "deadline has elapsed");
/// });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl Error for Elapsed {}

/// Runs `f` in the calling fiber, cancelling it (it unwinds at its next cancellation point)
/// if it has not finished after `duration`.
///
/// A value `f` returns is returned, even when `duration` passed before it got there: code that
/// reaches no cancellation point after the deadline runs to its end, and its value is not
/// thrown away (as tokio's `timeout` returns a value that is ready). Only an `f` that was
/// unwound by the deadline yields [`Elapsed`].
///
/// # Errors
///
/// [`Elapsed`] when the time ran out before `f` returned.
///
/// # Panics
///
/// Outside a fiber; with `f`'s panic.
///
/// ```
/// use std::time::Duration;
///
/// fibra::run(|| {
///     let quick = fibra::timeout(Duration::from_secs(5), || 1);
///     assert_eq!(quick, Ok(1));
///     let slow = fibra::timeout(Duration::from_millis(1), || fibra::sleep(Duration::from_secs(3600)));
///     assert_eq!(slow.unwrap_err().to_string(), "deadline has elapsed");
///     // No cancellation point after the deadline: `f` finishes, and its value is kept.
///     let late = fibra::timeout(Duration::from_millis(1), || {
///         while !fibra::is_cancelled() {
///             std::hint::spin_loop();
///         }
///         "done"
///     });
///     assert_eq!(late, Ok("done"));
/// });
/// ```
#[track_caller]
pub fn timeout<T>(duration: Duration, f: impl FnOnce() -> T) -> Result<T, Elapsed> {
    let mut value = None;
    // The scope reports its deadline even when the body got to its end; what decides here is
    // whether `f` returned.
    let _ = run_scope(
        "fibra::timeout",
        Some(ScopeOptions::new().timeout(duration)),
        |_| value = Some(f()),
    );
    value.ok_or(Elapsed(()))
}
