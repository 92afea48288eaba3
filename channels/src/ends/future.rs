//! Channel operations from async code: the same operations and the same registration as the
//! blocking forms, with the task's waker instead of a parked fiber.
//!
//! A future registers on its first `Pending` poll and stays registered across polls (a new
//! waker re-registers). Dropping it withdraws; if a value had already been handed to a
//! dropped receive, the value goes back to the channel, so nothing is lost.

use crate::core::chan::Registration;
use crate::core::waiter::{Ended, Waiter};
use crate::error::SendError;
use crate::op::{register_all, unregister_all, Attempt, Operation, RecvOp, SendOp, TOKEN};
use fibra_runtime::wait::TaskTimer;
use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A registered operation, at a stable address for as long as its entries exist.
struct Parked<O> {
    waiter: Waiter,
    /// The waker the registration was made with, to tell whether a later poll comes from
    /// the same task (the waiter's own copy belongs to whoever claims it).
    polled_by: Waker,
    op: O,
    count: usize,
    timer: Option<TaskTimer>,
}

impl<O: Operation> Parked<O> {
    /// Withdraws the registration: `Ok(op)` if nothing completed (the wait was withdrawn, or a
    /// channel woke it to try again), `Err(op)` if the operation completed first. Either way no entry points at the box any more.
    // Boxed on purpose: the entries point into the box, so the contents may move out only
    // after they are unregistered.
    #[allow(clippy::boxed_local)]
    fn withdraw(self: Box<Self>) -> Result<O, O> {
        let _ = self.waiter.try_abort();
        // Also a barrier: a claimer that came first has finished once this returns.
        unregister_all(&[Some(&self.op)], &self.waiter, self.count);
        let Parked { op, waiter, .. } = *self;
        match waiter.done() {
            None => Ok(op),
            Some(_) => Err(op),
        }
    }
}

enum State<O> {
    Idle(O),
    Parked(Box<Parked<O>>),
    Finished,
}

/// Drives one operation to its end from `poll`s.
struct AsyncOp<O: Operation> {
    state: State<O>,
}

impl<O: Operation> AsyncOp<O> {
    fn new(op: O) -> Self {
        AsyncOp {
            state: State::Idle(op),
        }
    }

    /// Polls the operation; once it ended, gives it back with how it ended.
    ///
    /// While registered, the box lives in `self.state` and nowhere else: if anything panics
    /// (a timer made outside a tokio runtime with time, or after its runtime shut down),
    /// `Drop` finds it there and withdraws it, so no entry is left pointing at freed memory.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<(O, Attempt)> {
        loop {
            let parked = match &mut self.state {
                State::Idle(_) => match self.register(cx) {
                    ControlFlow::Break(poll) => return poll,
                    ControlFlow::Continue(()) => continue,
                },
                State::Parked(parked) => parked,
                State::Finished => panic!("a channel future was polled after it completed"),
            };
            match parked.waiter.ended() {
                Some(Ended::Done(_)) => {
                    let Parked { op, .. } = *self.take_parked();
                    return Poll::Ready(ended(op));
                }
                Some(Ended::Retry) => {
                    self.state = State::Idle(self.take_parked().withdraw().unwrap_or_else(|_| {
                        unreachable!("a waiter woken to retry completed nothing")
                    }));
                    continue;
                }
                None => {}
            }
            let due = parked
                .timer
                .as_mut()
                .is_some_and(|timer| Pin::new(timer).poll(cx).is_ready());
            if !due && parked.polled_by.will_wake(cx.waker()) {
                return Poll::Pending;
            }
            // A timer channel's deadline came, or another task polls us: start over.
            match self.take_parked().withdraw() {
                Ok(op) => self.state = State::Idle(op),
                Err(op) => return Poll::Ready(ended(op)),
            }
        }
    }

    /// From `State::Idle`: tries the operation, and registers it if it is not ready. Breaks
    /// with what `poll` returns, or continues when the state is to be looked at again (`Idle`
    /// after a registration found the operation ready to retry, `Parked` when its deadline
    /// has come already).
    fn register(&mut self, cx: &mut Context<'_>) -> ControlFlow<Poll<(O, Attempt)>> {
        let State::Idle(op) = std::mem::replace(&mut self.state, State::Finished) else {
            unreachable!("registering an operation that is not idle")
        };
        match op.try_now() {
            Attempt::NotReady => {}
            done => return ControlFlow::Break(Poll::Ready((op, done))),
        }
        let mut parked = Box::new(Parked {
            waiter: Waiter::new(),
            polled_by: cx.waker().clone(),
            op,
            count: 0,
            timer: None,
        });
        let (count, registration) =
            register_all(&[Some(&parked.op)], &parked.waiter, cx.waker().clone());
        parked.count = count;
        let wake_at = match registration {
            Registration::Ready => {
                return match parked.withdraw() {
                    Ok(op) => {
                        self.state = State::Idle(op);
                        ControlFlow::Continue(())
                    }
                    Err(op) => ControlFlow::Break(Poll::Ready(ended(op))),
                };
            }
            Registration::Waiting(wake_at) => wake_at,
        };
        self.state = State::Parked(parked);
        if wake_at.is_never() {
            return ControlFlow::Break(Poll::Pending);
        }
        // Made and polled in place: `TaskTimer` may panic.
        let State::Parked(parked) = &mut self.state else {
            unreachable!("just parked")
        };
        let timer = parked.timer.insert(TaskTimer::at(wake_at));
        if Pin::new(timer).poll(cx).is_ready() {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(Poll::Pending)
        }
    }

    /// Takes the registered box out of `self.state`, to withdraw it or finish.
    fn take_parked(&mut self) -> Box<Parked<O>> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Parked(parked) => parked,
            _ => unreachable!("the operation is not registered"),
        }
    }
}

/// An operation that completed while registered, and how.
fn ended<O: Operation>(op: O) -> (O, Attempt) {
    let outcome = op.outcome();
    (op, outcome)
}

impl<O: Operation> Drop for AsyncOp<O> {
    fn drop(&mut self) {
        if let State::Parked(parked) = std::mem::replace(&mut self.state, State::Finished) {
            if let Err(op) = parked.withdraw() {
                op.abandon(TOKEN);
            }
        }
    }
}

/// The future of [`Reader::recv_async`](crate::Reader::recv_async).
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(1);
/// tx.send(1).unwrap();
/// let future: fibra::chan::RecvFuture<'_, i32> = rx.recv_async();
/// assert_eq!(futures::executor::block_on(future), Some(1));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    op: AsyncOp<RecvOp<'a, T>>,
}

impl<'a, T> RecvFuture<'a, T> {
    pub(crate) fn new(op: RecvOp<'a, T>) -> Self {
        RecvFuture {
            op: AsyncOp::new(op),
        }
    }
}

// The value is never pinned (it is moved in and out of the packet), so neither is the future.
impl<T> Unpin for RecvFuture<'_, T> {}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let (op, _) = std::task::ready!(self.get_mut().op.poll(cx));
        Poll::Ready(op.into_value())
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture").finish_non_exhaustive()
    }
}

/// The future of [`Writer::send_async`](crate::Writer::send_async).
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(1);
/// let future: fibra::chan::SendFuture<'_, i32> = tx.send_async(2);
/// futures::executor::block_on(future).unwrap();
/// assert_eq!(rx.recv(), Some(2));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    op: AsyncOp<SendOp<'a, T>>,
}

impl<'a, T> SendFuture<'a, T> {
    pub(crate) fn new(op: SendOp<'a, T>) -> Self {
        SendFuture {
            op: AsyncOp::new(op),
        }
    }
}

// As for `RecvFuture`.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (op, attempt) = std::task::ready!(self.get_mut().op.poll(cx));
        Poll::Ready(match attempt {
            Attempt::Completed => Ok(()),
            _ => Err(SendError(
                op.into_value()
                    .expect("an undelivered send keeps its value"),
            )),
        })
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture").finish_non_exhaustive()
    }
}
