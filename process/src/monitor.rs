//! Monitors: one-way watches that end in a `Down` message.

use crate::core::{Proc, System, Watcher};
use crate::current::current;
use crate::id::next_number;
use crate::{registry, MonitorRef, ProcessId, Reason};
use fibra_runtime::CancelGroup;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Starts monitoring `pid`: when it ends, the caller gets
/// `Signal::Down { mref, pid, reason }` with its exit reason — at once, with
/// [`Reason::Noproc`], if it has already ended. Every call makes a monitor of its own; a
/// process's `Down`s go out in the order its monitors were made. Monitoring oneself does
/// nothing. The monitors a process holds are dropped when it ends. A cancellation point.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     let worker = process::spawn(|_: Inbox<()>| process::exit_self(Reason::custom("done")));
///     let mref = process::monitor(&worker);
///     match inbox.recv() {
///         Signal::Down { mref: m, reason, .. } => {
///             assert_eq!(m, mref);
///             // Noproc if it ended before the monitor was made.
///             assert!(reason == Reason::custom("done") || reason == Reason::Noproc);
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn monitor(pid: impl Into<ProcessId>) -> MonitorRef {
    let target = pid.into();
    let me = current("monitor");
    // A process ended while busy runs on to its next cancellation point: it makes no monitor.
    fibra_runtime::checkpoint();
    let mref = next_number();
    if target == me {
        return MonitorRef(mref);
    }
    if add(&me, &target, mref).is_err() {
        me.proc().post(System::Down {
            mref: MonitorRef(mref),
            pid: target,
            reason: Reason::Noproc,
        });
    }
    MonitorRef(mref)
}

/// Makes monitor `mref` of `me`, the calling process, on `target`; `Err` if `target` has
/// ended. Held by `me` first: a `Down` that arrives at once can still be flushed by
/// `demonitor`. Unwinds the caller if it has been ended (by another fiber, since its last
/// cancellation point): its end drops the monitors it holds, and one made after it would stay
/// on the target until the target ends.
pub(crate) fn add(me: &ProcessId, target: &ProcessId, mref: u64) -> Result<(), ()> {
    {
        let mut state = me.proc().core().lock();
        if state.reason.is_some() {
            drop(state);
            // In a shield, which does not unwind: no monitor.
            fibra_runtime::checkpoint();
            return Ok(());
        }
        state.held.insert(mref, target.clone());
    }
    let watcher = Watcher::Process {
        mref,
        watcher: me.clone(),
    };
    let watched = watch(target, mref, watcher);
    if !me.proc().core().is_alive() {
        // Ended meanwhile: its end may have taken the monitors it held before this one was
        // on the target.
        unwatch(target, mref);
        fibra_runtime::checkpoint();
    }
    watched
}

/// [`monitor`] of the process registered as `name`, resolved now. If there is none, the
/// `Down` (with [`Reason::Noproc`]) comes at once and names a process that never ran.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     let mref = process::monitor_name("nobody-has-this-name");
///     match inbox.recv() {
///         Signal::Down { mref: m, reason, .. } => {
///             assert_eq!((m, reason), (mref, Reason::Noproc));
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn monitor_name(name: &str) -> MonitorRef {
    let me = current("monitor_name");
    let target = registry::whereis_id(name).unwrap_or_else(|| nobody(&me));
    monitor(target)
}

/// A process that never ran, for the `Down` of a name nobody has.
fn nobody(me: &ProcessId) -> ProcessId {
    let proc = Proc::<()>::new(me.proc().core().node.clone(), CancelGroup::new(), None);
    {
        let mut state = proc.core.lock();
        proc.core.mark_ended(&mut state, Reason::Noproc);
    }
    proc.core.settled.open();
    ProcessId(Arc::new(proc))
}

/// Stops the monitor `mref`: no `Down` comes from it afterwards. Returns whether it was still
/// active (OTP's `info`). With `flush`, a `Down` it already delivered is removed from the
/// mailbox as well (OTP's `flush`); without, such a `Down` stays. A reference that is not an
/// active monitor of the caller gives `false`.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason};
///
/// process::run(|inbox: Inbox<()>| {
///     let (worker, mref) = process::spawn_monitor(|_: Inbox<()>| {});
///     while process::is_alive(&worker) {
///         fibra::yield_now();
///     }
///     // It ended, so its Down is in the mailbox: flush removes it.
///     assert!(!process::demonitor(mref, true));
///     assert!(inbox.try_recv().is_none());
/// });
/// ```
#[track_caller]
pub fn demonitor(mref: MonitorRef, flush: bool) -> bool {
    let me = current("demonitor");
    let core = me.proc().core();
    let target = core.lock().held.remove(&mref.0);
    let Some(target) = target else {
        return false;
    };
    let active = unwatch(&target, mref.0);
    if !active {
        // The target's end took the monitor: its `Down` is delivered once that end is
        // complete, which must come before this returns.
        target.proc().core().wait_settled();
    }
    if !active && flush {
        // Not active but held: its `Down` was delivered and not yet received.
        core.lock().flushed.push(mref.0);
        core.flushed.fetch_add(1, Ordering::AcqRel);
    }
    active
}

/// Adds `watcher` to `target`'s monitors as `mref`; `Err` if `target` has ended.
pub(crate) fn watch(target: &ProcessId, mref: u64, watcher: Watcher) -> Result<(), ()> {
    let mut state = target.proc().core().lock();
    if state.reason.is_some() {
        return Err(());
    }
    state.watchers.insert(mref, watcher);
    Ok(())
}

/// Removes monitor `mref` from `target`; whether it was there.
pub(crate) fn unwatch(target: &ProcessId, mref: u64) -> bool {
    // The watcher is dropped after the lock (see `Inbox::took`).
    let removed = target.proc().core().lock().watchers.remove(mref);
    removed.is_some()
}

#[cfg(test)]
mod tests {
    use crate::{Inbox, Reason, Signal};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn the_monitors_an_ended_process_held_are_removed_from_their_targets() {
        let status = crate::run(|inbox: Inbox<()>| {
            let target = crate::spawn(|inbox: Inbox<()>| loop {
                inbox.recv();
            });
            let watched = target.id();
            let (_, _) = crate::spawn_monitor(move |_: Inbox<()>| {
                crate::monitor(&watched);
                crate::monitor(&watched);
            });
            assert!(matches!(inbox.recv(), Signal::Down { .. }));
            assert_eq!(target.id().proc().core().lock().watchers.take().count(), 0);
            crate::exit(&target, Reason::Kill);
        });
        assert_eq!(status, 0);
    }

    /// A process ended while busy runs on to its next cancellation point: a `monitor` there
    /// unwinds it, rather than leaving a watcher of an ended process on a live target.
    #[test]
    fn a_process_ended_while_busy_unwinds_at_monitor_and_leaves_no_watcher() {
        // One worker: the busy process yields (no cancellation point) while the main one
        // runs, wherever the two would have started.
        let runtime = fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap();
        let status = runtime.block_on(|| {
            crate::run(|_: Inbox<()>| {
                let target = crate::spawn(|inbox: Inbox<()>| loop {
                    inbox.recv();
                });
                let [started, go, past] = [(); 3].map(|()| Arc::new(AtomicBool::new(false)));
                let busy = crate::spawn({
                    let (started, go, past, target) =
                        (started.clone(), go.clone(), past.clone(), target.id());
                    move |_: Inbox<()>| {
                        started.store(true, Ordering::SeqCst);
                        // Busy: no cancellation point until `monitor` (a yield is none).
                        while !go.load(Ordering::SeqCst) {
                            fibra_runtime::yield_now();
                        }
                        crate::monitor(&target);
                        past.store(true, Ordering::SeqCst);
                    }
                });
                while !started.load(Ordering::SeqCst) {
                    fibra_runtime::yield_now();
                }
                crate::exit(&busy, Reason::Kill);
                go.store(true, Ordering::SeqCst);
                busy.id().proc().core().ran.wait();
                assert!(!past.load(Ordering::SeqCst), "it ran on past `monitor`");
                assert_eq!(target.id().proc().core().lock().watchers.take().count(), 0);
                crate::exit(&target, Reason::Kill);
            })
        });
        assert_eq!(status, 0);
    }
}
