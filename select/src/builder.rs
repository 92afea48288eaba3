//! The dynamic `Select`: a select whose arms are known only at run time.

use crate::engine::{self, Fallback, DEFAULT};
use crate::error::{SelectTimeoutError, TrySelectError};
use fibra_channels::op::{CancelledOp, Operation, RecvOp, SendOp};
use fibra_channels::{Reader, SendError, Writer};
use fibra_runtime::wait::Deadline;
use fibra_runtime::CancelToken;
use std::fmt;
use std::time::{Duration, Instant};

/// One arm: its operation, whether a closed channel makes it ready, and what it returns.
trait Arm<R> {
    fn op(&self) -> &dyn Operation;
    fn accepts_closed(&self) -> bool;
    fn finish(self: Box<Self>) -> R;
}

struct RecvArm<'a, T, F> {
    op: RecvOp<'a, T>,
    f: F,
}

impl<T, R, F: FnOnce(Option<T>) -> R> Arm<R> for RecvArm<'_, T, F> {
    fn op(&self) -> &dyn Operation {
        &self.op
    }
    fn accepts_closed(&self) -> bool {
        true
    }
    fn finish(self: Box<Self>) -> R {
        (self.f)(self.op.into_value())
    }
}

struct ValueArm<'a, T, F> {
    op: RecvOp<'a, T>,
    f: F,
}

impl<T, R, F: FnOnce(T) -> R> Arm<R> for ValueArm<'_, T, F> {
    fn op(&self) -> &dyn Operation {
        &self.op
    }
    fn accepts_closed(&self) -> bool {
        false
    }
    fn finish(self: Box<Self>) -> R {
        let value = self.op.into_value();
        (self.f)(value.expect("select: a value arm won without a value"))
    }
}

/// An arm that binds nothing: a wait for a channel's close, or for a token's cancellation.
struct SignalArm<O, F> {
    op: O,
    f: F,
}

impl<O: Operation, R, F: FnOnce() -> R> Arm<R> for SignalArm<O, F> {
    fn op(&self) -> &dyn Operation {
        &self.op
    }
    fn accepts_closed(&self) -> bool {
        true
    }
    fn finish(self: Box<Self>) -> R {
        (self.f)()
    }
}

struct SendArm<'a, T, F> {
    op: SendOp<'a, T>,
    f: F,
}

impl<T, R, F: FnOnce(Result<(), SendError<T>>) -> R> Arm<R> for SendArm<'_, T, F> {
    fn op(&self) -> &dyn Operation {
        &self.op
    }
    fn accepts_closed(&self) -> bool {
        true
    }
    fn finish(self: Box<Self>) -> R {
        let result = match self.op.into_value() {
            None => Ok(()),
            Some(value) => Err(SendError(value)),
        };
        (self.f)(result)
    }
}

/// A select built at run time: add arms, then run it once. Each arm carries a closure that
/// turns its outcome into the select's result `R`. Same rules as `select!`: fair (random
/// order per call) unless [`biased`](Select::biased), exactly one arm completes, losing sends
/// deliver nothing.
///
/// ```
/// use fibra::Select;
/// let readers: Vec<_> = (0..4).map(|_| fibra::chan::bounded::<u32>(1)).collect();
/// readers[2].0.send(42).unwrap();
///
/// let mut sel = Select::new();
/// for (i, (_, rx)) in readers.iter().enumerate() {
///     sel.recv_value(rx, move |v| (i, v));
/// }
/// assert_eq!(sel.select(), (2, 42));
/// ```
pub struct Select<'a, R> {
    arms: Vec<Box<dyn Arm<R> + 'a>>,
    biased: bool,
}

impl<'a, R> Select<'a, R> {
    /// An empty select.
    ///
    /// ```
    /// let sel = fibra::Select::<()>::new();
    /// assert!(sel.is_empty());
    /// ```
    pub fn new() -> Self {
        Select {
            arms: Vec::new(),
            biased: false,
        }
    }

    /// Tries the arms in the order they were added instead of a random order.
    ///
    /// ```
    /// let (tx_a, rx_a) = fibra::chan::bounded(1);
    /// let (tx_b, rx_b) = fibra::chan::bounded(1);
    /// tx_a.send('a').unwrap();
    /// tx_b.send('b').unwrap();
    /// let mut sel = fibra::Select::new();
    /// sel.biased().recv_value(&rx_a, |v| v).recv_value(&rx_b, |v| v);
    /// assert_eq!(sel.select(), 'a');
    /// ```
    pub fn biased(&mut self) -> &mut Self {
        self.biased = true;
        self
    }

    /// Adds a receive that is ready on a value (`f(Some(v))`) or on a closed and drained
    /// channel (`f(None)`).
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded::<u8>(1);
    /// drop(tx);
    /// let mut sel = fibra::Select::new();
    /// sel.recv(&rx, |msg| msg);
    /// assert_eq!(sel.select(), None);
    /// ```
    pub fn recv<T>(
        &mut self,
        reader: &'a Reader<T>,
        f: impl FnOnce(Option<T>) -> R + 'a,
    ) -> &mut Self {
        self.push(RecvArm {
            op: RecvOp::new(reader),
            f,
        })
    }

    /// Adds a receive that is ready only on a value.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// tx.send(5).unwrap();
    /// let mut sel = fibra::Select::new();
    /// sel.recv_value(&rx, |v| v * 2);
    /// assert_eq!(sel.select(), 10);
    /// ```
    pub fn recv_value<T>(
        &mut self,
        reader: &'a Reader<T>,
        f: impl FnOnce(T) -> R + 'a,
    ) -> &mut Self {
        self.push(ValueArm {
            op: RecvOp::new(reader),
            f,
        })
    }

    /// Adds an arm that is ready only once the channel is closed and drained; it takes no
    /// value.
    ///
    /// ```
    /// let timeout = fibra::chan::close_after(std::time::Duration::from_millis(1));
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let mut sel = fibra::Select::new();
    /// sel.recv_value(&rx, |_| "value").recv_closed(&timeout, || "timed out");
    /// assert_eq!(sel.select(), "timed out");
    /// ```
    pub fn recv_closed<T>(
        &mut self,
        reader: &'a Reader<T>,
        f: impl FnOnce() -> R + 'a,
    ) -> &mut Self {
        self.push(SignalArm {
            op: RecvOp::closed(reader),
            f,
        })
    }

    /// Adds a wait for `token` to be cancelled; ready once it is (`f()`).
    ///
    /// ```
    /// let token = fibra::CancelToken::new();
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// token.cancel();
    /// let mut sel = fibra::Select::new();
    /// sel.recv(&rx, |_| "message").cancelled(&token, || "cancelled");
    /// assert_eq!(sel.select(), "cancelled");
    /// ```
    pub fn cancelled(&mut self, token: &'a CancelToken, f: impl FnOnce() -> R + 'a) -> &mut Self {
        self.push(SignalArm {
            op: CancelledOp::new(token),
            f,
        })
    }

    /// Adds a send of `value`; ready when the value can be delivered (`f(Ok(()))`) or the
    /// channel is closed (`f(Err(SendError(value)))`). If another arm wins, the value is
    /// dropped undelivered.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// let mut sel = fibra::Select::new();
    /// sel.send(&tx, 3, |res| res.is_ok());
    /// assert!(sel.select());
    /// assert_eq!(rx.recv(), Some(3));
    /// ```
    pub fn send<T>(
        &mut self,
        writer: &'a Writer<T>,
        value: T,
        f: impl FnOnce(Result<(), SendError<T>>) -> R + 'a,
    ) -> &mut Self {
        self.push(SendArm {
            op: SendOp::new(writer, value),
            f,
        })
    }

    fn push(&mut self, arm: impl Arm<R> + 'a) -> &mut Self {
        self.arms.push(Box::new(arm));
        self
    }

    /// How many arms were added.
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let mut sel = fibra::Select::new();
    /// sel.recv(&rx, |_| ());
    /// assert_eq!(sel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.arms.len()
    }

    /// Whether no arm was added.
    ///
    /// ```
    /// assert!(fibra::Select::<u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.arms.is_empty()
    }

    /// Waits until one arm completes and returns its closure's result.
    ///
    /// # Panics
    ///
    /// `select: all arms disabled` without arms; `select: all channels closed` when every
    /// channel is closed and no arm accepts that.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(0);
    /// let sender = std::thread::spawn(move || tx.send("hi").unwrap());
    /// let mut sel = fibra::Select::new();
    /// sel.recv_value(&rx, |v| v);
    /// assert_eq!(sel.select(), "hi");
    /// sender.join().unwrap();
    /// ```
    #[track_caller]
    pub fn select(self) -> R {
        self.run(Fallback::Block)
            .unwrap_or_else(|| unreachable!("a blocking select returned no arm"))
    }

    /// Completes an arm that is ready now, or fails without waiting.
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let mut sel = fibra::Select::new();
    /// sel.recv(&rx, |_| ());
    /// assert!(sel.try_select().is_err());
    /// ```
    pub fn try_select(self) -> Result<R, TrySelectError> {
        self.run(Fallback::Now).ok_or(TrySelectError)
    }

    /// Waits at most `timeout` for an arm to complete. With no arm that can complete (none
    /// added, or every channel closed and no arm accepting that) it waits out `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let mut sel = fibra::Select::new();
    /// sel.recv(&rx, |_| ());
    /// assert!(sel.select_timeout(Duration::from_millis(1)).is_err());
    /// ```
    #[track_caller]
    pub fn select_timeout(self, timeout: Duration) -> Result<R, SelectTimeoutError> {
        self.run(Fallback::timeout(timeout))
            .ok_or(SelectTimeoutError)
    }

    /// Waits until `deadline` at most for an arm to complete (until `deadline` when no arm
    /// can complete, as [`select_timeout`](Self::select_timeout) does).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = fibra::chan::bounded(1);
    /// tx.send(1).unwrap();
    /// let mut sel = fibra::Select::new();
    /// sel.recv_value(&rx, |v| v);
    /// assert_eq!(sel.select_deadline(Instant::now() + Duration::from_secs(5)), Ok(1));
    /// ```
    #[track_caller]
    pub fn select_deadline(self, deadline: Instant) -> Result<R, SelectTimeoutError> {
        self.run(Fallback::Until(Deadline::at(deadline)))
            .ok_or(SelectTimeoutError)
    }

    #[track_caller]
    fn run(self, fallback: Fallback) -> Option<R> {
        let mut ops: Vec<Option<&dyn Operation>> =
            self.arms.iter().map(|arm| Some(arm.op())).collect();
        let accepts_closed: Vec<bool> = self.arms.iter().map(|arm| arm.accepts_closed()).collect();
        let index = engine::select(&mut ops, &accepts_closed, self.biased, fallback);
        drop(ops);
        if index == DEFAULT {
            return None;
        }
        let arm = self
            .arms
            .into_iter()
            .nth(index)
            .expect("the winner is an arm");
        Some(arm.finish())
    }
}

impl<R> Default for Select<'_, R> {
    fn default() -> Self {
        Select::new()
    }
}

impl<R> fmt::Debug for Select<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select")
            .field("arms", &self.arms.len())
            .field("biased", &self.biased)
            .finish()
    }
}
