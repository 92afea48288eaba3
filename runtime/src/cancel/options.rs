//! What `scope_with` is cancelled by, and what it returns when it is.

use super::CancelToken;
use crate::wait::Deadline;
use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Why a scope was cancelled: what [`Cancelled::cause`] and, inside a cancelled fiber,
/// [`check_cancel`](crate::check_cancel) report.
///
/// ```
/// use fibra::{CancelCause, CancelToken, ScopeOptions};
/// use std::time::Duration;
///
/// fibra::run(|| {
///     let token = CancelToken::new();
///     token.cancel();
///     let by_token = fibra::scope_with(ScopeOptions::new().token(token), |_| fibra::park());
///     assert_eq!(by_token.unwrap_err().cause(), CancelCause::Token);
///
///     let soon = ScopeOptions::new().timeout(Duration::from_millis(1));
///     let by_time = fibra::scope_with(soon, |_| fibra::sleep(Duration::from_secs(3600)));
///     assert_eq!(by_time.unwrap_err().cause(), CancelCause::Deadline);
/// });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelCause {
    /// Its [`CancelToken`] was cancelled.
    Token,
    /// Its deadline (or timeout) passed.
    Deadline,
    /// A child panicked, or a helper such as [`race`](crate::race()) ended it.
    Internal,
    /// The runtime is shutting down and unwinds every fiber still running.
    Shutdown,
}

/// A `scope_with` ended by its token or deadline: the error value of
/// [`scope_with`](crate::scope_with).
///
/// ```
/// let outcome = fibra::run(|| {
///     fibra::scope_with(
///         fibra::ScopeOptions::new().timeout(std::time::Duration::from_millis(1)),
///         |_| fibra::sleep(std::time::Duration::from_secs(3600)),
///     )
/// });
/// let cancelled = outcome.unwrap_err();
/// assert_eq!(cancelled.cause(), fibra::CancelCause::Deadline);
/// assert_eq!(cancelled.to_string(), "scope cancelled: its deadline passed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled {
    pub(crate) cause: CancelCause,
}

impl Cancelled {
    /// What fired: the scope's token or its deadline.
    ///
    /// ```
    /// use fibra::{CancelCause, CancelToken, ScopeOptions};
    ///
    /// let token = CancelToken::new();
    /// token.cancel();
    /// let options = ScopeOptions::new().token(token);
    /// let outcome = fibra::run(move || fibra::scope_with(options, |_| ()));
    /// assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
    /// ```
    pub fn cause(&self) -> CancelCause {
        self.cause
    }
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.cause {
            CancelCause::Token => "scope cancelled: its token was cancelled",
            CancelCause::Deadline => "scope cancelled: its deadline passed",
            CancelCause::Internal => "scope cancelled",
            CancelCause::Shutdown => "cancelled: the runtime is shutting down",
        })
    }
}

impl Error for Cancelled {}

/// What cancels a [`scope_with`](crate::scope_with): a token, a deadline, a timeout (the
/// earlier of deadline and timeout counts).
///
/// ```
/// let token = fibra::CancelToken::new();
/// let options = fibra::ScopeOptions::new()
///     .token(token.clone())
///     .timeout(std::time::Duration::from_secs(5));
/// token.cancel();
/// let outcome = fibra::run(|| fibra::scope_with(options, |_| fibra::park()));
/// assert_eq!(outcome.unwrap_err().cause(), fibra::CancelCause::Token);
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "options do nothing until given to scope_with"]
pub struct ScopeOptions {
    pub(crate) token: Option<CancelToken>,
    pub(crate) deadline: Deadline,
    /// Whether the token, while it may fire, takes no hold on the runtime.
    pub(crate) token_unheld: bool,
}

impl ScopeOptions {
    /// No token, no deadline: `scope_with` with these options is [`scope`](crate::scope()).
    ///
    /// ```
    /// let outcome = fibra::run(|| {
    ///     fibra::scope_with(fibra::ScopeOptions::new(), |s| s.spawn(|| 7).join().unwrap())
    /// });
    /// assert_eq!(outcome.unwrap(), 7);
    /// ```
    pub fn new() -> ScopeOptions {
        ScopeOptions::default()
    }

    /// Cancels the scope when `token` is cancelled (tokio tasks may share the token).
    ///
    /// ```
    /// use fibra::{CancelToken, ScopeOptions};
    ///
    /// fibra::run(|| {
    ///     let token = CancelToken::new();
    ///     let stopper = token.clone();
    ///     let outcome = fibra::scope_with(ScopeOptions::new().token(token), |s| {
    ///         s.spawn(move || stopper.cancel());
    ///         fibra::park(); // a cancellation point: the body unwinds from here
    ///     });
    ///     assert!(outcome.is_err());
    /// });
    /// ```
    pub fn token(mut self, token: CancelToken) -> ScopeOptions {
        self.token = Some(token);
        self
    }

    /// [`token`](Self::token) for a test harness's own timeout: the token takes no hold on the
    /// runtime, so that a deadlock in the test is found while the harness waits to cancel it.
    #[doc(hidden)]
    pub fn __harness_token(self, token: CancelToken) -> ScopeOptions {
        ScopeOptions {
            token_unheld: true,
            ..self.token(token)
        }
    }

    /// Cancels the scope at `deadline` (an [`Instant`](std::time::Instant) or a [`Deadline`](crate::wait::Deadline)).
    ///
    /// ```
    /// use fibra::{CancelCause, ScopeOptions};
    /// use std::time::{Duration, Instant};
    ///
    /// fibra::run(|| {
    ///     let options = ScopeOptions::new().deadline(Instant::now() + Duration::from_millis(1));
    ///     let outcome = fibra::scope_with(options, |_| fibra::sleep(Duration::from_secs(3600)));
    ///     assert_eq!(outcome.unwrap_err().cause(), CancelCause::Deadline);
    /// });
    /// ```
    pub fn deadline(mut self, deadline: impl Into<Deadline>) -> ScopeOptions {
        self.deadline = self.deadline.min(deadline.into());
        self
    }

    /// Cancels the scope once `timeout` has passed from now (from when the options are made,
    /// not from when the scope starts).
    ///
    /// ```
    /// use fibra::ScopeOptions;
    /// use std::time::Duration;
    ///
    /// fibra::run(|| {
    ///     let options = ScopeOptions::new().timeout(Duration::from_secs(60));
    ///     let quick = fibra::scope_with(options, |s| s.spawn(|| 2 + 2).join().unwrap());
    ///     assert_eq!(quick.unwrap(), 4);
    /// });
    /// ```
    pub fn timeout(self, timeout: Duration) -> ScopeOptions {
        self.deadline(Deadline::after(timeout))
    }
}
