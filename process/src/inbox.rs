//! The receiving end of a mailbox, with OTP's selective receive.

use crate::core::Proc;
use crate::{Pid, Signal};
use fibra_runtime::wait::Deadline;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A process's mailbox, owned by the process: it is given to the process's function and
/// cannot leave its fiber (it is neither `Send` nor `Sync`).
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
    /// only between receives. `holes` may count too few (a receive's test that panicked after
    /// taking a signal out), which only delays a compaction.
    fn trim(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.holes = self.holes.saturating_sub(1);
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
    pub fn receive_timeout(
        &self,
        timeout: Duration,
        mut pred: impl FnMut(&Signal<M>) -> bool,
    ) -> Option<Signal<M>> {
        self.scan(Some(timeout), |slot| slot.take_if(|s| pred(s)))
    }

    /// The selective receive under [`receive!`](crate::receive!): offers each signal, oldest
    /// first, to `test`, which takes it (`Ok`) or hands it back (`Err`); waits for arrivals
    /// when all were examined, at most `timeout` from the first wait.
    #[doc(hidden)]
    pub fn select<R>(
        &self,
        timeout: Option<Duration>,
        mut test: impl FnMut(Signal<M>) -> Result<R, Signal<M>>,
    ) -> Option<R> {
        self.scan(timeout, |slot| match test(slot.take()?) {
            Ok(taken) => Some(taken),
            Err(signal) => {
                *slot = Some(signal);
                None
            }
        })
    }

    /// The one selective receive: offers each signal's slot, oldest first, to `test`, which
    /// takes the signal out of it (and returns `Some`) or leaves it; waits for arrivals when
    /// all were examined, at most `timeout` from the first wait. A signal that is only looked
    /// at stays where it is.
    fn scan<R>(
        &self,
        timeout: Option<Duration>,
        mut test: impl FnMut(&mut Option<Signal<M>>) -> Option<R>,
    ) -> Option<R> {
        // A cancellation point even when a message is ready: a killed process, or one of a
        // program that is ending, runs no more of its receive loop.
        fibra_runtime::checkpoint();
        let mut queue = self
            .queue
            .try_borrow_mut()
            .expect("a receive inside a receive's pattern or guard");
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
                    let down = match slot {
                        None => continue,
                        Some(Signal::Down { mref, .. }) => {
                            if self.flushed(mref.0) {
                                *slot = None;
                                queue.holes += 1;
                                self.proc.taken();
                                continue;
                            }
                            Some(mref.0)
                        }
                        Some(_) => None,
                    };
                    if let Some(taken) = test(slot) {
                        found = Some((taken, down));
                        break;
                    }
                }
                if let Some((taken, down)) = found {
                    queue.holes += 1;
                    self.proc.taken();
                    queue.trim();
                    if let Some(mref) = down {
                        self.proc.core.lock().held.remove(&mref);
                    }
                    return Some(taken);
                }
            }
            if self.take_arrivals(queue) {
                continue;
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
            if !arrivals.wait(fibra_runtime::wait::current_waker) {
                continue;
            }
            fibra_runtime::wait::park_current_until(deadline);
            if deadline.has_passed() {
                arrivals.stop_waiting();
            }
        }
    }

    /// Moves arrivals into `queue`; whether there were any.
    fn take_arrivals(&self, queue: &mut Queue<M>) -> bool {
        let mut batch = self
            .proc
            .mailbox
            .arrivals
            .take_all(std::mem::take(&mut queue.spare));
        let any = !batch.is_empty();
        // A lone arrival (a message per wake: the usual batch) is pushed: `extend` from a
        // drain costs several times a push for one element, and far less per element for many.
        if batch.len() == 1 {
            queue.slots.push_back(batch.pop());
        } else {
            queue.slots.extend(batch.drain(..).map(Some));
        }
        queue.spare = batch;
        any
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

impl<M: Send + 'static> std::fmt::Debug for Inbox<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}
