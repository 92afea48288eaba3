//! Channel operations as values, and the one registration-and-wait routine that every blocking
//! `recv`, `send`, `*_timeout`, async operation and `select` is built on.
//!
//! An operation ([`RecvOp`], [`SendOp`]) is tried at once with [`Operation::try_now`]; when
//! none of a set of operations can complete, [`wait`] registers one waiter on all of them,
//! parks until exactly one completes (or a deadline passes), and removes the other
//! registrations. An operation completes only if it wins its waiter's claim, so a receive that
//! did not win takes no value and a send that did not win delivers none. An operation is in
//! one wait at a time and is not used otherwise while it is: misuse panics instead of
//! corrupting a handoff.
//!
//! This module is the layer `fibra-select` is built on; most code uses `Reader`, `Writer` and
//! `select!` instead.
//!
//! ```
//! use fibra::chan::op::{self, Attempt, Operation, RecvOp, Woken};
//!
//! let (tx_a, rx_a) = fibra::chan::bounded::<u32>(1);
//! let (_tx_b, rx_b) = fibra::chan::bounded::<u32>(1);
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
use crate::in_wait::{InWait, WaitMark};
use crate::packet::Packet;
pub use crate::retry::Patience;
use crate::retry::RetrySlot;
use crate::shim;
use crate::wait::{block, Parked};
use crate::waiter::Waiter;
use crate::{Reader, Writer};
use std::fmt;
use std::time::Instant;

/// The state of an operation after an attempt.
///
/// ```
/// use fibra::chan::op::{Attempt, Operation, RecvOp};
/// let (tx, rx) = fibra::chan::bounded(1);
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
/// use fibra::chan::op::{self, RecvOp, Woken};
/// use std::time::{Duration, Instant};
/// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
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
    use crate::in_wait::WaitMark;
    use crate::retry::RetrySlot;
    use crate::waiter::Waiter;

    /// The registration half of [`Operation`](super::Operation), private to this crate.
    pub trait Sealed {
        /// Set while a wait uses the operation (see `in_wait`).
        fn wait_mark(&self) -> &WaitMark;
        /// Whether the operation has completed (a receive holds its value, a send delivered).
        /// Only for the wait that has just marked it: it looks at the packet.
        fn has_completed(&self) -> bool;
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
/// use fibra::chan::op::{Attempt, Operation, SendOp};
/// let (tx, rx) = fibra::chan::bounded(1);
/// let send = SendOp::new(&tx, 'x');
/// assert_eq!(send.try_now(), Attempt::Completed);
/// assert_eq!(rx.recv(), Some('x'));
/// ```
pub trait Operation: sealed::Sealed {
    /// Tries to complete the operation without waiting. An operation that has completed stays
    /// completed: a receive holding its value does not receive another.
    ///
    /// # Panics
    ///
    /// While the operation is in a [`wait`] (another fiber's, on this thread).
    ///
    /// ```
    /// use fibra::chan::op::{Attempt, Operation, RecvOp};
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// assert_eq!(RecvOp::new(&rx).try_now(), Attempt::NotReady);
    /// ```
    fn try_now(&self) -> Attempt;

    /// How the operation ended, after [`wait`] selected it: [`Attempt::Completed`] or
    /// [`Attempt::Closed`].
    ///
    /// # Panics
    ///
    /// As [`try_now`](Self::try_now).
    ///
    /// ```
    /// use fibra::chan::op::{self, Attempt, Operation, RecvOp, Woken};
    /// let (tx, rx) = fibra::chan::bounded::<u8>(1);
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
/// use fibra::chan::op::{Attempt, Operation, RecvOp};
/// let (tx, rx) = fibra::chan::bounded(1);
/// tx.send(3).unwrap();
/// let recv = RecvOp::new(&rx);
/// assert_eq!(recv.try_now(), Attempt::Completed);
/// assert_eq!(recv.into_value(), Some(3));
/// ```
pub struct RecvOp<'a, T> {
    chan: &'a Chan<T>,
    packet: Packet<T>,
    side: Side,
    /// Also makes the op not `Sync`: the packet is only ever touched by the op's own thread,
    /// outside a wait.
    in_wait: WaitMark,
}

impl<'a, T> RecvOp<'a, T> {
    /// A receive of a value from `reader`'s channel (completes with a value, or ends as closed
    /// when the channel is closed and drained).
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let _recv = fibra::chan::op::RecvOp::new(&rx);
    /// ```
    pub fn new(reader: &'a Reader<T>) -> Self {
        RecvOp::on(reader.chan(), Side::Recv)
    }

    /// An operation that takes no value and is ready only once the channel is closed and
    /// drained (it then ends as [`Attempt::Closed`]).
    ///
    /// ```
    /// use fibra::chan::op::{Attempt, Operation, RecvOp};
    /// let (tx, rx) = fibra::chan::bounded(1);
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
            in_wait: WaitMark::default(),
        }
    }

    /// The received value, if the operation completed (`None` if it ended as closed or never
    /// completed).
    ///
    /// ```
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// assert_eq!(fibra::chan::op::RecvOp::new(&rx).into_value(), None);
    /// ```
    pub fn into_value(self) -> Option<T> {
        self.packet.into_inner()
    }
}

impl<T> sealed::Sealed for RecvOp<'_, T> {
    fn wait_mark(&self) -> &WaitMark {
        &self.in_wait
    }

    fn has_completed(&self) -> bool {
        // SAFETY: the wait that marked the op calls this before registering it, so no entry
        // points at the packet and this thread has it to itself.
        unsafe { self.packet.is_full() }
    }

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
        self.in_wait.assert_free("try_now");
        // SAFETY: out of any wait (just checked; the op is not `Sync`, so only this thread
        // marks it) no entry points at the packet and this thread has it to itself.
        if unsafe { self.packet.is_full() } {
            // Completed before: the value waits to be taken, and no second one is received.
            return Attempt::Completed;
        }
        match self.chan.try_recv() {
            Ok(value) => {
                // SAFETY: as above.
                unsafe { self.packet.replace(Some(value)) };
                Attempt::Completed
            }
            Err(TryRecvError::Closed) => Attempt::Closed,
            Err(TryRecvError::Empty) => Attempt::NotReady,
        }
    }

    fn outcome(&self) -> Attempt {
        self.in_wait.assert_free("outcome");
        // SAFETY: out of any wait (just checked): a wait that ended left the waiter done (its
        // claimer finished, with a release/acquire edge to us) or aborted, and its
        // registrations gone.
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
/// use fibra::chan::op::{Attempt, Operation, SendOp};
/// let (tx, _rx) = fibra::chan::bounded(0);
/// let send = SendOp::new(&tx, "kept");
/// assert_eq!(send.try_now(), Attempt::NotReady); // nobody is receiving
/// assert_eq!(send.into_value(), Some("kept"));
/// ```
pub struct SendOp<'a, T> {
    chan: &'a Chan<T>,
    packet: Packet<T>,
    /// As for [`RecvOp`].
    in_wait: WaitMark,
}

impl<'a, T> SendOp<'a, T> {
    /// A send of `value` on `writer`'s channel.
    ///
    /// ```
    /// let (tx, _rx) = fibra::chan::bounded(1);
    /// let _send = fibra::chan::op::SendOp::new(&tx, 1u8);
    /// ```
    pub fn new(writer: &'a Writer<T>, value: T) -> Self {
        SendOp {
            chan: writer.chan(),
            packet: Packet::new(Some(value)),
            in_wait: WaitMark::default(),
        }
    }

    /// The value, if it was not delivered.
    ///
    /// ```
    /// use fibra::chan::op::{Operation, SendOp};
    /// let (tx, rx) = fibra::chan::bounded(1);
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
    fn wait_mark(&self) -> &WaitMark {
        &self.in_wait
    }

    fn has_completed(&self) -> bool {
        // SAFETY: as in `RecvOp::has_completed`.
        !unsafe { self.packet.is_full() }
    }

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
        self.in_wait.assert_free("try_now");
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
        self.in_wait.assert_free("outcome");
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

/// The registrations of one [`wait`]; removed on drop, also when unwinding, before the
/// operations' wait marks are cleared.
struct Registered<'a> {
    _in_wait: InWait<'a>,
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
/// Call it after [`Operation::try_now`] found every operation not ready; if one became ready
/// meanwhile this returns [`Woken::Retry`]. An operation that has completed already (a
/// receive holding its value, a send that delivered) is selected at once, without waiting.
///
/// # Panics
///
/// If an operation is in `ops` twice, or is in another wait (another fiber's, on this thread):
/// an operation belongs to one wait at a time, and nothing else may use it until that wait
/// returns.
///
/// ```
/// use std::time::{Duration, Instant};
/// use fibra::chan::op::{self, RecvOp, Woken};
/// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
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
    let in_wait = match InWait::enter(ops) {
        Ok(in_wait) => in_wait,
        Err(completed) => {
            on_registered();
            return Woken::Selected(completed);
        }
    };
    let waiter = Waiter::new(shim::current_waker());
    let (count, registration) = register_all(ops, &waiter);
    on_registered();
    let mut registered = Registered {
        _in_wait: in_wait,
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
/// fibra::run(|| fibra::chan::op::cancellation_point());
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{wait, Attempt, Operation, RecvOp, SendOp, Woken};
    use crate::{bounded, Reader};
    use fibra_runtime::{CancelToken, ScopeOptions};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    fn on_workers<T>(workers: usize, f: impl FnOnce() -> T) -> T {
        fibra_runtime::Runtime::builder()
            .workers(workers)
            .build()
            .unwrap()
            .block_on(f)
    }

    fn yield_many() {
        for _ in 0..100 {
            fibra_runtime::yield_now();
        }
    }

    fn message(payload: Box<dyn std::any::Any + Send>) -> String {
        match payload.downcast::<String>() {
            Ok(message) => *message,
            Err(payload) => payload.downcast::<&str>().map(|m| m.to_string()).unwrap(),
        }
    }

    /// A wait on a send that delivered used to register its empty packet: the receive that
    /// then made room claimed it, found no value and panicked, leaving the waiter claimed and
    /// never finished (the test then cancels it, to fail instead of hanging).
    #[test]
    fn a_wait_on_a_send_that_delivered_selects_it_at_once() {
        for workers in [1, 2] {
            on_workers(workers, || {
                let (tx, rx) = bounded::<u32>(1);
                let token = CancelToken::new();
                let (received, waited) = fibra_runtime::scope(|s| {
                    let waiting = s.spawn(|| {
                        let options = ScopeOptions::new().token(token.clone());
                        fibra_runtime::scope_with(options, |_| {
                            let send = SendOp::new(&tx, 1);
                            assert_eq!(send.try_now(), Attempt::Completed);
                            // The channel is full now, so registering would park.
                            let woken = wait(&[Some(&send)], None);
                            (woken, send.outcome())
                        })
                    });
                    yield_many();
                    let received = catch_unwind(AssertUnwindSafe(|| rx.recv())).map_err(message);
                    if received.is_err() {
                        token.cancel();
                    }
                    (received, waiting.join().unwrap().ok())
                });
                assert_eq!(received, Ok(Some(1)));
                assert_eq!(waited, Some((Woken::Selected(0), Attempt::Completed)));
                assert_eq!(rx.chan().queued(), (0, 0, 0));
                assert_eq!(rx.try_recv(), Err(crate::TryRecvError::Empty));
            });
        }
    }

    #[test]
    fn a_completed_receive_keeps_its_value_and_receives_no_other() {
        let (tx, rx) = bounded::<u32>(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let recv = RecvOp::new(&rx);
        assert_eq!(recv.try_now(), Attempt::Completed);
        assert_eq!(recv.try_now(), Attempt::Completed);
        let soon = Instant::now() + Duration::from_millis(1);
        assert_eq!(wait(&[Some(&recv)], Some(soon)), Woken::Selected(0));
        assert_eq!(recv.outcome(), Attempt::Completed);
        assert_eq!(recv.into_value(), Some(1));
        assert_eq!(
            rx.recv(),
            Some(2),
            "the second value is still in the channel"
        );
    }

    #[test]
    fn an_operation_listed_twice_panics_before_registering() {
        let (tx, rx) = bounded::<u32>(1);
        let recv = RecvOp::new(&rx);
        let soon = Instant::now() + Duration::from_millis(1);
        let twice = catch_unwind(AssertUnwindSafe(|| {
            wait(&[Some(&recv), None, Some(&recv)], Some(soon))
        }));
        assert_eq!(
            message(twice.unwrap_err()),
            "op::wait: operation 2 is in a wait already (listed twice, or in another fiber's \
             wait on this thread)"
        );
        assert_eq!(rx.chan().queued(), (0, 0, 0));
        // Its marks are cleared: the operation is usable.
        tx.send(4).unwrap();
        assert_eq!(recv.try_now(), Attempt::Completed);
        assert_eq!(recv.into_value(), Some(4));
    }

    /// Fibers on one thread can share an operation (`Rc`, `&'static`); while one waits on it
    /// the packet belongs to the wait (a claimer on another thread may be writing it), and a
    /// second fiber's use used to take a second value and drop the first.
    #[test]
    fn another_fiber_cannot_use_an_operation_while_a_wait_has_it() {
        on_workers(1, || {
            let (tx, rx) = bounded::<u32>(1);
            let rx: &'static Reader<u32> = Box::leak(Box::new(rx));
            let recv = Rc::new(RecvOp::new(rx));
            let waiting = {
                let recv = recv.clone();
                fibra_runtime::spawn_local(move || wait(&[Some(&*recv)], None))
            };
            while rx.chan().queued() != (1, 0, 0) {
                fibra_runtime::yield_now();
            }
            tx.send(1).unwrap(); // handed to the parked wait
            tx.send(2).unwrap(); // buffered
            assert!(!waiting.is_finished(), "the wait has not returned yet");
            let in_use = "on a channel operation that is in a wait (of another fiber on this \
                          thread): a waiting operation belongs to its wait until the wait returns";
            let tried = catch_unwind(AssertUnwindSafe(|| recv.try_now()));
            assert_eq!(message(tried.unwrap_err()), format!("try_now {in_use}"));
            let outcome = catch_unwind(AssertUnwindSafe(|| recv.outcome()));
            assert_eq!(message(outcome.unwrap_err()), format!("outcome {in_use}"));
            let waited = catch_unwind(AssertUnwindSafe(|| wait(&[Some(&*recv)], None)));
            assert!(message(waited.unwrap_err()).starts_with("op::wait: operation 0 is in a wait"));

            assert_eq!(waiting.join().unwrap(), Woken::Selected(0));
            let recv = Rc::into_inner(recv).expect("the waiting fiber let go of it");
            assert_eq!(recv.into_value(), Some(1));
            assert_eq!(rx.recv(), Some(2));
        });
    }
}
