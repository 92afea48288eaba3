//! The errors of the dynamic `Select`'s non-blocking and timed forms.

use std::error::Error;
use std::fmt;

/// [`Select::try_select`](crate::Select::try_select) found no arm ready.
///
/// ```
/// let err = fibra::TrySelectError;
/// assert_eq!(err.to_string(), "no select arm was ready");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TrySelectError;

impl fmt::Display for TrySelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no select arm was ready")
    }
}

impl Error for TrySelectError {}

/// [`Select::select_timeout`](crate::Select::select_timeout) timed out.
///
/// ```
/// let err = fibra::SelectTimeoutError;
/// assert_eq!(err.to_string(), "timed out waiting on select");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SelectTimeoutError;

impl fmt::Display for SelectTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out waiting on select")
    }
}

impl Error for SelectTimeoutError {}
