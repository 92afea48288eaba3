//! The receiving end of a mailbox, with OTP's selective receive.

use crate::core::{Proc, Taken};
use crate::{Pid, Signal};
use fibra_runtime::wait::{Deadline, WaitKind, WaitSite};
use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A process's mailbox, owned by the process: it is given to the process's function and
/// cannot leave its thread (it is neither `Send` nor `Sync`). It can be lent to another fiber
/// on the same worker (`spawn_local`), but one receive runs at a time: a receive while another
/// is under way, in a second fiber or in a receive's own pattern or guard, panics.
///
/// Every receive scans from the oldest message: the first one that matches is removed and
/// returned; the others stay, in order, and the next receive starts again at the oldest. A
/// receive with a timeout starts its clock when it first has to wait (after every message
/// was examined), and arrivals that do not match do not restart it; a zero timeout returns
/// as soon as every message was examined. Receives are cancellation points.
///
/// ```
/// use fibra::process::{self as process, Inbox, Signal};
///
/// process::run(|inbox: Inbox<u32>| {
///     let me = inbox.pid();
///     for n in [1, 2, 3] {
///         me.send(n);
///     }
///     // Take the first even message; 1 and 3 stay, in order.
///     let even = inbox.receive(|s| matches!(s, Signal::Msg(n) if n % 2 == 0));
///     assert_eq!(even.into_msg(), Some(2));
///     assert_eq!(inbox.recv().into_msg(), Some(1));
///     assert_eq!(inbox.recv().into_msg(), Some(3));
/// });
/// ```
pub struct Inbox<M: Send + 'static> {
    proc: Arc<Proc<M>>,
    /// Arrived, not yet received, oldest first.
    queue: RefCell<Queue<M>>,
    _owned: PhantomData<*const ()>,
}

/// The arrived signals, oldest first. A receive examines them where they are and takes the one
/// it wants out of its slot, leaving a hole, so skipping a signal moves nothing and the rest
/// keep their order; holes at the front are dropped when a receive returns, the others once
/// they are half the slots.
struct Queue<M> {
    slots: VecDeque<Option<Signal<M>>>,
    holes: usize,
    /// The vector the next batch of arrivals is swapped into (kept for its capacity).
    spare: Vec<Signal<M>>,
}

impl<M> Queue<M> {
    /// Drops holes at the front, and all of them once they are half the slots. Moves slots:
    /// only between receives.
    fn trim(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.holes -= 1;
        }
        if self.holes * 2 > self.slots.len() {
            self.slots.retain(Option::is_some);
            self.holes = 0;
        }
    }
}

impl<M: Send + 'static> Inbox<M> {
    pub(crate) fn new(proc: Arc<Proc<M>>) -> Inbox<M> {
        Inbox {
            proc,
            queue: RefCell::new(Queue {
                slots: VecDeque::new(),
                holes: 0,
                spare: Vec::new(),
            }),
            _owned: PhantomData,
        }
    }

    /// This process's address.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<u8>| assert!(process::is_alive(inbox.pid())));
    /// ```
    pub fn pid(&self) -> Pid<M> {
        Pid {
            proc: self.proc.clone(),
        }
    }

    /// The oldest signal of any kind, waiting for one if there is none.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<u8>| {
    ///     let me = inbox.pid();
    ///     process::spawn(move |_: Inbox<()>| me.send(5));
    ///     assert_eq!(inbox.recv().into_msg(), Some(5));
    /// });
    /// ```
    #[track_caller]
    pub fn recv(&self) -> Signal<M> {
        self.scan(None, Option::take)
            .expect("a receive without timeout returns a signal")
    }

    /// The oldest signal, if there is one now.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<u8>| {
    ///     assert!(inbox.try_recv().is_none());
    ///     inbox.pid().send(1);
    ///     assert_eq!(inbox.try_recv().and_then(|s| s.into_msg()), Some(1));
    /// });
    /// ```
    pub fn try_recv(&self) -> Option<Signal<M>> {
        self.scan(Some(Duration::ZERO), Option::take)
    }

    /// The oldest signal, waiting at most `timeout` for one; `None` if none came.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    /// use std::time::Duration;
    ///
    /// process::run(|inbox: Inbox<u8>| {
    ///     assert!(inbox.recv_timeout(Duration::from_millis(1)).is_none());
    /// });
    /// ```
    #[track_caller]
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Signal<M>> {
        self.scan(Some(timeout), Option::take)
    }

    /// The oldest signal for which `pred` is true, waiting for one; the others stay in order.
    /// `pred` must not receive itself (that panics).
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, Signal};
    ///
    /// process::run(|inbox: Inbox<char>| {
    ///     let me = inbox.pid();
    ///     me.send('a');
    ///     me.send('b');
    ///     assert_eq!(inbox.receive(|s| matches!(s, Signal::Msg('b'))).into_msg(), Some('b'));
    ///     assert_eq!(inbox.recv().into_msg(), Some('a'));
    /// });
    /// ```
    #[track_caller]
    pub fn receive(&self, mut pred: impl FnMut(&Signal<M>) -> bool) -> Signal<M> {
        self.scan(None, |slot| slot.take_if(|s| pred(s)))
            .expect("a receive without timeout returns a signal")
    }

    /// [`receive`](Inbox::receive) waiting at most `timeout` (from the moment it first waits);
    /// `None` if no matching signal came.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, Signal};
    /// use std::time::Duration;
    ///
    /// process::run(|inbox: Inbox<u8>| {
    ///     inbox.pid().send(1);
    ///     let two = inbox.receive_timeout(Duration::ZERO, |s| matches!(s, Signal::Msg(2)));
    ///     assert!(two.is_none());
    ///     assert_eq!(inbox.recv().into_msg(), Some(1)); // still there
    /// });
    /// ```
    #[track_caller]
    pub fn receive_timeout(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&Signal<M>) -> bool,
    ) -> Option<Signal<M>> {
        self.scan(Some(timeout), |slot| slot.take_if(|s| pred(s)))
    }

    /// Whether a signal for which `pred` is true is in the mailbox now. Takes none: every
    /// signal stays where it is, in order.
    pub(crate) fn peek(&self, mut pred: impl FnMut(&Signal<M>) -> bool) -> bool {
        let mut found = false;
        self.scan(Some(Duration::ZERO), |slot| {
            found = found || slot.as_ref().is_some_and(&mut pred);
            None::<()>
        });
        found
    }

    /// The selective receive under [`receive!`](crate::receive!): offers each signal, oldest
    /// first, to `test`, which tries the arms on it, notes in [`ReceiveArms`] the one that
    /// matched, if any, and hands it back; returns the first signal an arm matched, with the
    /// arm. Waits for arrivals when all were examined, at most `timeout` from the first wait.
    #[doc(hidden)]
    #[track_caller]
    pub fn select(
        &self,
        timeout: Option<Duration>,
        mut test: impl FnMut(Signal<M>, &mut ReceiveArms) -> Signal<M>,
    ) -> Option<(usize, Signal<M>)> {
        self.scan(timeout, |slot| {
            let mut arms = ReceiveArms::default();
            let signal = test(slot.take()?, &mut arms);
            if let Some(arm) = arms.matched {
                return Some((arm, signal));
            }
            *slot = Some(signal);
            if let Some(panic) = arms.panic {
                // Only now that the signal is back in its place.
                std::panic::resume_unwind(panic);
            }
            None
        })
    }

    /// The one selective receive: offers each signal's slot, oldest first, to `test`, which
    /// takes the signal out of it (and returns `Some`) or leaves it; waits for arrivals when
    /// all were examined, at most `timeout` from the first wait. A signal that is only looked
    /// at stays where it is.
    #[track_caller]
    fn scan<R>(
        &self,
        timeout: Option<Duration>,
        mut test: impl FnMut(&mut Option<Signal<M>>) -> Option<R>,
    ) -> Option<R> {
        // A cancellation point even when a message is ready: a killed process, or one of a
        // program that is ending, runs no more of its receive loop.
        fibra_runtime::checkpoint();
        self.proc.core.fail_unanswered();
        let mut queue = self.queue.try_borrow_mut().expect(
            "an Inbox received from while a receive on it is under way: in the receive's \
                 pattern or guard, or by a second fiber it was lent to (spawn_local)",
        );
        let queue = &mut *queue;
        let mut deadline: Option<Deadline> = None;
        // The first slot this receive has not examined.
        let mut next = 0;
        loop {
            while next < queue.slots.len() {
                // The deque's two halves walked as slices: indexing the deque costs a wrap-around
                // per signal, which a long scan of skipped signals feels.
                let (front, back) = queue.slots.as_mut_slices();
                let rest = match front.get_mut(next..) {
                    Some(rest) if !rest.is_empty() => rest,
                    _ => &mut back[next - front.len()..],
                };
                let mut found = None;
                for slot in rest {
                    next += 1;
                    if let Some(hit) = self.examine(slot, &mut queue.holes, &mut test) {
                        found = Some(hit);
                        break;
                    }
                }
                if let Some((taken, down)) = found {
                    queue.holes += 1;
                    return Some(self.took(queue, taken, down));
                }
            }
            match self.take_arrivals(queue) {
                Arrived::Nothing => {}
                Arrived::Many => continue,
                Arrived::One(signal) => {
                    // The newest signal, and every older one was examined: it is offered before
                    // it is queued, so the usual receive (one message per wake, taken) leaves
                    // the queue untouched. A signal left in the offer is queued when the offer
                    // drops, also when `test` unwinds (a pattern or guard that panics loses
                    // nothing).
                    let mut offer = Offer {
                        slots: &mut queue.slots,
                        slot: Some(signal),
                    };
                    let found = self.examine(&mut offer.slot, &mut 0, &mut test);
                    let left = offer.slot.is_some();
                    drop(offer);
                    if let Some((taken, down)) = found {
                        return Some(self.took(queue, taken, down));
                    }
                    if left {
                        next += 1;
                    }
                    continue;
                }
            }
            // Every signal was examined.
            let deadline = match (timeout, deadline) {
                (None, _) => Deadline::NEVER,
                (Some(timeout), None) if timeout.is_zero() => return None,
                (Some(_), Some(deadline)) if deadline.has_passed() => return None,
                (Some(_), Some(deadline)) => deadline,
                (Some(timeout), None) => *deadline.insert(Deadline::after(timeout)),
            };
            let arrivals = &self.proc.mailbox.arrivals;
            if !arrivals.wait(fibra_runtime::wait::current_waker()) {
                continue;
            }
            let site = WaitSite::new(WaitKind::Receive, &*self.proc);
            fibra_runtime::wait::park_current_until_at(deadline, &site);
            if deadline.has_passed() {
                arrivals.stop_waiting();
            }
        }
    }

    /// Offers the signal in `slot` to `test`; what it took, and the monitor of a `Down` it
    /// took. An empty slot is passed over, and a flushed `Down` is dropped unseen (its slot
    /// emptied and counted in `holes`). Inlined: it is the body of the scan's loop over
    /// skipped signals.
    #[inline(always)]
    fn examine<R>(
        &self,
        slot: &mut Option<Signal<M>>,
        holes: &mut usize,
        test: &mut impl FnMut(&mut Option<Signal<M>>) -> Option<R>,
    ) -> Option<(R, Option<u64>)> {
        let down = match slot {
            None => return None,
            Some(Signal::Down { mref, .. }) => {
                if self.flushed(mref.0) {
                    *slot = None;
                    *holes += 1;
                    self.proc.taken();
                    return None;
                }
                Some(mref.0)
            }
            Some(_) => None,
        };
        test(slot).map(|taken| (taken, down))
    }

    /// The end of a receive that took a signal (`down`: the monitor of a `Down` it took).
    fn took<R>(&self, queue: &mut Queue<M>, taken: R, down: Option<u64>) -> R {
        self.proc.taken();
        queue.trim();
        if let Some(mref) = down {
            // Dropped after the lock: it may be the last id of an ended process, whose drop
            // drops what is left in its mailbox, and a message's drop may park this fiber.
            let target = self.proc.core.lock().held.remove(&mref);
            drop(target);
        }
        taken
    }

    /// Takes what arrived: a lone signal is handed back, a batch is appended to `queue`.
    fn take_arrivals(&self, queue: &mut Queue<M>) -> Arrived<M> {
        match self.proc.mailbox.arrivals.take(&mut queue.spare) {
            Taken::Nothing => Arrived::Nothing,
            Taken::One(signal) => Arrived::One(signal),
            Taken::Many(first, mut rest) => {
                queue.slots.reserve(1 + rest.len());
                queue.slots.push_back(Some(first));
                queue.slots.extend(rest.drain(..).map(Some));
                queue.spare = rest;
                Arrived::Many
            }
        }
    }

    /// Whether the `Down` of `mref` was flushed by `demonitor` (and so is dropped unseen).
    fn flushed(&self, mref: u64) -> bool {
        let core = &self.proc.core;
        if core.flushed.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut state = core.lock();
        let Some(at) = state.flushed.iter().position(|&f| f == mref) else {
            return false;
        };
        state.flushed.swap_remove(at);
        core.flushed.fetch_sub(1, Ordering::AcqRel);
        true
    }
}

/// What [`receive!`](crate::receive!)'s arms found in one signal: the first arm that matched,
/// or the panic of a guard. A guard runs here rather than in the arms' `match`, which owns the
/// signal, so a guard that panics loses nothing: the panic is kept, the signal handed back and
/// put in its place, and only then the panic resumed.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct ReceiveArms {
    matched: Option<usize>,
    panic: Option<Box<dyn Any + Send>>,
}

impl ReceiveArms {
    /// Whether the next arm is to be tried: none matched and no guard panicked.
    pub fn trying(&self) -> bool {
        self.matched.is_none() && self.panic.is_none()
    }

    /// The value of an arm's guard; a guard that panics counts as false, and ends the trying.
    pub fn guard(&mut self, guard: impl FnOnce() -> bool) -> bool {
        std::panic::catch_unwind(AssertUnwindSafe(guard)).unwrap_or_else(|panic| {
            self.panic = Some(panic);
            false
        })
    }

    /// Notes that arm `arm` matched. False, so the `match` ends in its catch-all arm, which
    /// hands the signal back without a move in the matching arm.
    pub fn matched(&mut self, arm: usize) -> bool {
        self.matched = Some(arm);
        false
    }
}

/// What a look at the mailbox's arrivals found.
enum Arrived<M> {
    Nothing,
    /// One signal, not queued.
    One(Signal<M>),
    /// Several, appended to the queue.
    Many,
}

/// An [`Arrived::One`] signal offered to a receive before it is queued: whatever the offer
/// leaves in `slot` goes to the back of the queue when it drops, by unwinding too.
struct Offer<'a, M> {
    slots: &'a mut VecDeque<Option<Signal<M>>>,
    slot: Option<Signal<M>>,
}

impl<M> Drop for Offer<'_, M> {
    fn drop(&mut self) {
        if self.slot.is_some() {
            self.slots.push_back(self.slot.take());
        }
    }
}

impl<M: Send + 'static> std::fmt::Debug for Inbox<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Inbox, Signal};

    #[test]
    fn a_peek_finds_a_signal_and_leaves_every_one_in_order() {
        let status = crate::run(|inbox: Inbox<u8>| {
            let me = inbox.pid();
            assert!(!inbox.peek(|_| true), "an empty mailbox");
            for n in [1, 2, 3] {
                me.send(n);
            }
            assert!(inbox.peek(|s| matches!(s, Signal::Msg(2))));
            assert!(!inbox.peek(|s| matches!(s, Signal::Msg(4))));
            let rest: Vec<_> = std::iter::from_fn(|| inbox.try_recv())
                .filter_map(Signal::into_msg)
                .collect();
            assert_eq!(rest, [1, 2, 3]);
        });
        assert_eq!(status, 0);
    }
}
