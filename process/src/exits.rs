//! Exit signals and links: how processes end, and how their ends spread.

use crate::core::{System, Watcher};
use crate::current::current;
use crate::{monitor, registry, MonitorRef, ProcessId, Reason};
use std::collections::VecDeque;
use std::error::Error;
use std::fmt;

/// Ends `first` with `reason` unless it already ended, then every process its end kills in
/// turn, breadth first from one work list: a long chain of links ends without recursion.
///
/// For each process, in order: it is marked ended and its fiber cancelled (it unwinds at its
/// next cancellation point, so it sends, spawns or links nothing more meanwhile), the monitors
/// it holds are dropped, its name is freed, its monitors get their `Down`, the calls whose
/// request it dropped unanswered as it unwound fail, its links get their signals in link
/// order, and its `settled` gate opens.
///
/// Each process ended costs the caller a reduction, so a long cascade is spread over the
/// caller's slices (other fibers run between them) instead of holding its worker. The caller
/// cannot be cancelled meanwhile, not even when the cascade ends it or a message dropped
/// with a mailbox reaches a cancellation point: the cascade always runs to its end before
/// this returns.
pub(crate) fn end(first: ProcessId, reason: Reason) {
    fibra_runtime::shield(|| end_shielded(first, reason));
}

/// [`end`], inside its shield.
fn end_shielded(first: ProcessId, reason: Reason) {
    let me = crate::core::running_fiber();
    let mut work = VecDeque::from([(first, reason)]);
    while let Some((id, reason)) = work.pop_front() {
        fibra_runtime::checkpoint();
        let core = id.proc().core();
        let held = {
            let mut state = core.lock();
            if state.reason.is_some() {
                continue;
            }
            core.mark_ended(&mut state, reason.clone());
            state.ender = me;
            std::mem::take(&mut state.held)
        };
        let _settled = core.settled.opens_on_drop();
        core.group.cancel();
        // The monitors it holds go first (their targets' locks are taken one at a time).
        for (mref, target) in held {
            monitor::unwatch(&target, mref);
        }
        let (watchers, links, unanswered) = {
            let mut state = core.lock();
            if let Some(name) = state.name.take() {
                registry::release(&name, &id);
            }
            state.flushed.clear();
            let watchers = state.watchers.take().collect::<Vec<_>>();
            let links = state.links.take().collect::<Vec<_>>();
            (watchers, links, core.take_unanswered(&mut state))
        };
        // Told after the lock is released: a watcher's id may be the last of its process,
        // whose drop can drop messages still in its mailbox, and a message's drop may park.
        for watcher in watchers {
            match watcher {
                Watcher::Process { mref, watcher } => watcher.proc().post(System::Down {
                    mref: MonitorRef(mref),
                    pid: id.clone(),
                    reason: reason.clone(),
                }),
                Watcher::Call(sink) => sink.down(&reason),
            }
        }
        // After the `Down`s: a call on this process fails with its end, not as unanswered. A
        // request forwarded to it is failed only here (its caller does not watch it).
        for fail in unanswered {
            fail();
        }
        id.proc().discard_mailbox();
        for link in links {
            if let Some(next) = signal_link(&link, &id, &reason) {
                work.push_back((link, next));
            }
        }
        core.node.ended(&id, &reason);
    }
}

/// Delivers to `to` the exit signal of its link to `from`, which ended with `reason`; the
/// reason `to` ends with, if the signal ends it.
fn signal_link(to: &ProcessId, from: &ProcessId, reason: &Reason) -> Option<Reason> {
    let mut state = to.proc().core().lock();
    // Gone if `to` unlinked meanwhile: then the link has no effect.
    state.links.remove(from.number())?;
    if state.reason.is_some() {
        None
    } else if state.trap_exit {
        to.proc().post(System::Exit {
            from: from.clone(),
            reason: reason.clone(),
        });
        None
    } else {
        (!reason.is_normal()).then(|| reason.clone())
    }
}

/// Unwinds the caller if a signal it just sent ended it.
pub(crate) fn unwind_if_ended(me: &ProcessId) {
    if !me.proc().core().is_alive() {
        fibra_runtime::checkpoint();
    }
}

/// Sends an exit signal with `reason` to `pid`, as OTP's `exit/2`, and returns once it took
/// effect:
///
/// - [`Reason::Kill`] ends the process with [`Reason::Killed`], trapping or not;
/// - a process that traps exits gets `Signal::Exit { from: <caller>, reason }` instead;
/// - [`Reason::Normal`] is ignored, unless `pid` is the caller, which then ends normally;
/// - any other reason ends the process with that reason.
///
/// When this returns, an ended process is no longer alive ([`is_alive`] is false), its name
/// is free and its links and monitors have been signalled; its fiber unwinds (destructors
/// run) at its next cancellation point. A signal to an ended process does nothing. A process
/// that ends itself this way unwinds at once.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason};
///
/// process::run(|_: Inbox<()>| {
///     let sleeper = process::spawn(|inbox: Inbox<()>| loop {
///         inbox.recv();
///     });
///     process::exit(&sleeper, Reason::Kill);
///     assert!(!process::is_alive(&sleeper));
/// });
/// ```
#[track_caller]
pub fn exit(pid: impl Into<ProcessId>, reason: Reason) {
    let target = pid.into();
    let from = current("exit");
    let ends = {
        let state = target.proc().core().lock();
        if state.reason.is_some() {
            None
        } else if reason == Reason::Kill {
            Some(Reason::Killed)
        } else if state.trap_exit {
            target.proc().post(System::Exit {
                from: from.clone(),
                reason,
            });
            None
        } else if reason.is_normal() {
            (target == from).then_some(Reason::Normal)
        } else {
            Some(reason)
        }
    };
    match ends {
        Some(reason) if target == from => crate::spawn::end_self(&from, reason),
        Some(reason) => end(target, reason),
        // Ended already, perhaps by another fiber still at it: its end is complete first.
        None if !target.proc().core().is_alive() => target.proc().core().wait_settled(),
        None => {}
    }
    unwind_if_ended(&from);
}

/// [`link`] to a process that has ended, while not trapping exits.
///
/// ```
/// assert_eq!(fibra::process::NoProc.to_string(), "noproc: the process does not exist");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoProc;

impl fmt::Display for NoProc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("noproc: the process does not exist")
    }
}

impl Error for NoProc {}

/// Links the caller and `pid` in both directions: when either ends, the other gets an exit
/// signal with its reason. Linking to oneself or linking again does nothing.
///
/// # Errors
///
/// [`NoProc`] if `pid` has ended — unless the caller traps exits: then it gets
/// `Signal::Exit { from: pid, reason: Reason::Noproc }` and this returns `Ok`, as OTP does.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, NoProc, Reason};
///
/// process::run(|inbox: Inbox<()>| {
///     let (gone, _) = process::spawn_monitor(|_: Inbox<()>| {});
///     inbox.recv(); // its Down
///     assert_eq!(process::link(&gone), Err(NoProc));
/// });
/// ```
#[track_caller]
pub fn link(pid: impl Into<ProcessId>) -> Result<(), NoProc> {
    let other = pid.into();
    let me = current("link");
    if other == me {
        return Ok(());
    }
    match link_pair(&me, &other) {
        Ok(()) => Ok(()),
        Err(()) => {
            if me.proc().core().lock().trap_exit {
                me.proc().post(System::Exit {
                    from: other,
                    reason: Reason::Noproc,
                });
                Ok(())
            } else {
                Err(NoProc)
            }
        }
    }
}

/// Links `me` and `other`, two processes, unless `other` has ended (`Err`); both locks in
/// number order (one process's twice would spin for ever).
pub(crate) fn link_pair(me: &ProcessId, other: &ProcessId) -> Result<(), ()> {
    debug_assert!(me != other, "a process linked to itself");
    let (first, second) = if me.number() < other.number() {
        (me, other)
    } else {
        (other, me)
    };
    let mut first_state = first.proc().core().lock();
    let mut second_state = second.proc().core().lock();
    let (mine, theirs) = if first == me {
        (&mut *first_state, &mut *second_state)
    } else {
        (&mut *second_state, &mut *first_state)
    };
    if theirs.reason.is_some() {
        return Err(());
    }
    if mine.reason.is_none() && mine.links.insert(other.number(), other.clone()) {
        theirs.links.insert(me.number(), me.clone());
    }
    Ok(())
}

/// Removes the link between the caller and `pid`, on both sides; once this returns the link
/// has no effect (an `Exit` it already delivered stays in the mailbox, as in OTP). Does
/// nothing if there is no link.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason};
///
/// process::run(|_: Inbox<()>| {
///     let child = process::spawn_link(|inbox: Inbox<()>| loop {
///         inbox.recv();
///     });
///     process::unlink(&child);
///     process::exit(&child, Reason::custom("bye")); // does not reach the caller
///     assert!(!process::is_alive(&child));
/// });
/// ```
#[track_caller]
pub fn unlink(pid: impl Into<ProcessId>) {
    let other = pid.into();
    let me = current("unlink");
    if other == me {
        return;
    }
    let (first, second) = if me.number() < other.number() {
        (&me, &other)
    } else {
        (&other, &me)
    };
    let mut first_state = first.proc().core().lock();
    let mut second_state = second.proc().core().lock();
    first_state.links.remove(second.number());
    second_state.links.remove(first.number());
}

/// Sets whether the caller traps exits (initially false) and returns the previous setting.
/// A trapping process gets exit signals (other than an `exit(pid, Reason::Kill)`) as
/// `Signal::Exit` messages instead of ending.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     assert!(!process::trap_exit(true));
///     let child = process::spawn_link(|_: Inbox<()>| process::exit_self(Reason::custom("oops")));
///     match inbox.recv() {
///         Signal::Exit { from, reason } => {
///             assert_eq!(from, child.id());
///             assert_eq!(reason, Reason::custom("oops"));
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn trap_exit(trap: bool) -> bool {
    let me = current("trap_exit");
    let mut state = me.proc().core().lock();
    std::mem::replace(&mut state.trap_exit, trap)
}

/// Whether `pid` is still running: false once it has ended (by returning, panicking or an
/// exit signal). Works from any fiber or thread.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<()>| {
///     assert!(process::is_alive(inbox.pid()));
/// });
/// ```
pub fn is_alive(pid: impl Into<ProcessId>) -> bool {
    pid.into().proc().core().is_alive()
}

/// Ends the calling process with `reason`, as OTP's `exit/1`: its links and monitors are
/// signalled, an abnormal reason gets an error report, and the process unwinds from here
/// (destructors run).
///
/// # Panics
///
/// Outside a process; inside [`fibra::shield`](fibra_runtime::shield), which cannot unwind.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     let (_, mref) = process::spawn_monitor(|_: Inbox<()>| process::exit_self(Reason::Shutdown));
///     match inbox.recv() {
///         Signal::Down { mref: m, reason, .. } => assert_eq!((m, reason), (mref, Reason::Shutdown)),
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn exit_self(reason: Reason) -> ! {
    let me = current("exit_self");
    crate::spawn::end_self(&me, reason);
    fibra_runtime::checkpoint();
    panic!("fibra::process::exit_self() called inside fibra::shield, which cannot unwind");
}
