//! `call`: a request with a typed reply, as OTP's `gen_server:call`.

use crate::core::{DownSink, Watcher};
use crate::current;
use crate::id::next_number;
use crate::{monitor, Pid, ProcessId, Reason};
use fibra_runtime::wait::{Deadline, RetryBudget, WaitKind, WaitSite};
use futures::task::AtomicWaker;
use std::error::Error;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a [`call`]'s reply goes: put it in a request message, and the callee answers with
/// [`reply`](ReplyTo::reply). Dropping it unanswered makes the call fail with
/// [`CallError::NoReply`] at once — unless a process drops it while it unwinds: then the
/// call fails when the panic is settled, as the process ends if it does (with
/// [`CallError::Down`] if it is the process called, else — a request forwarded to it — with
/// [`CallError::NoReply`]), or with [`CallError::NoReply`] at the process's next receive if
/// the process catches it.
///
/// ```
/// use fibra::process::{self as process, CallError, Inbox, ReplyTo, Signal};
/// use std::panic::{catch_unwind, AssertUnwindSafe};
/// use std::time::Duration;
///
/// process::run(|_: Inbox<()>| {
///     let server = process::spawn(|inbox: Inbox<ReplyTo<u8>>| loop {
///         if let Signal::Msg(reply) = inbox.recv() {
///             // A request that panics is dropped unanswered; the server goes on.
///             let _ = catch_unwind(AssertUnwindSafe(move || {
///                 let _reply = reply;
///                 panic!("bad request");
///             }));
///         }
///     });
///     let answer = process::call(&server, |r| r, Duration::from_secs(60));
///     assert_eq!(answer, Err(CallError::NoReply));
/// });
/// ```
pub struct ReplyTo<R> {
    /// The call's slot, seen as what settles it: the untyped [`Refusal`] it also is can be
    /// kept by itself when a refusal is deferred past the request's drop (no `R: 'static`
    /// bound on this type to turn the typed slot into one).
    slot: Arc<dyn Settle<R>>,
}

/// Why a [`call`] returned no reply.
///
/// ```
/// use fibra::process::{CallError, Reason};
/// assert_eq!(CallError::Timeout.to_string(), "call timed out");
/// assert_eq!(CallError::Down(Reason::Noproc).to_string(), "the callee ended: noproc");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// No reply came within the timeout.
    Timeout,
    /// The callee ended (or did not exist: [`Reason::Noproc`]) before replying.
    Down(Reason),
    /// The callee dropped the [`ReplyTo`] without replying.
    NoReply,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("call timed out"),
            CallError::Down(reason) => write!(f, "the callee ended: {reason}"),
            CallError::NoReply => f.write_str("the callee dropped the request without replying"),
        }
    }
}

impl Error for CallError {}

enum Outcome<R> {
    Waiting,
    Done(Result<R, CallError>),
    Taken,
}

struct Slot<R> {
    outcome: Mutex<Outcome<R>>,
    waker: AtomicWaker,
}

impl<R> Slot<R> {
    /// Settles the call unless it already is.
    fn settle(&self, result: Result<R, CallError>) {
        let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*outcome, Outcome::Waiting) {
            *outcome = Outcome::Done(result);
            drop(outcome);
            self.waker.wake();
        }
    }

    fn take(&self) -> Option<Result<R, CallError>> {
        let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *outcome, Outcome::Taken) {
            Outcome::Done(result) => Some(result),
            other => {
                *outcome = other;
                None
            }
        }
    }
}

impl<R: Send> DownSink for Slot<R> {
    fn down(&self, reason: &Reason) {
        self.settle(Err(CallError::Down(reason.clone())));
    }
}

/// Fails a call whose request was dropped unanswered.
trait Refusal: Send + Sync {
    fn refuse(&self);
}

impl<R: Send> Refusal for Slot<R> {
    fn refuse(&self) {
        self.settle(Err(CallError::NoReply));
    }
}

/// Settles a call with a reply of type `R` (or refuses it).
trait Settle<R>: Refusal {
    fn settle(&self, result: Result<R, CallError>);

    /// The same slot as the untyped refusal only (trait upcasting needs Rust 1.86).
    fn into_refusal(self: Arc<Self>) -> Arc<dyn Refusal>;
}

impl<R: Send + 'static> Settle<R> for Slot<R> {
    fn settle(&self, result: Result<R, CallError>) {
        Slot::settle(self, result);
    }

    fn into_refusal(self: Arc<Self>) -> Arc<dyn Refusal> {
        self
    }
}

impl<R> ReplyTo<R> {
    /// Answers the call. A reply that comes after the caller gave up is dropped.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, ReplyTo, Signal};
    /// use std::time::Duration;
    ///
    /// process::run(|_: Inbox<()>| {
    ///     let echo = process::spawn(|inbox: Inbox<(String, ReplyTo<String>)>| {
    ///         if let Signal::Msg((text, reply)) = inbox.recv() {
    ///             reply.reply(text);
    ///         }
    ///     });
    ///     let back = process::call(&echo, |r| ("hi".to_owned(), r), Duration::from_secs(5));
    ///     assert_eq!(back.as_deref(), Ok("hi"));
    /// });
    /// ```
    pub fn reply(self, value: R) {
        self.slot.settle(Ok(value));
    }
}

impl<R> Drop for ReplyTo<R> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.slot.refuse();
            return;
        }
        // Dropped by an unwinding process: its end, if the panic ends it (or ended it: a kill
        // unwinds it afterwards), refuses the call after its `Down`s, so a call on it fails
        // with its reason; if it catches the panic, its next receive refuses the call.
        match current::try_current() {
            Some(me) => {
                let refusal = self.slot.clone().into_refusal();
                me.proc()
                    .core()
                    .defer_unanswered(Box::new(move || refusal.refuse()));
            }
            None => self.slot.refuse(),
        }
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplyTo { .. }")
    }
}

/// Removes the call's monitor however the call ends (a cancellation unwinds through it).
struct Watching<'a> {
    target: &'a ProcessId,
    mref: u64,
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        monitor::unwatch(self.target, self.mref);
    }
}

/// Sends `pid` the request that `request` builds around a [`ReplyTo`] and waits at most
/// `timeout` for the reply, as OTP's `gen_server:call`. The callee is monitored while the
/// call waits, so a callee that ends (or has ended) fails the call at once with
/// [`CallError::Down`] instead of a timeout. Works from any fiber or thread, in a process or
/// not; a cancellation point.
///
/// # Errors
///
/// [`CallError`]: timeout, the callee's end, or a request dropped unanswered.
///
/// # Panics
///
/// When a process calls itself (it could never answer).
///
/// ```
/// use fibra::process::{self as process, Inbox, ReplyTo, Signal};
/// use std::time::Duration;
///
/// enum Counter {
///     Add(u64),
///     Get(ReplyTo<u64>),
/// }
///
/// process::run(|_: Inbox<()>| {
///     let counter = process::spawn(|inbox: Inbox<Counter>| {
///         let mut total = 0;
///         loop {
///             match inbox.recv() {
///                 Signal::Msg(Counter::Add(n)) => total += n,
///                 Signal::Msg(Counter::Get(reply)) => reply.reply(total),
///                 _ => {}
///             }
///         }
///     });
///     counter.send(Counter::Add(40));
///     counter.send(Counter::Add(2));
///     let total = process::call(&counter, Counter::Get, Duration::from_secs(5));
///     assert_eq!(total, Ok(42));
/// });
/// ```
#[track_caller]
pub fn call<M, R>(
    pid: &Pid<M>,
    request: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Duration,
) -> Result<R, CallError>
where
    M: Send + 'static,
    R: Send + 'static,
{
    if current::try_current().is_some_and(|me| *pid == me) {
        panic!("fibra::process::call() to the calling process itself, which cannot answer while it waits");
    }
    let deadline = Deadline::after(timeout);
    let slot = Arc::new(Slot {
        outcome: Mutex::new(Outcome::Waiting),
        waker: AtomicWaker::new(),
    });
    let target = pid.id();
    let mref = next_number();
    if monitor::watch(&target, mref, Watcher::Call(slot.clone())).is_err() {
        return Err(CallError::Down(Reason::Noproc));
    }
    let _watching = Watching {
        target: &target,
        mref,
    };
    pid.send(request(ReplyTo { slot: slot.clone() }));
    // Retries before parking (the toolkit's patience policy): the callee is usually a moment
    // from replying, on this worker or running on another, and a reply that comes meanwhile
    // costs neither side a park and a wake-up.
    let mut budget = RetryBudget::new();
    let result = loop {
        if let Some(result) = slot.take() {
            break result;
        }
        if budget.retry() {
            continue;
        }
        slot.waker.register(&fibra_runtime::wait::current_waker());
        if let Some(result) = slot.take() {
            break result;
        }
        if deadline.has_passed() {
            break Err(CallError::Timeout);
        }
        // Recorded for dumps, without an owner: the reply may come from another process the
        // request was forwarded to, so a cycle of calls is no certain deadlock.
        let site = WaitSite::new(WaitKind::Call, target.proc());
        fibra_runtime::wait::park_current_until_at(deadline, &site);
    };
    match result {
        // A request sent to a callee that ended meanwhile is dropped unanswered: that is its
        // end, not a refusal.
        Err(CallError::NoReply) => match target.proc().core().lock().reason.clone() {
            Some(reason) => Err(CallError::Down(reason)),
            None => Err(CallError::NoReply),
        },
        other => other,
    }
}
