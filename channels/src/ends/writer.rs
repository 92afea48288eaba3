//! The sending end.

use super::future::SendFuture;
use crate::core::chan::Chan;
use crate::error::{SendError, SendTimeoutError, TrySendError};
use crate::op::{self, Attempt, SendOp};
use fibra_runtime::wait::Deadline;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The sending end of a channel: `Clone + Send + Sync`, any number of them (MPMC). Dropping
/// the last writer closes the channel; receivers then drain what is buffered.
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(2);
/// let tx2 = tx.clone();
/// tx.send(1).unwrap();
/// tx2.send(2).unwrap();
/// drop((tx, tx2));
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
/// ```
pub struct Writer<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Writer<T> {
    pub(crate) fn from_chan(chan: Arc<Chan<T>>) -> Self {
        Writer { chan }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Sends `value`, waiting (parking the fiber, or the thread) for room in the buffer — for a
    /// rendezvous channel, until a receiver takes it. A receiver already waiting gets the value
    /// directly. On a closed channel the value comes back in the error.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(0);
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         s.spawn(|| assert_eq!(rx.recv(), Some(1)));
    ///         tx.send(1).unwrap(); // returns once the receiver has the value
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        let op = SendOp::new(self, value);
        match op::run_one(&op, Deadline::NEVER) {
            Ok(Attempt::Completed) => Ok(()),
            _ => Err(SendError(
                op.into_value()
                    .expect("an undelivered send keeps its value"),
            )),
        }
    }

    /// Sends `value` if that is possible now; never waits.
    ///
    /// ```
    /// use fibra::chan::TrySendError;
    /// let (tx, _rx) = fibra::chan::bounded(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// ```
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.chan.try_send(value)
    }

    /// Sends `value`, waiting at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// assert!(tx.send_timeout(1, Duration::from_millis(1)).is_ok());
    /// assert!(tx.send_timeout(2, Duration::from_millis(1)).unwrap_err().is_timeout());
    /// assert_eq!(rx.recv(), Some(1));
    /// ```
    #[track_caller]
    pub fn send_timeout(&self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_until(value, Deadline::after(timeout))
    }

    /// Sends `value`, waiting until `deadline` at most.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use fibra::chan::SendTimeoutError;
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// drop(rx);
    /// let deadline = Instant::now() + Duration::from_secs(60);
    /// assert_eq!(tx.send_deadline(4, deadline), Err(SendTimeoutError::Closed(4)));
    /// ```
    #[track_caller]
    pub fn send_deadline(&self, value: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_until(value, Deadline::at(deadline))
    }

    #[track_caller]
    fn send_until(&self, value: T, deadline: Deadline) -> Result<(), SendTimeoutError<T>> {
        let op = SendOp::new(self, value);
        let outcome = op::run_one(&op, deadline);
        if let Ok(Attempt::Completed) = outcome {
            return Ok(());
        }
        let value = op
            .into_value()
            .expect("an undelivered send keeps its value");
        match outcome {
            Err(()) => Err(SendTimeoutError::Timeout(value)),
            Ok(_) => Err(SendTimeoutError::Closed(value)),
        }
    }

    /// Sends `value` from async code: the future resolves to what [`send`](Writer::send) would
    /// return. Dropping it before it resolves sends nothing — unless a receiver already took
    /// the value.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// futures::executor::block_on(async {
    ///     tx.send_async("x").await.unwrap();
    /// });
    /// assert_eq!(rx.recv(), Some("x"));
    /// ```
    pub fn send_async(&self, value: T) -> SendFuture<'_, T> {
        SendFuture::new(SendOp::new(self, value))
    }
}

super::state_accessors!(Writer {
    /// Closes the channel for every writer and reader; true if this call closed it (closing is
    /// idempotent). Parked senders get their values back; receivers drain the buffer, then get
    /// `None`.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded::<u8>(1);
    /// assert!(tx.close());
    /// assert!(!tx.clone().close());
    /// assert_eq!(rx.recv(), None);
    /// ```
    ;

    /// Whether the channel is closed.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded::<u8>(1);
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    ;

    /// How many values are buffered.
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded(2);
    /// tx.send(()).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    ;

    /// Whether nothing is buffered.
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded::<u8>(2);
    /// assert!(tx.is_empty());
    /// ```
    ;

    /// Whether the buffer is full (always true for a rendezvous channel).
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded::<u8>(0);
    /// assert!(tx.is_full());
    /// ```
    ;

    /// The buffer's capacity (0 for a rendezvous channel).
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded::<u8>(0);
    /// assert_eq!(tx.capacity(), 0);
    /// ```
    ;

    /// Whether `self` and `other` are ends of the same channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded::<u8>(1);
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    ;
});

impl<T> Clone for Writer<T> {
    fn clone(&self) -> Self {
        self.chan.add_writer();
        Writer::from_chan(self.chan.clone())
    }
}

impl<T> Drop for Writer<T> {
    fn drop(&mut self) {
        self.chan.drop_writer();
    }
}

impl<T> fmt::Debug for Writer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}
