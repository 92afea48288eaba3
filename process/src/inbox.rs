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
    queue: RefCell<VecDeque<Signal<M>>>,
    /// During a receive: examined and left, oldest first; empty between receives.
    skipped: RefCell<VecDeque<Signal<M>>>,
    _owned: PhantomData<*const ()>,
}

/// Where a receive stands: puts the examined messages back in front when it ends, however
/// it ends (a cancellation unwinds through it).
struct Scan<'a, M> {
    queue: std::cell::RefMut<'a, VecDeque<Signal<M>>>,
    skipped: std::cell::RefMut<'a, VecDeque<Signal<M>>>,
}

impl<M> Drop for Scan<'_, M> {
    fn drop(&mut self) {
        if self.skipped.len() <= self.queue.len() {
            while let Some(signal) = self.skipped.pop_back() {
                self.queue.push_front(signal);
            }
        } else {
            self.skipped.append(&mut self.queue);
            std::mem::swap(&mut *self.queue, &mut *self.skipped);
        }
    }
}

impl<M: Send + 'static> Inbox<M> {
    pub(crate) fn new(proc: Arc<Proc<M>>) -> Inbox<M> {
        Inbox {
            proc,
            queue: RefCell::new(VecDeque::new()),
            skipped: RefCell::new(VecDeque::new()),
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
        self.select(None, Ok)
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
        self.select(Some(Duration::ZERO), Ok)
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
        self.select(Some(timeout), Ok)
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
        self.select(None, |s| if pred(&s) { Ok(s) } else { Err(s) })
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
        self.select(Some(timeout), |s| if pred(&s) { Ok(s) } else { Err(s) })
    }

    /// The selective receive under every receive and [`receive!`](crate::receive!): offers
    /// each signal, oldest first, to `test`, which takes it (`Ok`) or hands it back (`Err`);
    /// waits for arrivals when all were examined, at most `timeout` from the first wait.
    #[doc(hidden)]
    pub fn select<R>(
        &self,
        timeout: Option<Duration>,
        mut test: impl FnMut(Signal<M>) -> Result<R, Signal<M>>,
    ) -> Option<R> {
        // A cancellation point even when a message is ready: a killed process, or one of a
        // program that is ending, runs no more of its receive loop.
        fibra_runtime::checkpoint();
        let mut scan = Scan {
            queue: self
                .queue
                .try_borrow_mut()
                .expect("a receive inside a receive's pattern or guard"),
            skipped: self
                .skipped
                .try_borrow_mut()
                .expect("a receive inside a receive's pattern or guard"),
        };
        let mut deadline: Option<Deadline> = None;
        loop {
            while let Some(signal) = scan.queue.pop_front() {
                let down = match &signal {
                    Signal::Down { mref, .. } => {
                        if self.flushed(mref.0) {
                            self.proc.taken();
                            continue;
                        }
                        Some(mref.0)
                    }
                    _ => None,
                };
                match test(signal) {
                    Ok(taken) => {
                        self.proc.taken();
                        if let Some(mref) = down {
                            self.proc.core.lock().held.remove(&mref);
                        }
                        return Some(taken);
                    }
                    Err(signal) => scan.skipped.push_back(signal),
                }
            }
            if self.take_arrivals(&mut scan.queue) {
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
            self.proc
                .mailbox
                .waker
                .register(&fibra_runtime::wait::current_waker());
            if !self.proc.mailbox.arrivals.is_empty() {
                continue;
            }
            fibra_runtime::wait::park_current_until(deadline);
        }
    }

    /// Moves arrivals into `queue`; whether there were any.
    fn take_arrivals(&self, queue: &mut VecDeque<Signal<M>>) -> bool {
        let arrivals = &self.proc.mailbox.arrivals;
        let before = queue.len();
        // `is_empty` is two loads; a `pop` that finds nothing costs more.
        while !arrivals.is_empty() {
            match arrivals.pop() {
                Some(signal) => queue.push_back(signal),
                None => break,
            }
        }
        queue.len() > before
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
