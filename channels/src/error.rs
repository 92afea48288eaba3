//! The errors of channel operations. A send that fails gives its value back.

use std::error::Error;
use std::fmt;

/// A [`send`](crate::Writer::send) on a closed channel; the value comes back.
///
/// ```
/// let (tx, rx) = fibra::chan::bounded::<String>(1);
/// drop(rx);
/// let err = tx.send("lost?".to_string()).unwrap_err();
/// assert_eq!(err.into_inner(), "lost?");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let err = fibra::chan::SendError(7);
    /// assert_eq!(err.into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> Error for SendError<T> {}

/// A [`try_send`](crate::Writer::try_send) that could not complete at once; the value comes
/// back.
///
/// ```
/// use fibra::chan::TrySendError;
/// let (tx, rx) = fibra::chan::bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// rx.close();
/// assert_eq!(tx.try_send(3), Err(TrySendError::Closed(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// The buffer is full (or, for a rendezvous channel, no receiver is waiting).
    Full(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(fibra::chan::TrySendError::Full(4).into_inner(), 4);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(value) | TrySendError::Closed(value) => value,
        }
    }

    /// Whether the send failed because the channel was full.
    ///
    /// ```
    /// assert!(fibra::chan::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the send failed because the channel was closed.
    ///
    /// ```
    /// assert!(fibra::chan::TrySendError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }
}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(err: SendError<T>) -> Self {
        TrySendError::Closed(err.0)
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> Error for TrySendError<T> {}

/// A [`send_timeout`](crate::Writer::send_timeout) that did not complete; the value comes back.
///
/// ```
/// use std::time::Duration;
/// use fibra::chan::SendTimeoutError;
/// let (tx, _rx) = fibra::chan::bounded(0);
/// let err = tx.send_timeout(5, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(err, SendTimeoutError::Timeout(5));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SendTimeoutError<T> {
    /// No room (or no receiver) came before the deadline.
    Timeout(T),
    /// The channel is closed.
    Closed(T),
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(fibra::chan::SendTimeoutError::Timeout(1).into_inner(), 1);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(value) | SendTimeoutError::Closed(value) => value,
        }
    }

    /// Whether the send timed out.
    ///
    /// ```
    /// assert!(fibra::chan::SendTimeoutError::Timeout(()).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// Whether the send failed because the channel was closed.
    ///
    /// ```
    /// assert!(fibra::chan::SendTimeoutError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, SendTimeoutError::Closed(_))
    }
}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(err: SendError<T>) -> Self {
        SendTimeoutError::Closed(err.0)
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting on send operation"),
            SendTimeoutError::Closed(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> Error for SendTimeoutError<T> {}

/// A [`try_recv`](crate::Reader::try_recv) that found no value.
///
/// ```
/// use fibra::chan::TryRecvError;
/// let (tx, rx) = fibra::chan::bounded::<u8>(1);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryRecvError {
    /// Nothing is buffered and no sender is waiting.
    Empty,
    /// The channel is closed and drained.
    Closed,
}

impl TryRecvError {
    /// Whether the channel was empty (but open).
    ///
    /// ```
    /// assert!(fibra::chan::TryRecvError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// Whether the channel was closed and drained.
    ///
    /// ```
    /// assert!(fibra::chan::TryRecvError::Closed.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TryRecvError::Closed)
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Closed => f.write_str("receiving on a closed channel"),
        }
    }
}

impl Error for TryRecvError {}

/// A [`recv_timeout`](crate::Reader::recv_timeout) that got no value.
///
/// ```
/// use std::time::Duration;
/// use fibra::chan::RecvTimeoutError;
/// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecvTimeoutError {
    /// No value came before the deadline.
    Timeout,
    /// The channel is closed and drained.
    Closed,
}

impl RecvTimeoutError {
    /// Whether the receive timed out.
    ///
    /// ```
    /// assert!(fibra::chan::RecvTimeoutError::Timeout.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// Whether the channel was closed and drained.
    ///
    /// ```
    /// assert!(fibra::chan::RecvTimeoutError::Closed.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, RecvTimeoutError::Closed)
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on receive operation"),
            RecvTimeoutError::Closed => f.write_str("receiving on a closed channel"),
        }
    }
}

impl Error for RecvTimeoutError {}
