//! Why a request got no response, by kind.

use std::fmt;
use std::io;

/// The kind of a failed request, as the summary counts them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection was refused.
    Refused,
    /// The connection was reset or closed in the middle of a response.
    Reset,
    /// The request took longer than its timeout.
    Timeout,
    /// The response was not valid HTTP/1.1.
    BadResponse,
    /// Any other failure (name lookup, TLS, local resources).
    Other,
}

impl ErrorKind {
    /// The name used in reports: `refused`, `reset`, `timeout`, `bad_response`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::BadResponse => "bad_response",
            ErrorKind::Other => "other",
        }
    }

    /// Classifies an I/O error.
    pub fn of(error: &io::Error) -> ErrorKind {
        use io::ErrorKind as E;
        match error.kind() {
            E::ConnectionRefused => ErrorKind::Refused,
            E::ConnectionReset
            | E::ConnectionAborted
            | E::BrokenPipe
            | E::UnexpectedEof
            | E::NotConnected => ErrorKind::Reset,
            E::TimedOut | E::WouldBlock => ErrorKind::Timeout,
            E::InvalidData => ErrorKind::BadResponse,
            _ => ErrorKind::Other,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A request that got no usable response.
#[derive(Debug)]
pub struct HttpError {
    kind: ErrorKind,
    error: io::Error,
}

impl HttpError {
    /// The kind, as counted in reports.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn bad_response(why: impl Into<String>) -> HttpError {
        HttpError {
            kind: ErrorKind::BadResponse,
            error: io::Error::new(io::ErrorKind::InvalidData, why.into()),
        }
    }

    pub(crate) fn timeout() -> HttpError {
        HttpError {
            kind: ErrorKind::Timeout,
            error: io::Error::new(io::ErrorKind::TimedOut, "request timed out"),
        }
    }
}

impl From<io::Error> for HttpError {
    fn from(error: io::Error) -> HttpError {
        HttpError {
            kind: ErrorKind::of(&error),
            error,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.error)
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
