//! What the macros expand to. Not public API: names and signatures may change at any time.

pub use crate::engine::{select, Fallback, DEFAULT};
pub use fibra_channels::op::Operation;

use fibra_channels::op::{CancelledOp, RecvOp, SendOp};
use fibra_channels::{Reader, SendError, Writer};
use fibra_runtime::CancelToken;

/// Makes the receive operation of a `recv(r)` arm; a method so that `r` may be a `Reader` or
/// any reference to one (method calls auto-dereference).
pub trait RecvTarget<T> {
    /// A receive of a value.
    fn __fibra_recv(&self) -> RecvOp<'_, T>;
    /// A wait for closed-and-drained.
    fn __fibra_recv_closed(&self) -> RecvOp<'_, T>;
}

impl<T> RecvTarget<T> for Reader<T> {
    fn __fibra_recv(&self) -> RecvOp<'_, T> {
        RecvOp::new(self)
    }

    fn __fibra_recv_closed(&self) -> RecvOp<'_, T> {
        RecvOp::closed(self)
    }
}

/// Makes the send operation of a `send(w, v)` arm.
pub trait SendTarget<T> {
    /// A send of `value`.
    fn __fibra_send(&self, value: T) -> SendOp<'_, T>;
}

impl<T> SendTarget<T> for Writer<T> {
    fn __fibra_send(&self, value: T) -> SendOp<'_, T> {
        SendOp::new(self, value)
    }
}

/// Makes the operation of a `cancelled(token)` arm.
pub trait CancelTarget {
    /// A wait for the token to be cancelled.
    fn __fibra_cancelled(&self) -> CancelledOp<'_>;
}

impl CancelTarget for CancelToken {
    fn __fibra_cancelled(&self) -> CancelledOp<'_> {
        CancelledOp::new(self)
    }
}

/// Whether a `recv` arm's pattern accepts `None` (the closed channel), asked by running the
/// pattern test `test` on `None`; `op` only fixes the type.
pub fn accepts_none<T>(_op: &Option<RecvOp<'_, T>>, test: impl FnOnce(Option<T>) -> bool) -> bool {
    test(None)
}

/// An arm's operation, if enabled, as a trait object.
pub trait Arm {
    /// The operation the engine waits on.
    fn as_dyn(&self) -> Option<&dyn Operation>;
}

impl<O: Operation> Arm for Option<O> {
    fn as_dyn(&self) -> Option<&dyn Operation> {
        self.as_ref().map(|op| op as &dyn Operation)
    }
}

impl<T> Arm for Option<SendFrom<'_, '_, T>> {
    fn as_dyn(&self) -> Option<&dyn Operation> {
        self.as_ref().map(|arm| &arm.op as &dyn Operation)
    }
}

/// Turns an arm's operation into its result if the arm won (dropping it otherwise: a losing
/// send's value is dropped, as Go drops it).
pub trait Finish {
    /// What the arm's pattern binds.
    type Output;
    /// The result, if `won`.
    fn finish(self, won: bool) -> Option<Self::Output>;
}

impl<T> Finish for Option<RecvOp<'_, T>> {
    type Output = Option<T>;

    fn finish(self, won: bool) -> Option<Option<T>> {
        let op = self.filter(|_| won)?;
        Some(op.into_value())
    }
}

impl<T> Finish for Option<SendOp<'_, T>> {
    type Output = Result<(), SendError<T>>;

    fn finish(self, won: bool) -> Option<Result<(), SendError<T>>> {
        let op = self.filter(|_| won)?;
        Some(match op.into_value() {
            None => Ok(()),
            Some(value) => Err(SendError(value)),
        })
    }
}

impl Finish for Option<CancelledOp<'_>> {
    type Output = ();

    fn finish(self, won: bool) -> Option<()> {
        self.filter(|_| won).map(drop)
    }
}

/// A `send_from` arm's send of the value taken from its slot, and the slot, to put the value
/// back into if another arm wins.
pub struct SendFrom<'w, 's, T> {
    op: SendOp<'w, T>,
    slot: &'s mut Option<T>,
}

impl<T> std::fmt::Debug for SendFrom<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendFrom").finish_non_exhaustive()
    }
}

impl<'w, 's, T> SendFrom<'w, 's, T> {
    /// The send of `slot`'s value made by `send`; none (the arm is disabled) if it is empty.
    pub fn start(slot: &'s mut Option<T>, send: impl FnOnce(T) -> SendOp<'w, T>) -> Option<Self> {
        let op = send(slot.take()?);
        Some(SendFrom { op, slot })
    }

    /// The arm's result if it won; otherwise its value, if it still has it, goes back into its
    /// slot.
    pub fn finish_or_keep(arm: Option<Self>, won: bool) -> Option<Result<(), SendError<T>>> {
        let SendFrom { op, slot } = arm?;
        if won {
            return Some(op).finish(true);
        }
        *slot = op.into_value();
        None
    }
}

/// The winning arm's result.
#[track_caller]
pub fn won<R>(result: Option<R>) -> R {
    result.expect("select: the winning arm has no result")
}

/// A received value that the arm's pattern does not match.
#[cold]
#[track_caller]
pub fn unmatched() -> ! {
    panic!("select: the arm's pattern did not match the value it received")
}

/// The default arm's slot when there is none.
#[cold]
pub fn no_default() -> ! {
    unreachable!("select: no arm won and there is no default")
}
