//! The one registration-and-wait routine every blocking `recv`, `send`, `*_timeout`, async
//! operation and `select` is built on, and the one park of all of them: registers one waiter
//! on every operation, parks until exactly one completes (or a deadline passes), and removes
//! the other registrations. The park is the cancellation point: a cancelled fiber withdraws
//! its waiter and unwinds out of it, and the registration guard removes the registrations on
//! the way out. Only a wait that nobody has claimed unwinds, so nothing is lost: a wait that a
//! channel is completing (mid-handoff) waits for it, and a wait that completed returns its
//! outcome even if a cancellation woke it too (a send that delivered reports so, a receive
//! returns its value); the caller's next cancellation point unwinds. While the caller is
//! already unwinding no park starts another unwind (the runtime's park never does).
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
use crate::core::waiter::{Ended, Progress, Waiter};
use fibra_runtime::wait::{
    current_waker, park_current_until_at_checked_if, Deadline, WaitKind, WaitSite,
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
        // Withdrawn, or unwinding out of the park: make sure nobody claims us from here on. A
        // cancellation unwinds only a waiter it withdrew, but another unwind (a deadlock
        // verdict) can come while a claim is under way: unregistering every operation
        // (including the claimed one) takes each channel's lock after the claimer's, so it has
        // finished when this returns — and its outcome must not be lost with the unwinding
        // caller.
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
/// cancellation point: a cancelled fiber unwinds from it unless a channel had begun completing
/// an operation first (then the wait returns as if not cancelled, and the caller's next
/// cancellation point unwinds).
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
/// before it could withdraw is waited for until done (its claimer is mid-handoff), whatever
/// the deadline. A cancelled fiber unwinds out of the park only once it has withdrawn the
/// waiter, before it suspends: a waiter already claimed goes on waiting, and an operation that
/// completed is returned (once woken the fiber looks at the waiter first), whatever else woke
/// the fiber; the caller's next cancellation point unwinds. The caller's registration guard
/// cleans up after an unwind. It parks at once, without yielding first: the caller already
/// retried before registering (see the toolkit's patience policy, `fibra_runtime::wait`).
/// Each park records the wait on `ops`.
#[inline]
#[track_caller]
fn block(waiter: &Waiter, ops: &[Option<&dyn Operation>], deadline: Deadline) -> Parked {
    loop {
        let until = match waiter.progress() {
            Progress::Ended(ended) => return parked(ended),
            // The claimer wakes us once done.
            Progress::Claimed => Deadline::NEVER,
            Progress::Unclaimed if !deadline.has_passed() => deadline,
            Progress::Unclaimed => match waiter.try_abort() {
                Ok(()) => return Parked::Deadline,
                // Claimed meanwhile.
                Err(()) => continue,
            },
        };
        park_current_until_at_checked_if(until, &site(ops), || waiter.try_abort().is_ok());
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
    use crate::core::chan::Registration;
    use crate::core::waiter::Waiter;
    use crate::op::in_wait::WaitMark;
    use crate::op::operation::sealed::{Identity, RetryBy, Sealed, Token, TOKEN};
    use crate::op::{Attempt, Operation, RecvOp, SendOp};
    use crate::{bounded, Reader};
    use fibra_runtime::wait::{Deadline, WaitKind};
    use fibra_runtime::{CancelToken, ScopeOptions};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::rc::Rc;
    use std::sync::{Mutex, MutexGuard};
    use std::task::Waker;
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

    /// A wait queue with room for one waiter, whose claimer the test drives by hand: a
    /// stand-in for a channel whose sender, on another thread, is in the middle of a handoff.
    #[derive(Default)]
    struct HandOff(Mutex<HandOffState>);

    #[derive(Default)]
    struct HandOffState {
        registered: Option<Entry>,
        /// Claimed, the handoff under way.
        claimed: Option<Entry>,
        delivered: Option<u32>,
    }

    struct Entry {
        waiter: *const Waiter,
        oper: usize,
        waker: Waker,
    }

    // SAFETY: `waiter` points at a `Waiter`, which is `Sync`; it is only dereferenced under the
    // hand-off's lock while the entry is in it, and the waiter's owner empties the hand-off
    // under that lock (`unregister`) before the waiter can go, so any thread holding the lock
    // and finding the entry there may use it.
    unsafe impl Send for Entry {}

    impl HandOff {
        fn lock(&self) -> MutexGuard<'_, HandOffState> {
            self.0.lock().unwrap()
        }

        fn is_registered(&self) -> bool {
            self.lock().registered.is_some()
        }

        /// Claims the registered waiter: the handoff is under way until [`HandOff::finish`].
        fn claim(&self) {
            let mut state = self.lock();
            let entry = state.registered.take().expect("a waiter is registered");
            // SAFETY: the entry was in the hand-off, under the lock we hold (see `Entry`).
            assert!(unsafe { &*entry.waiter }.try_claim(entry.oper));
            state.claimed = Some(entry);
        }

        /// Completes the claimed handoff with `value`, as a sender would; false if the waiter
        /// went first (its owner unwound and unregistered).
        fn finish(&self, value: u32) -> bool {
            let mut state = self.lock();
            let Some(entry) = state.claimed.take() else {
                return false;
            };
            state.delivered = Some(value);
            // SAFETY: the entry was in the hand-off, under the lock we hold (see `Entry`), and
            // this is the one finish of the claim won in `claim`.
            unsafe { (*entry.waiter).finish(entry.oper) };
            drop(state);
            entry.waker.wake();
            true
        }
    }

    /// A receive from a [`HandOff`].
    struct Handed<'a> {
        hand_off: &'a HandOff,
        mark: WaitMark,
    }

    impl Sealed for Handed<'_> {
        fn wait_mark(&self) -> &WaitMark {
            &self.mark
        }

        fn has_completed(&self, _: Token) -> bool {
            self.hand_off.lock().delivered.is_some()
        }

        fn register(&self, waiter: &Waiter, oper: usize, waker: Waker) -> Registration {
            self.hand_off.lock().registered = Some(Entry {
                waiter,
                oper,
                waker,
            });
            Registration::Waiting(Deadline::NEVER)
        }

        fn unregister(&self, _: &Waiter, _: usize) {
            let mut state = self.hand_off.lock();
            state.registered = None;
            state.claimed = None;
        }

        fn abandon(&self, _: Token) {}

        fn retry_by(&self) -> RetryBy<'_> {
            RetryBy::Nobody
        }

        fn waits_on(&self) -> (WaitKind, &dyn Identity) {
            (WaitKind::Recv, self.hand_off)
        }
    }

    impl Operation for Handed<'_> {
        fn try_now(&self) -> Attempt {
            match self.has_completed(TOKEN) {
                true => Attempt::Completed,
                false => Attempt::NotReady,
            }
        }

        fn outcome(&self) -> Attempt {
            Attempt::Completed
        }
    }

    /// An operation nobody claims, whose registration runs `on_register` (something that
    /// happens meanwhile on other threads) and answers what it returns.
    struct Meanwhile<'a> {
        on_register: &'a dyn Fn() -> Registration,
        mark: WaitMark,
    }

    impl Sealed for Meanwhile<'_> {
        fn wait_mark(&self) -> &WaitMark {
            &self.mark
        }

        fn has_completed(&self, _: Token) -> bool {
            false
        }

        fn register(&self, _: &Waiter, _: usize, _: Waker) -> Registration {
            (self.on_register)()
        }

        fn unregister(&self, _: &Waiter, _: usize) {}

        fn abandon(&self, _: Token) {}

        fn retry_by(&self) -> RetryBy<'_> {
            RetryBy::Nobody
        }

        fn waits_on(&self) -> (WaitKind, &dyn Identity) {
            (WaitKind::Select, &self.mark)
        }
    }

    impl Operation for Meanwhile<'_> {
        fn try_now(&self) -> Attempt {
            Attempt::NotReady
        }

        fn outcome(&self) -> Attempt {
            Attempt::Completed
        }
    }

    /// When a wait's only operation is claimed, and its scope cancelled, before the claimer
    /// completes it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Window {
        /// While the wait is parked (the cancellation wakes it).
        WhileParked,
        /// While it registers, before it first parks.
        WhileRegistering,
        /// While it registers, and another operation is then found ready.
        BeforeAnotherWasReady,
        /// While it registers, with its deadline passed already.
        PastItsDeadline,
    }

    /// Runs a wait on a [`Handed`] receive in a fiber of its own, inside a scope cancelled by a
    /// token, on the caller's worker (the only one); claims the waiter and cancels the scope in
    /// `window`, lets the waiting fiber run, then finishes the handoff of a value. Returns
    /// whether the handoff could finish, what the wait returned with the value received, and
    /// whether the waiting fiber's next cancellation point unwound.
    fn handed_over_while_cancelled(window: Window) -> (bool, Option<(Woken, Option<u32>)>, bool) {
        let hand_off = HandOff::default();
        let token = CancelToken::new();
        fibra_runtime::scope(|s| {
            let waiting = s.spawn(|| {
                let mut waited = None;
                let options = ScopeOptions::new().token(token.clone());
                let unwound = fibra_runtime::scope_with(options, |_| {
                    let handed = Handed {
                        hand_off: &hand_off,
                        mark: WaitMark::default(),
                    };
                    // What the other operation, if any, answers once the claim came.
                    let registration = match window {
                        Window::WhileParked => None,
                        Window::BeforeAnotherWasReady => Some(Registration::Ready),
                        Window::WhileRegistering | Window::PastItsDeadline => {
                            Some(Registration::Waiting(Deadline::NEVER))
                        }
                    };
                    let claim_and_cancel = || {
                        hand_off.claim();
                        token.cancel();
                        registration.expect("only a wait with another operation registers it")
                    };
                    let meanwhile = registration.map(|_| Meanwhile {
                        on_register: &claim_and_cancel,
                        mark: WaitMark::default(),
                    });
                    let deadline = match window {
                        Window::PastItsDeadline => Deadline::at(Instant::now()),
                        _ => Deadline::NEVER,
                    };
                    let ops: [Option<&dyn Operation>; 2] =
                        [Some(&handed), meanwhile.as_ref().map(|m| m as _)];
                    let woken = wait(&ops, deadline);
                    waited = Some((woken, hand_off.lock().delivered));
                    fibra_runtime::checkpoint();
                });
                (waited, unwound.is_err())
            });
            if window == Window::WhileParked {
                while !hand_off.is_registered() {
                    fibra_runtime::yield_now();
                }
                hand_off.claim();
                token.cancel();
            }
            // The waiting fiber runs meanwhile, cancelled, its waiter claimed.
            yield_many();
            let finished = hand_off.finish(7);
            let (waited, unwound) = waiting.join().unwrap();
            (finished, waited, unwound)
        })
    }

    /// A wait whose operation a claimer had claimed but not yet completed when its scope was
    /// cancelled used to unwind at the park, withdrawing its registration: the claimer could
    /// not finish (a real sender's value went back to the channel, or its delivery was reported
    /// as cancelled). It waits for the handoff and returns it; the next cancellation point
    /// unwinds.
    #[test]
    fn a_wait_claimed_before_its_cancellation_returns_the_handoff() {
        let windows = [
            Window::WhileParked,
            Window::WhileRegistering,
            Window::BeforeAnotherWasReady,
            Window::PastItsDeadline,
        ];
        let outcomes = windows.map(|window| {
            let outcome = fibra_testing::on(1, || handed_over_while_cancelled(window));
            (window, outcome)
        });
        let returned = (true, Some((Woken::Selected(0), Some(7))), true);
        assert_eq!(outcomes, windows.map(|window| (window, returned)));
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
