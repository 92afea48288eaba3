//! `timeout`: a bound on a piece of fiber code.

use super::scope_with;
use crate::cancel::ScopeOptions;
use std::error::Error;
use std::fmt;
use std::time::Duration;

/// The error of [`timeout`]: the deadline passed first.
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
/// # Errors
///
/// [`Elapsed`] when the time ran out.
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
/// });
/// ```
#[track_caller]
pub fn timeout<T>(duration: Duration, f: impl FnOnce() -> T) -> Result<T, Elapsed> {
    scope_with(ScopeOptions::new().timeout(duration), |_| f()).map_err(|_| Elapsed(()))
}
