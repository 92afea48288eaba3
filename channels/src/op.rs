//! Channel operations as values, and the one registration-and-wait routine that every blocking
//! `recv`, `send`, `*_timeout`, async operation and `select` is built on.
//!
//! An operation ([`RecvOp`], [`SendOp`]) is tried at once with [`Operation::try_now`]; when
//! none of a set of operations can complete, [`wait`] registers one waiter on all of them,
//! parks until exactly one completes (or a deadline passes), and removes the other
//! registrations. An operation completes only if it wins its waiter's claim, so a receive that
//! did not win takes no value and a send that did not win delivers none.
//!
//! This module is the layer `fibra-select` is built on; most code uses `Reader`, `Writer` and
//! `select!` instead.
//!
//! ```
//! use fibra_channels::op::{self, Attempt, Operation, RecvOp, Woken};
//!
//! let (tx_a, rx_a) = fibra_channels::bounded::<u32>(1);
//! let (_tx_b, rx_b) = fibra_channels::bounded::<u32>(1);
//! let sender = std::thread::spawn(move || tx_a.send(7).unwrap());
//!
//! // Wait for whichever of two receives completes first.
//! let a = RecvOp::new(&rx_a);
//! let b = RecvOp::new(&rx_b);
//! let got = loop {
//!     if a.try_now() == Attempt::Completed {
//!         break a.into_value();
//!     }
//!     match op::wait(&[Some(&a), Some(&b)], None) {
//!         Woken::Selected(0) => break a.into_value(),
//!         Woken::Selected(_) => unreachable!("nobody sends on b"),
//!         Woken::Retry | Woken::TimedOut => {}
//!     }
//! };
//! assert_eq!(got, Some(7));
//! sender.join().unwrap();
//! ```

use crate::cancel;
use crate::chan::{Chan, Registration, Side};
use crate::error::{TryRecvError, TrySendError};
use crate::packet::Packet;
pub use crate::retry::Patience;
use crate::retry::RetrySlot;
use crate::shim;
use crate::wait::{block, Parked};
use crate::waiter::Waiter;
use crate::{Reader, Writer};
use std::fmt;
use std::marker::PhantomData;
use std::time::Instant;

/// The state of an operation after an attempt.
///
/// ```
/// use fibra_channels::op::{Attempt, Operation, RecvOp};
/// let (tx, rx) = fibra_channels::bounded(1);
/// let recv = RecvOp::new(&rx);
/// assert_eq!(recv.try_now(), Attempt::NotReady);
/// tx.send(1).unwrap();
/// assert_eq!(recv.try_now(), Attempt::Completed);
/// drop(tx);
/// assert_eq!(RecvOp::new(&rx).try_now(), Attempt::Closed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Attempt {
    /// The operation completed: a receive holds its value, a send delivered.
    Completed,
    /// The channel is closed (for a receive: and drained). A send still holds its value.
    Closed,
    /// The operation would have to wait.
    NotReady,
}

/// How a [`wait`] ended.
///
/// ```
/// use fibra_channels::op::{self, RecvOp, Woken};
/// use std::time::{Duration, Instant};
/// let (_tx, rx) = fibra_channels::bounded::<u8>(1);
/// let recv = RecvOp::new(&rx);
/// let soon = Instant::now() + Duration::from_millis(1);
/// let woken = op::wait(&[Some(&recv)], Some(soon));
/// assert!(matches!(woken, Woken::TimedOut | Woken::Retry));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Woken {
    /// The operation at this index of the slice won; [`Operation::outcome`] says how it ended.
    Selected(usize),
    /// Nothing completed, but something may be ready now (an operation was ready while
    /// registering, a channel woke the waiter to look again, or a timer channel's deadline
    /// came): try again.
    Retry,
    /// The deadline passed and nothing completed.
    TimedOut,
}

pub(crate) mod sealed {
    use crate::chan::Registration;
    use crate::retry::RetrySlot;
    use crate::waiter::Waiter;

    /// The registration half of [`Operation`](super::Operation), private to this crate.
    pub trait Sealed {
        /// Registers operation number `oper` of `waiter`, unless it can complete now.
        fn register(&self, waiter: &Waiter, oper: usize) -> Registration;
        /// Removes the registrations of `waiter`. Once this returns, no claimer touches this
        /// operation any more.
        fn unregister(&self, waiter: &Waiter);
        /// The operation completed but its caller is unwinding (cancelled) and will never see
        /// the outcome: undo what can be undone without loss (a received value goes back to
        /// the channel).
        fn abandon(&self);
        /// The slot whose holder may retry this operation (see `retry`); `None` when retrying
        /// cannot help: a send on a rendezvous channel completes only against a registered
        /// receiver (two sides that only retried would never meet), and a wait for a close is
        /// rare and long.
        fn retry_slot(&self) -> Option<&RetrySlot>;
    }
}

/// A channel operation that can be tried now or waited on with others. Implemented by
/// [`RecvOp`] and [`SendOp`]; not implementable outside this crate.
///
/// ```
/// use fibra_channels::op::{Attempt, Operation, SendOp};
/// let (tx, rx) = fibra_channels::bounded(1);
/// let send = SendOp::new(&tx, 'x');
/// assert_eq!(send.try_now(), Attempt::Completed);
/// assert_eq!(rx.recv(), Some('x'));
/// ```
pub trait Operation: sealed::Sealed {
    /// Tries to complete the operation without waiting.
    ///
    /// ```
    /// use fibra_channels::op::{Attempt, Operation, RecvOp};
    /// let (_tx, rx) = fibra_channels::bounded::<u8>(1);
    /// assert_eq!(RecvOp::new(&rx).try_now(), Attempt::NotReady);
    /// ```
    fn try_now(&self) -> Attempt;

    /// How the operation ended, after [`wait`] selected it: [`Attempt::Completed`] or
    /// [`Attempt::Closed`].
    ///
    /// ```
    /// use fibra_channels::op::{self, Attempt, Operation, RecvOp, Woken};
    /// let (tx, rx) = fibra_channels::bounded::<u8>(1);
    /// let closer = std::thread::spawn(move || drop(tx));
    /// let recv = RecvOp::new(&rx);
    /// loop {
    ///     if recv.try_now() == Attempt::Closed {
    ///         break;
    ///     }
    ///     if let Woken::Selected(_) = op::wait(&[Some(&recv)], None) {
    ///         assert_eq!(recv.outcome(), Attempt::Closed);
    ///         break;
    ///     }
    /// }
    /// closer.join().unwrap();
    /// ```
    fn outcome(&self) -> Attempt;
}

/// A receive, from a [`Reader`]. Its value, once completed, is taken with
/// [`into_value`](RecvOp::into_value).
///
/// ```
/// use fibra_channels::op::{Attempt, Operation, RecvOp};
/// let (tx, rx) = fibra_channels::bounded(1);
/// tx.send(3).unwrap();
/// let recv = RecvOp::new(&rx);
/// assert_eq!(recv.try_now(), Attempt::Completed);
/// assert_eq!(recv.into_value(), Some(3));
/// ```
pub struct RecvOp<'a, T> {
    chan: &'a Chan<T>,
    packet: Packet<T>,
    side: Side,
    /// Not `Sync`: the packet is only ever touched by the op's own thread outside a wait.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl<'a, T> RecvOp<'a, T> {
    /// A receive of a value from `reader`'s channel (completes with a value, or ends as closed
    /// when the channel is closed and drained).
    ///
    /// ```
    /// let (_tx, rx) = fibra_channels::bounded::<u8>(1);
    /// let _recv = fibra_channels::op::RecvOp::new(&rx);
    /// ```
    pub fn new(reader: &'a Reader<T>) -> Self {
        RecvOp::on(reader.chan(), Side::Recv)
    }

    /// An operation that takes no value and is ready only once the channel is closed and
    /// drained (it then ends as [`Attempt::Closed`]).
    ///
    /// ```
    /// use fibra_channels::op::{Attempt, Operation, RecvOp};
    /// let (tx, rx) = fibra_channels::bounded(1);
    /// tx.send(1).unwrap();
    /// tx.close();
    /// let closed = RecvOp::closed(&rx);
    /// assert_eq!(closed.try_now(), Attempt::NotReady); // a value is still buffered
    /// assert_eq!(rx.recv(), Some(1));
    /// assert_eq!(closed.try_now(), Attempt::Closed);
    /// ```
    pub fn closed(reader: &'a Reader<T>) -> Self {
        RecvOp::on(reader.chan(), Side::Closed)
    }

    pub(crate) fn on(chan: &'a Chan<T>, side: Side) -> Self {
        RecvOp {
            chan,
            packet: Packet::new(None),
            side,
            _not_sync: PhantomData,
        }
    }

    /// The received value, if the operation completed (`None` if it ended as closed or never
    /// completed).
    ///
    /// ```
    /// let (_tx, rx) = fibra_channels::bounded::<u8>(1);
    /// assert_eq!(fibra_channels::op::RecvOp::new(&rx).into_value(), None);
    /// ```
    pub fn into_value(self) -> Option<T> {
        self.packet.into_inner()
    }
}

impl<T> sealed::Sealed for RecvOp<'_, T> {
    fn register(&self, waiter: &Waiter, oper: usize) -> Registration {
        self.chan.register(self.side, waiter, oper, &self.packet)
    }

    fn unregister(&self, waiter: &Waiter) {
        self.chan.unregister(self.side, waiter);
    }

    fn abandon(&self) {
        // SAFETY: called once the wait is over (done observed through the unregistration
        // barrier, registrations gone), so this thread owns the packet again.
        if let Some(value) = unsafe { self.packet.take() } {
            self.chan.reinject(value);
        }
    }

    fn retry_slot(&self) -> Option<&RetrySlot> {
        self.chan.retry_slot(self.side)
    }
}

impl<T> Operation for RecvOp<'_, T> {
    fn try_now(&self) -> Attempt {
        if self.side == Side::Closed {
            return match self.chan.closed_and_drained() {
                true => Attempt::Closed,
                false => Attempt::NotReady,
            };
        }
        match self.chan.try_recv() {
            Ok(value) => {
                // SAFETY: `try_now` runs outside any wait (the op is not `Sync` and `wait`
                // borrows it until every registration is gone), so no entry points at the
                // packet and this thread has it to itself.
                unsafe { self.packet.replace(Some(value)) };
                Attempt::Completed
            }
            Err(TryRecvError::Closed) => Attempt::Closed,
            Err(TryRecvError::Empty) => Attempt::NotReady,
        }
    }

    fn outcome(&self) -> Attempt {
        // SAFETY: called after the wait ended: the waiter is done (its claimer finished, with a
        // release/acquire edge to us) or aborted, and its registrations are gone.
        match unsafe { self.packet.is_full() } {
            true => Attempt::Completed,
            false => Attempt::Closed,
        }
    }
}

impl<T> fmt::Debug for RecvOp<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvOp")
            .field("side", &self.side)
            .finish_non_exhaustive()
    }
}

/// A send of one value, to a [`Writer`]. A send that never completed gives its value back with
/// [`into_value`](SendOp::into_value).
///
/// ```
/// use fibra_channels::op::{Attempt, Operation, SendOp};
/// let (tx, _rx) = fibra_channels::bounded(0);
/// let send = SendOp::new(&tx, "kept");
/// assert_eq!(send.try_now(), Attempt::NotReady); // nobody is receiving
/// assert_eq!(send.into_value(), Some("kept"));
/// ```
pub struct SendOp<'a, T> {
    chan: &'a Chan<T>,
    packet: Packet<T>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl<'a, T> SendOp<'a, T> {
    /// A send of `value` on `writer`'s channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra_channels::bounded(1);
    /// let _send = fibra_channels::op::SendOp::new(&tx, 1u8);
    /// ```
    pub fn new(writer: &'a Writer<T>, value: T) -> Self {
        SendOp {
            chan: writer.chan(),
            packet: Packet::new(Some(value)),
            _not_sync: PhantomData,
        }
    }

    /// The value, if it was not delivered.
    ///
    /// ```
    /// use fibra_channels::op::{Operation, SendOp};
    /// let (tx, rx) = fibra_channels::bounded(1);
    /// let send = SendOp::new(&tx, 9);
    /// send.try_now();
    /// assert_eq!(send.into_value(), None);
    /// assert_eq!(rx.recv(), Some(9));
    /// ```
    pub fn into_value(self) -> Option<T> {
        self.packet.into_inner()
    }
}

impl<T> sealed::Sealed for SendOp<'_, T> {
    fn register(&self, waiter: &Waiter, oper: usize) -> Registration {
        self.chan.register(Side::Send, waiter, oper, &self.packet)
    }

    fn unregister(&self, waiter: &Waiter) {
        self.chan.unregister(Side::Send, waiter);
    }

    /// A delivered value stays delivered; a refused one is dropped with the unwinding caller.
    fn abandon(&self) {}

    fn retry_slot(&self) -> Option<&RetrySlot> {
        self.chan.retry_slot(Side::Send)
    }
}

impl<T> Operation for SendOp<'_, T> {
    fn try_now(&self) -> Attempt {
        // SAFETY: as in `RecvOp::try_now`: outside any wait this thread owns the packet.
        let Some(value) = (unsafe { self.packet.take() }) else {
            return Attempt::Completed;
        };
        let (value, attempt) = match self.chan.try_send(value) {
            Ok(()) => return Attempt::Completed,
            Err(TrySendError::Full(value)) => (value, Attempt::NotReady),
            Err(TrySendError::Closed(value)) => (value, Attempt::Closed),
        };
        // SAFETY: as above.
        unsafe { self.packet.replace(Some(value)) };
        attempt
    }

    fn outcome(&self) -> Attempt {
        // SAFETY: as in `RecvOp::outcome`.
        match unsafe { self.packet.is_full() } {
            true => Attempt::Closed,
            false => Attempt::Completed,
        }
    }
}

impl<T> fmt::Debug for SendOp<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendOp").finish_non_exhaustive()
    }
}

/// Registers `waiter` on the operations in order (skipping `None`s) until one is ready.
/// Returns how many leading slots were registered and the outcome: `Waiting` with the
/// earliest timer deadline, or `Ready` (then the ready one, at the returned count, is not
/// registered).
pub(crate) fn register_all(
    ops: &[Option<&dyn Operation>],
    waiter: &Waiter,
) -> (usize, Registration) {
    let mut wake_at: Option<Instant> = None;
    for (oper, op) in ops.iter().enumerate() {
        let Some(op) = op else { continue };
        match op.register(waiter, oper) {
            Registration::Ready => return (oper, Registration::Ready),
            Registration::Waiting(at) => {
                wake_at = match (wake_at, at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
    }
    (ops.len(), Registration::Waiting(wake_at))
}

/// Removes `waiter`'s registrations from the first `count` slots, except from `skip` (an
/// operation that completed: its claimer already removed its entry).
pub(crate) fn unregister_all(
    ops: &[Option<&dyn Operation>],
    waiter: &Waiter,
    count: usize,
    skip: Option<usize>,
) {
    for (oper, op) in ops[..count].iter().enumerate() {
        if let (Some(op), false) = (op, skip == Some(oper)) {
            op.unregister(waiter);
        }
    }
}

/// The registrations of one [`wait`]; removed on drop, also when unwinding.
struct Registered<'a> {
    ops: &'a [Option<&'a dyn Operation>],
    waiter: &'a Waiter,
    count: usize,
    /// The completed operation, whose entry is gone already; `None` until known.
    done: Option<usize>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.done.is_some() {
            unregister_all(self.ops, self.waiter, self.count, self.done);
            return;
        }
        // Withdrawn, or unwinding out of the park (cancellation): make sure nobody claims us
        // from here on. If a claim came first, unregistering every operation (including the
        // claimed one) takes each channel's lock after the claimer's, so it has finished when
        // this returns — and its outcome must not be lost with the unwinding caller.
        let _ = self.waiter.try_abort();
        unregister_all(self.ops, self.waiter, self.count, None);
        if let Some(oper) = self.waiter.done() {
            if let Some(op) = self.ops[oper] {
                op.abandon();
            }
        }
    }
}

/// Registers the caller on every operation (`None` slots are skipped), parks until one of
/// them completes or `deadline` passes, and removes the other registrations. The one blocking
/// wait of every channel operation and of `select`; it is a cancellation point (a cancelled
/// fiber unwinds from it, and a value a receive had already been handed goes back to its
/// channel).
///
/// Call it only after [`Operation::try_now`] found every operation not ready; if one became
/// ready meanwhile this returns [`Woken::Retry`].
///
/// ```
/// use std::time::{Duration, Instant};
/// use fibra_channels::op::{self, RecvOp, Woken};
/// let (_tx, rx) = fibra_channels::bounded::<u8>(1);
/// let recv = RecvOp::new(&rx);
/// let deadline = Instant::now() + Duration::from_millis(1);
/// let woken = loop {
///     match op::wait(&[Some(&recv)], Some(deadline)) {
///         Woken::Retry => continue,
///         other => break other,
///     }
/// };
/// assert_eq!(woken, Woken::TimedOut);
/// ```
pub fn wait(ops: &[Option<&dyn Operation>], deadline: Option<Instant>) -> Woken {
    wait_then(ops, deadline, || {})
}

/// [`wait`], calling `on_registered` once the registrations are made, before parking.
pub(crate) fn wait_then(
    ops: &[Option<&dyn Operation>],
    deadline: Option<Instant>,
    on_registered: impl FnOnce(),
) -> Woken {
    let waiter = Waiter::new(shim::current_waker());
    let (count, registration) = register_all(ops, &waiter);
    on_registered();
    let mut registered = Registered {
        ops,
        waiter: &waiter,
        count,
        done: None,
    };
    let parked = match registration {
        Registration::Ready => match waiter.try_abort() {
            Ok(()) => return Woken::Retry,
            // Claimed while we were registering: that operation completes.
            Err(()) => block(&waiter, None),
        },
        Registration::Waiting(wake_at) => {
            let until = match (deadline, wake_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            block(&waiter, until)
        }
    };
    match parked {
        Parked::Done(oper) => {
            registered.done = Some(oper);
            drop(registered);
            Woken::Selected(oper)
        }
        Parked::Retry => {
            drop(registered);
            Woken::Retry
        }
        Parked::Deadline => {
            drop(registered);
            match deadline {
                Some(deadline) if Instant::now() >= deadline => Woken::TimedOut,
                _ => Woken::Retry,
            }
        }
    }
}

/// The cancellation point (and the reduction) every blocking operation starts with: unwinds
/// the calling fiber if its scope is cancelled. Not a cancellation point while the thread is
/// already unwinding.
///
/// ```
/// fibra_runtime::run(|| fibra_channels::op::cancellation_point());
/// ```
pub fn cancellation_point() {
    cancel::point();
}

/// Runs one operation to its end: tries it, waits, tries again. `Err(())` when `deadline`
/// passed first.
pub(crate) fn run_one(op: &dyn Operation, deadline: Option<Instant>) -> Result<Attempt, ()> {
    cancel::point();
    let mut patience = Patience::new();
    loop {
        match op.try_now() {
            Attempt::NotReady => {}
            done => return Ok(done),
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(());
        }
        if patience.retry(&[Some(op)]) {
            continue;
        }
        match patience.wait(&[Some(op)], deadline) {
            Woken::Selected(_) => return Ok(op.outcome()),
            Woken::Retry => {}
            Woken::TimedOut => return Err(()),
        }
    }
}
