//! Channel operations as values: a receive or a send that can be tried now, or registered in
//! a wait (see `wait`).

use super::in_wait::WaitMark;
use crate::core::chan::{Chan, Registration, Side};
use crate::core::packet::Packet;
use crate::core::waiter::Waiter;
use crate::error::{TryRecvError, TrySendError};
use crate::{Reader, Writer};
use fibra_runtime::wait::{Key, WaitKind};
use std::cell::Cell;
use std::fmt;
use std::task::Waker;

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

/// The key of an operation's registration while it is in a wait (only its own thread reaches
/// it: operations are not `Sync`).
#[derive(Default)]
struct KeySlot(Cell<Option<Key>>);

impl KeySlot {
    /// Registers `(waiter, oper, packet, waker)` on `side` of `chan`, keeping the key.
    fn register<T>(
        &self,
        chan: &Chan<T>,
        side: Side,
        (waiter, oper, packet, waker): (&Waiter, usize, &Packet<T>, Waker),
    ) -> Registration {
        let (registration, key) = chan.register(side, waiter, oper, packet, waker);
        self.0.set(key);
        registration
    }

    /// Removes the registration, if there is one.
    fn unregister<T>(&self, chan: &Chan<T>, side: Side, waiter: &Waiter, oper: usize) {
        if let Some(key) = self.0.take() {
            chan.unregister(side, key, waiter, oper);
        }
    }
}

pub(crate) mod sealed {
    use super::super::in_wait::WaitMark;
    use crate::core::chan::Registration;
    use crate::core::retry_slot::RetrySlot;
    use crate::core::waiter::Waiter;
    use fibra_runtime::wait::WaitKind;
    use std::task::Waker;

    /// What the methods that touch an operation's value slot without a check take. Code
    /// outside this crate can call `Sealed`'s methods through an `Operation` bound, though it
    /// cannot name the trait, but it cannot make a `Token`: without it, `abandon` or
    /// `has_completed` called by another fiber while the operation is in a wait would race
    /// with the claimer writing the slot.
    #[derive(Clone, Copy, Debug)]
    pub struct Token(());

    /// The one way to make a [`Token`].
    pub(crate) const TOKEN: Token = Token(());

    /// The registration half of [`Operation`](super::Operation), private to this crate.
    pub trait Sealed {
        /// Set while a wait uses the operation (see `in_wait`).
        fn wait_mark(&self) -> &WaitMark;
        /// Whether the operation has completed (a receive holds its value, a send delivered).
        /// Only for the wait that has just marked it: it looks at the packet.
        fn has_completed(&self, _: Token) -> bool;
        /// Registers operation number `oper` of `waiter`, whose claimer is to wake `waker`,
        /// unless it can complete now.
        fn register(&self, waiter: &Waiter, oper: usize, waker: Waker) -> Registration;
        /// Removes the registration of operation `oper` of `waiter`, which can no longer be
        /// claimed (it withdrew, or a claimer decided it). Once this returns, no claimer
        /// touches this operation any more.
        fn unregister(&self, waiter: &Waiter, oper: usize);
        /// The operation completed but its caller is unwinding (cancelled) and will never see
        /// the outcome: undo what can be undone without loss (a received value goes back to
        /// the channel).
        fn abandon(&self, _: Token);
        /// Who may retry this operation (see `patience`).
        fn retry_by(&self) -> RetryBy<'_>;
        /// What a wait on this operation alone waits for, and the object (a channel, a cancel
        /// token) whose address identifies it in a dump.
        fn waits_on(&self) -> (WaitKind, &dyn Identity);
    }

    /// Anything whose address can identify what a wait waits on (see `waits_on`).
    pub trait Identity {}

    impl<T: ?Sized> Identity for T {}

    /// Who may retry an operation instead of waiting.
    #[derive(Debug)]
    pub enum RetryBy<'a> {
        /// The holder of this slot: one caller at a time retries on a channel side.
        Holder(&'a RetrySlot),
        /// Anyone: retrying costs the operation nothing (a look at a cancel token).
        Anyone,
        /// Nobody, because retrying cannot help: a send on a rendezvous channel completes only
        /// against a registered receiver (two sides that only retried would never meet), and a
        /// wait for a close is rare and long.
        Nobody,
    }

    impl<'a> RetryBy<'a> {
        /// A channel side's retry slot, if retrying can help there.
        #[inline]
        pub(crate) fn of(slot: Option<&'a RetrySlot>) -> Self {
            slot.map_or(RetryBy::Nobody, RetryBy::Holder)
        }
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
///
/// Only a wait (or a channel future) takes an operation through its registration, whose steps
/// are reachable through this trait but cannot be called from outside this crate: another
/// fiber giving back a value while the operation is in a wait would race with the sender
/// handing it over.
///
/// ```compile_fail
/// use fibra::chan::op::Operation;
/// fn give_back<O: Operation>(op: &O) {
///     op.abandon();
/// }
/// ```
pub trait Operation: sealed::Sealed {
    /// Tries to complete the operation without waiting. An operation that has completed stays
    /// completed: a receive holding its value does not receive another.
    ///
    /// # Panics
    ///
    /// While the operation is in a [`wait`](super::wait()) (another fiber's, on this thread).
    ///
    /// ```
    /// use fibra::chan::op::{Attempt, Operation, RecvOp};
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// assert_eq!(RecvOp::new(&rx).try_now(), Attempt::NotReady);
    /// ```
    fn try_now(&self) -> Attempt;

    /// How the operation ended, after [`wait`](super::wait()) selected it: [`Attempt::Completed`] or
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
    ///     if let Woken::Selected(_) = op::wait(&[Some(&recv)], fibra::wait::Deadline::NEVER) {
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
    key: KeySlot,
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
            key: KeySlot::default(),
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

    fn has_completed(&self, _: sealed::Token) -> bool {
        // SAFETY: the wait that marked the op calls this before registering it, so no entry
        // points at the packet and this thread has it to itself.
        unsafe { self.packet.is_full() }
    }

    fn register(&self, waiter: &Waiter, oper: usize, waker: Waker) -> Registration {
        let entry = (waiter, oper, &self.packet, waker);
        self.key.register(self.chan, self.side, entry)
    }

    fn unregister(&self, waiter: &Waiter, oper: usize) {
        self.key.unregister(self.chan, self.side, waiter, oper);
    }

    fn abandon(&self, _: sealed::Token) {
        // SAFETY: called once the wait is over (done observed through the unregistration
        // barrier, registrations gone), so this thread owns the packet again.
        let (value, handoff) = unsafe { (self.packet.take(), self.packet.handoff()) };
        // Only a completed registration is abandoned: its value was handed over, numbered.
        if let Some(value) = value {
            self.chan.reinject(value, handoff);
        }
    }

    fn retry_by(&self) -> sealed::RetryBy<'_> {
        sealed::RetryBy::of(self.chan.retry_slot(self.side))
    }

    fn waits_on(&self) -> (WaitKind, &dyn sealed::Identity) {
        (WaitKind::Recv, self.chan)
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
    key: KeySlot,
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
            key: KeySlot::default(),
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

    fn has_completed(&self, _: sealed::Token) -> bool {
        // SAFETY: as in `RecvOp::has_completed`.
        !unsafe { self.packet.is_full() }
    }

    fn register(&self, waiter: &Waiter, oper: usize, waker: Waker) -> Registration {
        let entry = (waiter, oper, &self.packet, waker);
        self.key.register(self.chan, Side::Send, entry)
    }

    fn unregister(&self, waiter: &Waiter, oper: usize) {
        self.key.unregister(self.chan, Side::Send, waiter, oper);
    }

    /// A delivered value stays delivered; a refused one is dropped with the unwinding caller.
    fn abandon(&self, _: sealed::Token) {}

    fn retry_by(&self) -> sealed::RetryBy<'_> {
        sealed::RetryBy::of(self.chan.retry_slot(Side::Send))
    }

    fn waits_on(&self) -> (WaitKind, &dyn sealed::Identity) {
        (WaitKind::Send, self.chan)
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
