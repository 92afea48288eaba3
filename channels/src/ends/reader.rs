//! The receiving end.

use super::exclusive::Exclusive;
use super::future::RecvFuture;
use super::iter::{IntoIter, Iter, TryIter};
use crate::core::chan::Chan;
use crate::error::{RecvTimeoutError, TryRecvError};
use crate::op::{self, Attempt, RecvOp};
use fibra_runtime::wait::Deadline;
use futures::Stream;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A receive in progress of the [`Stream`] implementation.
type Pending<T> = Exclusive<Pin<Box<dyn Future<Output = Option<T>> + Send>>>;

/// The receiving end of a channel: `Clone + Send + Sync`, any number of them (MPMC). Dropping
/// the last reader closes the channel (sends fail from then on, values still buffered are
/// dropped).
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(4);
/// let rx2 = rx.clone();
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert_eq!(rx.recv(), Some(1));
/// assert_eq!(rx2.recv(), Some(2));
/// ```
pub struct Reader<T> {
    chan: Arc<Chan<T>>,
    pending: Option<Pending<T>>,
}

impl<T> Reader<T> {
    pub(crate) fn from_chan(chan: Arc<Chan<T>>) -> Self {
        Reader {
            chan,
            pending: None,
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.chan
    }

    /// Receives a value, waiting (parking the fiber, or the thread) until one comes. `None`
    /// once the channel is closed and every buffered value has been received.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(0);
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         s.spawn(|| tx.send("hello").unwrap());
    ///         assert_eq!(rx.recv(), Some("hello"));
    ///     });
    /// });
    /// drop(tx);
    /// assert_eq!(rx.recv(), None);
    /// ```
    #[track_caller]
    pub fn recv(&self) -> Option<T> {
        let op = RecvOp::new(self);
        match op::run_one(&op, Deadline::NEVER) {
            Ok(Attempt::Completed) => op.into_value(),
            _ => None,
        }
    }

    /// Receives a value if one is ready now; never waits.
    ///
    /// ```
    /// use fibra::chan::TryRecvError;
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(5).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(5));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.try_recv()
    }

    /// Receives a value, waiting at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fibra::chan::RecvTimeoutError;
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Ok(1));
    /// ```
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_until(Deadline::after(timeout))
    }

    /// Receives a value, waiting until `deadline` at most.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use fibra::chan::RecvTimeoutError;
    /// let (tx, rx) = fibra::chan::bounded::<u8>(1);
    /// drop(tx);
    /// let deadline = Instant::now() + Duration::from_secs(60);
    /// assert_eq!(rx.recv_deadline(deadline), Err(RecvTimeoutError::Closed));
    /// ```
    #[track_caller]
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_until(Deadline::at(deadline))
    }

    #[track_caller]
    fn recv_until(&self, deadline: Deadline) -> Result<T, RecvTimeoutError> {
        let op = RecvOp::new(self);
        match op::run_one(&op, deadline) {
            Ok(Attempt::Completed) => Ok(op
                .into_value()
                .expect("a completed receive holds its value")),
            Ok(_) => Err(RecvTimeoutError::Closed),
            Err(()) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// Receives a value from async code: the future resolves to what [`recv`](Reader::recv)
    /// would return. Dropping it before it resolves loses no value.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     tx.send_async(3).await.unwrap();
    ///     assert_eq!(rx.recv_async().await, Some(3));
    /// });
    /// ```
    pub fn recv_async(&self) -> RecvFuture<'_, T> {
        RecvFuture::new(RecvOp::new(self))
    }

    /// A blocking iterator over received values; it ends when the channel is closed and
    /// drained.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(3);
    /// for i in 0..3 {
    ///     tx.send(i).unwrap();
    /// }
    /// drop(tx);
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter::new(self)
    }

    /// An iterator over the values ready now; it never waits.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(3);
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter::new(self)
    }
}

super::state_accessors!(Reader {
    /// Closes the channel for every writer and reader; true if this call closed it (closing is
    /// idempotent). Buffered values can still be received.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// tx.send(1).unwrap();
    /// assert!(rx.close());
    /// assert!(!rx.close());
    /// assert!(tx.send(2).is_err());
    /// assert_eq!(rx.recv(), Some(1));
    /// assert_eq!(rx.recv(), None);
    /// ```
    ;

    /// Whether the channel is closed (values may still be buffered).
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded::<()>(1);
    /// assert!(!rx.is_closed());
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    ;

    /// How many values are buffered.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(2);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    ;

    /// Whether nothing is buffered.
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(2);
    /// assert!(rx.is_empty());
    /// ```
    ;

    /// Whether the buffer is full (always true for a rendezvous channel).
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// tx.send(1).unwrap();
    /// assert!(rx.is_full());
    /// ```
    ;

    /// The buffer's capacity (0 for a rendezvous channel).
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(8);
    /// assert_eq!(rx.capacity(), 8);
    /// ```
    ;

    /// Whether `self` and `other` are ends of the same channel.
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let (_tx2, other) = fibra::chan::bounded::<u8>(1);
    /// assert!(rx.same_channel(&rx.clone()));
    /// assert!(!rx.same_channel(&other));
    /// ```
    ;
});

impl<T> Clone for Reader<T> {
    fn clone(&self) -> Self {
        self.chan.add_reader();
        Reader::from_chan(self.chan.clone())
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        // A pending stream receive holds a clone of this reader: let it go first.
        self.pending = None;
        self.chan.drop_reader();
    }
}

impl<T> fmt::Debug for Reader<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl<T> IntoIterator for Reader<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        IntoIter::new(self)
    }
}

impl<'a, T> IntoIterator for &'a Reader<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The values of the channel as a `futures::Stream`; it ends when the channel is closed and
/// drained.
///
/// ```
/// use futures::StreamExt;
/// let (tx, rx) = fibra::chan::bounded(4);
/// std::thread::spawn(move || {
///     for i in 0..4 {
///         tx.send(i).unwrap();
///     }
/// });
/// let all: Vec<i32> = futures::executor::block_on(rx.collect());
/// assert_eq!(all, [0, 1, 2, 3]);
/// ```
impl<T: Send + 'static> Stream for Reader<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.pending.is_none() {
            match this.chan.try_recv() {
                Ok(value) => return Poll::Ready(Some(value)),
                Err(TryRecvError::Closed) => return Poll::Ready(None),
                Err(TryRecvError::Empty) => {}
            }
            let reader = this.clone();
            this.pending = Some(Exclusive::new(Box::pin(async move {
                reader.recv_async().await
            })));
        }
        let pending = this.pending.as_mut().expect("set above").get_mut();
        let item = std::task::ready!(pending.as_mut().poll(cx));
        this.pending = None;
        Poll::Ready(item)
    }
}
