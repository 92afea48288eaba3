//! Why a join has no value.

use std::any::Any;
use std::error::Error;
use std::fmt;

/// The fiber did not return a value: it panicked ([`is_panic`](Self::is_panic)), or it was
/// cancelled ([`is_cancelled`](Self::is_cancelled)) — by
/// [`JoinHandle::abort`](crate::JoinHandle::abort), by a
/// [`CancelGroup`](crate::CancelGroup) it belongs to, by its scope's
/// [`CancelToken`](crate::CancelToken) or deadline (see [`ScopeOptions`](crate::ScopeOptions)),
/// or by its runtime's shutdown before it finished. See
/// [the cancellation guide](../fibra/guide/cancellation/index.html) for which one applies when.
///
/// ```
/// fibra::run(|| {
///     let error = fibra::spawn(|| panic!("boom")).join().unwrap_err();
///     assert!(error.is_panic());
///     assert_eq!(error.to_string(), "fiber panicked: boom");
///     let payload = error.into_panic();
///     assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
/// });
/// ```
pub struct JoinError {
    repr: Repr,
}

enum Repr {
    Panicked(Box<dyn Any + Send + 'static>),
    Cancelled,
}

impl JoinError {
    pub(crate) fn panicked(payload: Box<dyn Any + Send + 'static>) -> JoinError {
        JoinError {
            repr: Repr::Panicked(payload),
        }
    }

    pub(crate) fn cancelled() -> JoinError {
        JoinError {
            repr: Repr::Cancelled,
        }
    }

    /// Whether the fiber panicked.
    ///
    /// ```
    /// fibra::run(|| {
    ///     assert!(fibra::spawn(|| panic!()).join().unwrap_err().is_panic());
    /// });
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panicked(_))
    }

    /// Whether the fiber was cancelled before it could finish.
    ///
    /// ```
    /// fibra::run(|| {
    ///     assert!(!fibra::spawn(|| panic!()).join().unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// The panic payload, to re-raise with [`std::panic::resume_unwind`].
    ///
    /// # Panics
    ///
    /// If the fiber was cancelled rather than panicking.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let payload = fibra::spawn(|| panic!("{}", 7)).join().unwrap_err().into_panic();
    ///     assert_eq!(payload.downcast_ref::<String>().map(String::as_str), Some("7"));
    /// });
    /// ```
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("JoinError::into_panic called on a cancelled fiber's error")
    }

    /// The panic payload, or the error itself if the fiber was cancelled.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let error = fibra::spawn(|| panic!()).join().unwrap_err();
    ///     assert!(error.try_into_panic().is_ok());
    /// });
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panicked(payload) => Ok(payload),
            Repr::Cancelled => Err(self),
        }
    }
}

/// The message of a panic payload, when it has one.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked(payload) => match panic_message(payload.as_ref()) {
                Some(message) => write!(f, "fiber panicked: {message}"),
                None => f.write_str("fiber panicked"),
            },
            Repr::Cancelled => f.write_str("fiber was cancelled"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Panicked(payload) => f
                .debug_tuple("JoinError::Panicked")
                .field(&panic_message(payload.as_ref()).unwrap_or("<non-string payload>"))
                .finish(),
            Repr::Cancelled => f.write_str("JoinError::Cancelled"),
        }
    }
}

impl Error for JoinError {}
