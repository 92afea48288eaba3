//! The one registration-and-wait routine every blocking `recv`, `send`, `*_timeout`, async
//! operation and `select` is built on, and the one park of all of them: registers one waiter
//! on every operation, parks until exactly one completes (or a deadline passes), and removes
//! the other registrations. The park is the cancellation point: a cancelled fiber unwinds out
//! of it, and the registration guard withdraws the waiter on the way out, so nothing is lost —
//! a value already handed to a cancelled receive goes back to the channel. Only a wait that
//! has not completed unwinds: once woken, a wait that completed returns its outcome even if a
//! cancellation woke it too (a send that delivered reports so, a receive returns its value),
//! and the caller's next cancellation point unwinds. While the caller is already unwinding no
//! park starts another unwind (the runtime's park never does).
//!
//! While it parks, the wait records its site for `fibra::dump` and deadlock reports: a wait
//! over one slot records that operation's kind (a receive, a send) and channel, a wait over
//! several records a select on the first enabled operation's channel; the location is the
//! caller's, through `#[track_caller]` from the user's call down to the park. The site is made
//! only when the caller is about to park, so an operation completed without waiting never pays
//! for it.

use super::in_wait::InWait;
use super::operation::sealed::TOKEN;
use super::operation::Operation;
use crate::core::chan::Registration;
use crate::core::waiter::{Ended, Waiter};
use fibra_runtime::wait::{
    current_waker, park_current_until_at_checked_before, Deadline, WaitKind, WaitSite,
};
use std::task::Waker;

/// How a [`wait`] ended.
///
/// ```
/// use fibra::chan::op::{self, RecvOp, Woken};
/// use std::time::{Duration, Instant};
/// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
/// let recv = RecvOp::new(&rx);
/// let soon = Instant::now() + Duration::from_millis(1);
/// let woken = op::wait(&[Some(&recv)], soon);
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

/// Registers `waiter` on the operations in order (skipping `None`s) until one is ready, each
/// entry with a waker for the caller: the last the caller's `waker` itself, the others clones
/// (a single operation's wait clones none). Returns how many leading slots were registered and
/// the outcome: `Waiting` with the earliest timer deadline, or `Ready` (then the ready one, at
/// the returned count, is not registered).
pub(crate) fn register_all(
    ops: &[Option<&dyn Operation>],
    waiter: &Waiter,
    waker: Waker,
) -> (usize, Registration) {
    let last = ops.iter().rposition(Option::is_some);
    let mut waker = Some(waker);
    let mut wake_at = Deadline::NEVER;
    for (oper, op) in ops.iter().enumerate() {
        let Some(op) = op else { continue };
        let waker = match Some(oper) == last {
            true => waker.take(),
            false => waker.clone(),
        };
        match op.register(
            waiter,
            oper,
            waker.expect("only the last entry takes the waker"),
        ) {
            Registration::Ready => return (oper, Registration::Ready),
            Registration::Waiting(at) => wake_at = wake_at.min(at),
        }
    }
    (ops.len(), Registration::Waiting(wake_at))
}

/// Removes `waiter`'s registrations from the first `count` slots. The waiter must be decided
/// or withdrawn (no claim can come any more); the entry of an operation a claimer completed is
/// gone already and costs no lock.
pub(crate) fn unregister_all(ops: &[Option<&dyn Operation>], waiter: &Waiter, count: usize) {
    for (oper, op) in ops[..count].iter().enumerate() {
        if let Some(op) = op {
            op.unregister(waiter, oper);
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
    /// Whether the caller saw how the wait ended (it sees the outcome of a completed
    /// operation); false while parked or unwinding.
    seen: bool,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.seen {
            unregister_all(self.ops, self.waiter, self.count);
            return;
        }
        // Withdrawn, or unwinding out of the park (cancelled before anything completed): make
        // sure nobody claims us from here on. If a claim came first (it was under way when the
        // park unwound), unregistering every operation (including the claimed one) takes each
        // channel's lock after the claimer's, so it has finished when this returns — and its
        // outcome must not be lost with the unwinding caller.
        let _ = self.waiter.try_abort();
        unregister_all(self.ops, self.waiter, self.count);
        if let Some(oper) = self.waiter.done() {
            if let Some(op) = self.ops[oper] {
                op.abandon(TOKEN);
            }
        }
    }
}

/// Registers the caller on every operation (`None` slots are skipped), parks until one of
/// them completes or `deadline` (an `Instant` or a [`Deadline`]) passes, and removes the other
/// registrations. The one blocking wait of every channel operation and of `select`; it is a
/// cancellation point: a cancelled fiber unwinds from it unless an operation completed first
/// (then the wait returns it, and the caller's next cancellation point unwinds).
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
///     match op::wait(&[Some(&recv)], deadline) {
///         Woken::Retry => continue,
///         other => break other,
///     }
/// };
/// assert_eq!(woken, Woken::TimedOut);
/// ```
#[track_caller]
pub fn wait(ops: &[Option<&dyn Operation>], deadline: impl Into<Deadline>) -> Woken {
    wait_then(ops, deadline.into(), || {})
}

/// [`wait`], calling `on_registered` once the registrations are made, before parking.
#[track_caller]
pub(crate) fn wait_then(
    ops: &[Option<&dyn Operation>],
    deadline: Deadline,
    on_registered: impl FnOnce(),
) -> Woken {
    let in_wait = match InWait::enter(ops) {
        Ok(in_wait) => in_wait,
        Err(completed) => {
            on_registered();
            return Woken::Selected(completed);
        }
    };
    let waiter = Waiter::new();
    let (count, registration) = register_all(ops, &waiter, current_waker());
    on_registered();
    let mut registered = Registered {
        _in_wait: in_wait,
        ops,
        waiter: &waiter,
        count,
        seen: false,
    };
    let parked = match registration {
        Registration::Ready => match waiter.try_abort() {
            Ok(()) => return Woken::Retry,
            // Claimed while we were registering: that operation completes.
            Err(()) => block(&waiter, ops, Deadline::NEVER),
        },
        Registration::Waiting(wake_at) => block(&waiter, ops, deadline.min(wake_at)),
    };
    registered.seen = true;
    drop(registered);
    match parked {
        Parked::Done(oper) => Woken::Selected(oper),
        Parked::Retry => Woken::Retry,
        Parked::Deadline if deadline.has_passed() => Woken::TimedOut,
        Parked::Deadline => Woken::Retry,
    }
}

/// How a [`block`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parked {
    /// Operation `oper` completed.
    Done(usize),
    /// A claimer woke the waiter without completing anything: try again.
    Retry,
    /// The deadline passed first; the waiter is withdrawn.
    Deadline,
}

/// Parks until `waiter` is done (or woken to retry) or `deadline` passes. A waiter claimed
/// before it could withdraw is waited for until done (its claimer is mid-handoff). A
/// cancelled fiber unwinds out of the park, but only before it suspends: once woken it looks
/// at the waiter first, so an operation that completed is returned, whatever else woke the
/// fiber. The caller's registration guard cleans up after an unwind. It
/// parks at once, without yielding first: the caller already retried before registering (see
/// the toolkit's patience policy, `fibra_runtime::wait`). Each park records the wait on `ops`.
#[inline]
#[track_caller]
fn block(waiter: &Waiter, ops: &[Option<&dyn Operation>], mut deadline: Deadline) -> Parked {
    loop {
        if let Some(ended) = waiter.ended() {
            return parked(ended);
        }
        if !deadline.has_passed() {
            park_current_until_at_checked_before(deadline, &site(ops));
        } else if waiter.try_abort().is_ok() {
            return Parked::Deadline;
        } else {
            // Claimed meanwhile: the claimer wakes us once done.
            deadline = Deadline::NEVER;
        }
    }
}

/// What a wait on `ops` waits for, at the caller's location (module documentation).
#[inline]
#[track_caller]
fn site<'a>(ops: &'a [Option<&'a dyn Operation>]) -> WaitSite<'a> {
    match ops.iter().flatten().next() {
        Some(first) => {
            let (kind, object) = first.waits_on();
            let kind = if ops.len() == 1 {
                kind
            } else {
                WaitKind::Select
            };
            WaitSite::new(kind, object)
        }
        // Nothing enabled: a wait that only its deadline (or a cancellation) ends.
        None => WaitSite::new(WaitKind::Select, ops),
    }
}

fn parked(ended: Ended) -> Parked {
    match ended {
        Ended::Done(oper) => Parked::Done(oper),
        Ended::Retry => Parked::Retry,
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
    fibra_runtime::checkpoint();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{wait, Woken};
    use crate::op::{Attempt, Operation, RecvOp, SendOp};
    use crate::{bounded, Reader};
    use fibra_runtime::wait::Deadline;
    use fibra_runtime::{CancelToken, ScopeOptions};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::rc::Rc;
    use std::time::{Duration, Instant};

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
            fibra_testing::on(workers, || {
                let (tx, rx) = bounded::<u32>(1);
                let token = CancelToken::new();
                let (received, waited) = fibra_runtime::scope(|s| {
                    let waiting = s.spawn(|| {
                        let options = ScopeOptions::new().token(token.clone());
                        fibra_runtime::scope_with(options, |_| {
                            let send = SendOp::new(&tx, 1);
                            assert_eq!(send.try_now(), Attempt::Completed);
                            // The channel is full now, so registering would park.
                            let woken = wait(&[Some(&send)], Deadline::NEVER);
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

    /// Runs `wait` in a fiber of its own, inside a scope cancelled by a token, on the caller's
    /// worker (the only one), until `rx`'s channel has `parked` waiters; then cancels the scope
    /// and runs `complete`, which completes the parked wait before its fiber runs again.
    /// Returns what `wait` returned, `None` if it unwound.
    fn completed_after_its_cancellation<R: Send>(
        rx: &Reader<u32>,
        parked: (usize, usize, usize),
        wait: impl FnOnce() -> R + Send,
        complete: impl FnOnce(),
    ) -> Option<R> {
        let token = CancelToken::new();
        fibra_runtime::scope(|s| {
            let waiting = s.spawn(|| {
                let mut outcome = None;
                let options = ScopeOptions::new().token(token.clone());
                // The scope reports its cancellation even when its body returned.
                let _ = fibra_runtime::scope_with(options, |_| outcome = Some(wait()));
                outcome
            });
            while rx.chan().queued() != parked {
                fibra_runtime::yield_now();
            }
            token.cancel();
            complete();
            waiting.join().unwrap()
        })
    }

    /// A parked send woken by its cancellation and completed by a receive before it ran again
    /// used to unwind from the park, though its value was delivered: a caller that retries on
    /// a timeout sent twice.
    #[test]
    fn a_send_completed_after_its_cancellation_reports_the_delivery() {
        fibra_testing::on(1, || {
            let (tx, rx) = bounded::<u32>(0);
            let sent = completed_after_its_cancellation(
                &rx,
                (0, 1, 0),
                || tx.send(7),
                || assert_eq!(rx.try_recv(), Ok(7)),
            );
            assert_eq!(sent, Some(Ok(())));
            assert_eq!(rx.chan().queued(), (0, 0, 0));
        });
    }

    /// The receive's counterpart: its value used to go back to the channel.
    #[test]
    fn a_receive_completed_after_its_cancellation_returns_its_value() {
        fibra_testing::on(1, || {
            let (tx, rx) = bounded::<u32>(0);
            let received = completed_after_its_cancellation(
                &rx,
                (1, 0, 0),
                || rx.recv(),
                || assert_eq!(tx.try_send(7), Ok(())),
            );
            assert_eq!(received, Some(Some(7)));
            assert_eq!(rx.try_recv(), Err(crate::TryRecvError::Empty));
        });
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
        assert_eq!(wait(&[Some(&recv)], soon), Woken::Selected(0));
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
            wait(&[Some(&recv), None, Some(&recv)], soon)
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
        fibra_testing::on(1, || {
            let (tx, rx) = bounded::<u32>(1);
            let rx: &'static Reader<u32> = Box::leak(Box::new(rx));
            let recv = Rc::new(RecvOp::new(rx));
            let waiting = {
                let recv = recv.clone();
                fibra_runtime::spawn_local(move || wait(&[Some(&*recv)], Deadline::NEVER))
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
            let waited = catch_unwind(AssertUnwindSafe(|| wait(&[Some(&*recv)], Deadline::NEVER)));
            assert!(message(waited.unwrap_err()).starts_with("op::wait: operation 0 is in a wait"));

            assert_eq!(waiting.join().unwrap(), Woken::Selected(0));
            let recv = Rc::into_inner(recv).expect("the waiting fiber let go of it");
            assert_eq!(recv.into_value(), Some(1));
            assert_eq!(rx.recv(), Some(2));
        });
    }
}
