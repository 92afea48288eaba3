//! Supervisors: processes that restart their children, as OTP's `supervisor`.

use crate::core::System;
use crate::current::current;
use crate::exits::link_pair;
use crate::id::next_number;
use crate::{
    exit, exit_self, monitor, self_id, spawn, spawn_link, trap_exit, unlink, Inbox, MonitorRef,
    Pid, ProcessId, Reason, ReplyTo, Signal,
};
use fibra_runtime::wait::Deadline;
use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Which children a supervisor restarts when one ends and should be restarted.
///
/// ```
/// let sup = fibra::process::Supervisor::new(fibra::process::Strategy::RestForOne);
/// # drop(sup);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Only that child.
    OneForOne,
    /// Every child: the others are terminated (in reverse start order), then all are started
    /// again in order.
    OneForAll,
    /// That child and those started after it: they are terminated (in reverse order), then
    /// started again in order.
    RestForOne,
}

/// When a child that ended is restarted.
///
/// ```
/// use fibra::process::{ChildSpec, Restart};
///
/// let spec = ChildSpec::new("job", || unreachable!("started by a supervisor"))
///     .restart(Restart::Transient);
/// # drop(spec);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always.
    Permanent,
    /// Only after an abnormal end (not [`Reason::Normal`] or [`Reason::Shutdown`]).
    Transient,
    /// Never: once it ends, by itself or terminated by a sibling's restart, it is no longer
    /// one of the supervisor's children (OTP deletes a temporary child's spec).
    Temporary,
}

/// How a supervisor terminates a child (OTP's `shutdown`). The supervisor waits for each
/// child's end before it terminates the next, and before it restarts a child that ended it
/// waits until the old one has also run its destructors (a child killed while it waits unwinds
/// after its end is signalled), so that the new one finds what the old one held released. A
/// [`Timeout`](Shutdown::Timeout) bounds that wait too.
///
/// ```
/// use fibra::process::{ChildSpec, Shutdown};
/// use std::time::Duration;
///
/// let spec = ChildSpec::new("flusher", || unreachable!("started by a supervisor"))
///     .shutdown(Shutdown::Timeout(Duration::from_secs(30)));
/// # drop(spec);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Killed at once with [`Reason::Kill`]: no chance to clean up, trapping exits or not.
    BrutalKill,
    /// An exit signal with [`Reason::Shutdown`], then killed if it has not ended within this
    /// time. A child that does not trap exits ends at once; one that traps them gets
    /// `Signal::Exit { from: <supervisor>, reason: Reason::Shutdown }` and this long to clean
    /// up and end. The default for a worker is 5 s, as OTP.
    Timeout(Duration),
    /// An exit signal with [`Reason::Shutdown`], then as long as the child takes to end: the
    /// default for a child that is a supervisor, which ends its own children first. A worker
    /// that traps exits and never ends would hold its supervisor for ever.
    Infinity,
}

/// One child of a [`Supervisor`]: a name and the function that starts it.
///
/// ```
/// use fibra::process::{self as process, ChildSpec, Inbox};
///
/// let spec = ChildSpec::new("echo", || {
///     process::spawn_link(|inbox: Inbox<()>| loop {
///         inbox.recv();
///     })
///     .id()
/// });
/// # drop(spec);
/// ```
pub struct ChildSpec {
    id: String,
    start: Box<dyn FnMut() -> ProcessId + Send>,
    restart: Restart,
    shutdown: Shutdown,
}

impl ChildSpec {
    /// A [`Restart::Permanent`] child. `start` runs in the supervisor process and returns the
    /// new child (spawned with [`spawn_link`](crate::spawn_link); a child spawned unlinked is
    /// linked right after). A child that ends before `start` returns is handled as any child
    /// that ended, with its own exit reason.
    ///
    /// If `start` panics while the supervisor starts its children, the supervisor terminates
    /// those running, the last started first, and ends with that panic (OTP's failed start).
    /// If it panics in a restart, the restart failed and the supervisor tries it again, as
    /// OTP's does: first it handles the signals that came in the meantime (other children's
    /// ends, an exit signal that ends it), then it restarts the child again by its
    /// [`Strategy`], the children after it in the restart left stopped until then. Each try
    /// counts against the restart intensity, so a child that keeps failing to start ends the
    /// supervisor with [`Reason::Shutdown`]. A `start` that returns the supervisor's own id
    /// panics, and is handled the same way.
    ///
    /// ```
    /// use fibra::process::{
    ///     self as process, ChildSpec, Inbox, Reason, Strategy, Supervisor, SupervisorRequest,
    /// };
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::time::Duration;
    ///
    /// static STARTS: AtomicUsize = AtomicUsize::new(0);
    ///
    /// process::run(|_: Inbox<()>| {
    ///     let sup = Supervisor::new(Strategy::OneForOne)
    ///         .intensity(3, Duration::from_secs(10))
    ///         .child(ChildSpec::new("flaky", || {
    ///             if STARTS.fetch_add(1, Ordering::SeqCst) == 1 {
    ///                 panic!("the first restart fails");
    ///             }
    ///             process::spawn_link(|inbox: Inbox<()>| loop {
    ///                 inbox.recv();
    ///             })
    ///             .id()
    ///         }))
    ///         .spawn_link();
    ///     let child = || {
    ///         let which = SupervisorRequest::WhichChildren;
    ///         process::call(&sup, which, Duration::from_secs(5)).unwrap()[0].1.pid().cloned()
    ///     };
    ///     let first = child().unwrap();
    ///     process::exit(&first, Reason::custom("crash"));
    ///     // The supervisor tried again: a third start, within the intensity.
    ///     while child().is_none_or(|now| now == first) {
    ///         fibra::yield_now();
    ///     }
    ///     assert_eq!(STARTS.load(Ordering::SeqCst), 3);
    /// });
    /// ```
    pub fn new(id: impl Into<String>, start: impl FnMut() -> ProcessId + Send + 'static) -> Self {
        ChildSpec {
            id: id.into(),
            start: Box::new(start),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
        }
    }

    /// A [`Restart::Permanent`] child that is itself a supervisor (OTP's `type =>
    /// supervisor`): as [`new`](ChildSpec::new), but terminated with [`Shutdown::Infinity`],
    /// so that it can end its own children in order.
    ///
    /// ```
    /// use fibra::process::{ChildSpec, Strategy, Supervisor};
    ///
    /// let spec = ChildSpec::supervisor("workers", || {
    ///     Supervisor::new(Strategy::OneForOne).spawn_link().id()
    /// });
    /// # drop(spec);
    /// ```
    pub fn supervisor(
        id: impl Into<String>,
        start: impl FnMut() -> ProcessId + Send + 'static,
    ) -> Self {
        ChildSpec::new(id, start).shutdown(Shutdown::Infinity)
    }

    /// Sets when the child is restarted.
    pub fn restart(mut self, restart: Restart) -> ChildSpec {
        self.restart = restart;
        self
    }

    /// Sets how the child is terminated.
    pub fn shutdown(mut self, shutdown: Shutdown) -> ChildSpec {
        self.shutdown = shutdown;
        self
    }
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .finish_non_exhaustive()
    }
}

/// What a supervisor process answers, through [`call`](crate::call).
///
/// ```
/// use fibra::process::{self as process, Inbox, Strategy, Supervisor, SupervisorRequest};
/// use std::time::Duration;
///
/// process::run(|_: Inbox<()>| {
///     let sup = Supervisor::new(Strategy::OneForOne).spawn_link();
///     let children = process::call(&sup, SupervisorRequest::WhichChildren, Duration::from_secs(5));
///     assert_eq!(children, Ok(vec![]));
/// });
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SupervisorRequest {
    /// Each child's id and state, in start order (a [`Restart::Temporary`] child that ended
    /// is not listed).
    WhichChildren(ReplyTo<Vec<(String, ChildState)>>),
}

/// What a supervisor reports of one of its children (the child part of OTP's
/// `which_children` entries).
///
/// ```
/// use fibra::process::{self as process, ChildSpec, ChildState, Inbox, Strategy, Supervisor};
/// use fibra::process::SupervisorRequest;
/// use std::time::Duration;
///
/// process::run(|_: Inbox<()>| {
///     let sup = Supervisor::new(Strategy::OneForOne)
///         .child(ChildSpec::new("worker", || {
///             process::spawn_link(|inbox: Inbox<()>| loop {
///                 inbox.recv();
///             })
///             .id()
///         }))
///         .spawn_link();
///     let children =
///         process::call(&sup, SupervisorRequest::WhichChildren, Duration::from_secs(5)).unwrap();
///     assert!(matches!(&children[0], (id, ChildState::Running(_)) if id == "worker"));
///     assert!(children[0].1.pid().is_some());
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChildState {
    /// Running as this process.
    Running(ProcessId),
    /// Its restart failed (its start panicked) and is tried again once the supervisor has
    /// handled what came before (OTP's `restarting`).
    Restarting,
    /// Not running: a child that ended and is not restarted, or one terminated while a
    /// sibling's failed restart waits to be tried again (OTP's `undefined`).
    Stopped,
}

impl ChildState {
    /// The child's process, if it is running.
    ///
    /// ```
    /// use fibra::process::ChildState;
    ///
    /// assert_eq!(ChildState::Restarting.pid(), None);
    /// ```
    pub fn pid(&self) -> Option<&ProcessId> {
        match self {
            ChildState::Running(pid) => Some(pid),
            ChildState::Restarting | ChildState::Stopped => None,
        }
    }
}

/// A supervisor: a process that traps exits, starts its children in order, and restarts
/// them by its [`Strategy`] and each child's [`Restart`]. More than `max_restarts` restarts
/// within `period` (its restart intensity; 1 in 5 s by default, as OTP) make it terminate
/// every child, in reverse start order, and end with [`Reason::Shutdown`]. A restart whose
/// start panics is tried again, and each try is a restart (see [`ChildSpec::new`]).
///
/// A supervisor started with [`spawn_link`](Supervisor::spawn_link) has a parent, the
/// process that started it: an exit signal from its parent, [`Reason::Normal`] included (the
/// parent returned), terminates the children and ends it with that reason, and exit signals
/// from other processes that are not its children are ignored, as in OTP. One started with
/// [`spawn`](Supervisor::spawn) has no parent: an exit signal other than `Normal` from any
/// process that is not its child ends it that way instead (`exit(&sup, Reason::Shutdown)`
/// stops it).
///
/// Each child is terminated by its [`Shutdown`]: by default a worker gets an exit signal with
/// [`Reason::Shutdown`] and 5 s to end (time that only a worker trapping exits uses) before
/// it is killed, and a child supervisor ([`ChildSpec::supervisor`]) as long as it takes.
///
/// ```
/// use fibra::process::{self as process, ChildSpec, Inbox, Strategy, Supervisor, SupervisorRequest};
/// use std::time::Duration;
///
/// process::run(|_: Inbox<()>| {
///     let sup = Supervisor::new(Strategy::OneForOne)
///         .child(ChildSpec::new("worker", || {
///             process::spawn_link(|inbox: Inbox<()>| loop {
///                 inbox.recv();
///             })
///             .id()
///         }))
///         .spawn_link();
///     let children =
///         process::call(&sup, SupervisorRequest::WhichChildren, Duration::from_secs(5)).unwrap();
///     let first = children[0].1.pid().unwrap().clone();
///     process::exit(&first, process::Reason::custom("crash"));
///     // The supervisor restarted it: a new process under the same id.
///     loop {
///         let now =
///             process::call(&sup, SupervisorRequest::WhichChildren, Duration::from_secs(5)).unwrap();
///         match now[0].1.pid() {
///             Some(pid) if *pid != first => break,
///             _ => fibra::yield_now(),
///         }
///     }
/// });
/// ```
#[derive(Debug)]
#[must_use = "a Supervisor does nothing until it is spawned"]
pub struct Supervisor {
    strategy: Strategy,
    max_restarts: usize,
    period: Duration,
    children: Vec<ChildSpec>,
}

impl Supervisor {
    /// A supervisor with no children yet and OTP's default intensity (1 restart in 5 s).
    pub fn new(strategy: Strategy) -> Supervisor {
        Supervisor {
            strategy,
            max_restarts: 1,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Allows at most `max_restarts` restarts within any `period` (a restart exactly `period`
    /// before the newest one is within it, as in OTP).
    pub fn intensity(mut self, max_restarts: usize, period: Duration) -> Supervisor {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a child, started after those added before it.
    ///
    /// # Panics
    ///
    /// If a child with the same id was added before: the ids name the children (in
    /// [`SupervisorRequest::WhichChildren`]) and must be distinct, as OTP refuses to start a
    /// supervisor whose child specs share one.
    ///
    /// ```should_panic
    /// use fibra::process::{ChildSpec, ProcessId, Strategy, Supervisor};
    ///
    /// fn start() -> ProcessId {
    ///     unreachable!("never started")
    /// }
    /// // Panics: `worker` twice.
    /// let _ = Supervisor::new(Strategy::OneForOne)
    ///     .child(ChildSpec::new("worker", start))
    ///     .child(ChildSpec::new("worker", start));
    /// ```
    #[track_caller]
    pub fn child(mut self, child: ChildSpec) -> Supervisor {
        assert!(
            self.children.iter().all(|added| added.id != child.id),
            "Supervisor::child: a child with id `{}` was added already; a supervisor's \
             children need distinct ids",
            child.id
        );
        self.children.push(child);
        self
    }

    /// Spawns the supervisor process, linked to the caller (OTP's `start_link`).
    ///
    /// # Panics
    ///
    /// Outside a process.
    #[track_caller]
    pub fn spawn_link(self) -> Pid<SupervisorRequest> {
        let parent = current("Supervisor::spawn_link");
        spawn_link(move |inbox| exit_self(self.supervise(inbox, Some(parent))))
    }

    /// Spawns the supervisor process, unlinked and without a parent.
    ///
    /// # Panics
    ///
    /// Outside a process.
    #[track_caller]
    pub fn spawn(self) -> Pid<SupervisorRequest> {
        spawn(move |inbox| exit_self(self.supervise(inbox, None)))
    }

    fn supervise(mut self, inbox: Inbox<SupervisorRequest>, parent: Option<ProcessId>) -> Reason {
        trap_exit(true);
        let mut slots = vec![Slot::Stopped; self.children.len()];
        for at in 0..self.children.len() {
            match self.start(&inbox, at) {
                Ok(child) => slots[at] = Slot::Running(child),
                Err(payload) => {
                    self.terminate_all(&inbox, &mut slots);
                    panic::resume_unwind(payload)
                }
            }
        }
        let mut restarts = Restarts::new(self.max_restarts, self.period);
        loop {
            let (from, reason) = match inbox.recv() {
                Signal::Msg(SupervisorRequest::WhichChildren(reply)) => {
                    let ids = self.children.iter().map(|child| child.id.clone());
                    reply.reply(ids.zip(slots.iter().map(Slot::state)).collect());
                    continue;
                }
                Signal::Exit { from, reason } => (from, reason),
                Signal::Down { mref, .. } => {
                    // A note that no longer matches is about a child restarted since (by a
                    // sibling's restart) or forgotten: nothing to try again.
                    let retry = slots
                        .iter()
                        .position(|slot| *slot == Slot::Restarting(mref));
                    if let Some(at) = retry {
                        if let Err(end) = self.restart(&inbox, &mut slots, &mut restarts, at) {
                            return end;
                        }
                    }
                    continue;
                }
            };
            let Some(at) = slots.iter().position(|slot| slot.is(&from)) else {
                let ends_it = match &parent {
                    Some(parent) => from == *parent,
                    None => !reason.is_normal(),
                };
                if ends_it {
                    self.terminate_all(&inbox, &mut slots);
                    return reason;
                }
                continue;
            };
            slots[at] = Slot::Stopped;
            let restart = match self.children[at].restart {
                Restart::Permanent => true,
                Restart::Transient => !matches!(reason, Reason::Normal | Reason::Shutdown),
                Restart::Temporary => {
                    self.forget(&mut slots, at);
                    false
                }
            };
            if !restart {
                continue;
            }
            await_run_end(&from, self.children[at].shutdown);
            if let Err(end) = self.restart(&inbox, &mut slots, &mut restarts, at) {
                return end;
            }
        }
    }

    /// Restarts child `at` and, by the strategy, its siblings (OTP's `restart/2`, also what
    /// its `try_again_restart` runs). A child whose `start` panics is left
    /// [`Restarting`](Slot::Restarting) and those after it in the group stopped: the try
    /// again comes after the signals already in the mailbox. `Err` with the supervisor's
    /// exit reason if this restart exceeds the intensity; the children are terminated then.
    fn restart(
        &mut self,
        inbox: &Inbox<SupervisorRequest>,
        slots: &mut Vec<Slot>,
        restarts: &mut Restarts,
        at: usize,
    ) -> Result<(), Reason> {
        if !restarts.add(Instant::now()) {
            self.terminate_all(inbox, slots);
            return Err(Reason::Shutdown);
        }
        let group = match self.strategy {
            Strategy::OneForOne => at..at + 1,
            Strategy::OneForAll => 0..slots.len(),
            Strategy::RestForOne => at..slots.len(),
        };
        let mut forgotten = 0;
        for other in group.clone().rev() {
            if let Slot::Running(child) = mem::replace(&mut slots[other], Slot::Stopped) {
                terminate(inbox, &child, self.children[other].shutdown);
            }
            // `at` is not temporary: it is being restarted.
            if self.children[other].restart == Restart::Temporary {
                self.forget(slots, other);
                forgotten += 1;
            }
        }
        let starting = group.start..group.end - forgotten;
        for (other, slot) in starting.clone().zip(&mut slots[starting]) {
            match self.start(inbox, other) {
                Ok(child) => *slot = Slot::Running(child),
                Err(_) => {
                    *slot = Slot::Restarting(note_to_try_again());
                    break;
                }
            }
        }
        Ok(())
    }

    /// Drops child `at`, a temporary one that ended, from the children: it is never restarted,
    /// and OTP deletes its spec.
    fn forget(&mut self, slots: &mut Vec<Slot>, at: usize) {
        self.children.remove(at);
        slots.remove(at);
    }

    /// Ends every running child, the last started first.
    fn terminate_all(&self, inbox: &Inbox<SupervisorRequest>, slots: &mut [Slot]) {
        for (slot, spec) in slots.iter_mut().zip(&self.children).rev() {
            if let Slot::Running(child) = mem::replace(slot, Slot::Stopped) {
                terminate(inbox, &child, spec.shutdown);
            }
        }
    }

    /// Starts child `at` and makes sure one `Exit` from it reaches the mailbox when it ends;
    /// the payload if its `start` panicked. A kill that reaches the supervisor during `start`
    /// unwinds on: the children then end through their links.
    fn start(
        &mut self,
        inbox: &Inbox<SupervisorRequest>,
        at: usize,
    ) -> Result<ProcessId, Box<dyn Any + Send>> {
        let started = panic::catch_unwind(AssertUnwindSafe(|| {
            let spec = &mut self.children[at];
            let child = (spec.start)();
            assert!(
                child != self_id(),
                "the start of child `{}` returned its supervisor's own id, not a new process",
                spec.id
            );
            child
        }));
        let child = match started {
            Ok(child) => child,
            Err(payload) if fibra_runtime::is_cancellation(&*payload) => {
                panic::resume_unwind(payload)
            }
            Err(payload) => return Err(payload),
        };
        if link_pair(&self_id(), &child).is_err() {
            heard_of_end(inbox, &child);
        }
        Ok(child)
    }
}

/// What a supervisor knows of one child's process.
#[derive(Clone, PartialEq)]
enum Slot {
    /// Not started yet, ended and not restarted, or terminated.
    Stopped,
    Running(ProcessId),
    /// Its restart failed; tried again when this note comes out of the mailbox.
    Restarting(MonitorRef),
}

impl Slot {
    fn state(&self) -> ChildState {
        match self {
            Slot::Running(child) => ChildState::Running(child.clone()),
            Slot::Restarting(_) => ChildState::Restarting,
            Slot::Stopped => ChildState::Stopped,
        }
    }

    fn is(&self, child: &ProcessId) -> bool {
        matches!(self, Slot::Running(running) if running == child)
    }
}

/// Puts a note behind what is in the supervisor's mailbox now, as OTP's supervisor casts
/// `try_again_restart` to itself: the signals that came before it (a shutdown among them)
/// are handled before the next try, so a start that keeps panicking does not starve them.
/// The note is a `Down` under a reference no monitor has, so nothing else is taken for it.
fn note_to_try_again() -> MonitorRef {
    let me = self_id();
    let note = MonitorRef(next_number());
    me.proc().post(System::Down {
        mref: note,
        pid: me.clone(),
        reason: Reason::Noproc,
    });
    note
}

/// The restarts that count against a supervisor's restart intensity.
struct Restarts {
    max: usize,
    period: Duration,
    /// The restarts within `period` of the last one, oldest first.
    at: VecDeque<Instant>,
}

impl Restarts {
    fn new(max: usize, period: Duration) -> Restarts {
        Restarts {
            max,
            period,
            at: VecDeque::new(),
        }
    }

    /// Records a restart at `now`; false if that makes more than `max` within `period`. One
    /// exactly `period` before `now` is within it, as in OTP (whose `add_restart` keeps the
    /// restarts `R >= Now - Period`).
    fn add(&mut self, now: Instant) -> bool {
        self.at.push_back(now);
        while self
            .at
            .front()
            .is_some_and(|&at| now.duration_since(at) > self.period)
        {
            self.at.pop_front();
        }
        self.at.len() <= self.max
    }
}

/// Makes sure one `Exit` with the real reason of `child`, which ended before its supervisor
/// could link to it, is in the mailbox. `link` cannot: it would add an `Exit` with
/// [`Reason::Noproc`], a second one if the child was linked already.
fn heard_of_end(inbox: &Inbox<SupervisorRequest>, child: &ProcessId) {
    let core = child.proc().core();
    // Once its end is complete, a link it had has delivered its `Exit`.
    core.wait_settled();
    if !inbox.peek(|signal| matches!(signal, Signal::Exit { from, .. } if from == child)) {
        let reason = core.lock().reason.clone();
        let reason = reason.expect("a process that refuses a link has ended");
        self_id().proc().post(System::Exit {
            from: child.clone(),
            reason,
        });
    }
}

/// Ends `child` by `shutdown` without hearing of it as an end to handle: unlinked first, and
/// an `Exit` it sent before that is dropped from the mailbox.
fn terminate(inbox: &Inbox<SupervisorRequest>, child: &ProcessId, shutdown: Shutdown) {
    // Monitored before unlinked: its end is seen even if it comes in between.
    let mref = monitor(child);
    unlink(child);
    let is_down = |signal: &Signal<SupervisorRequest>| match signal {
        Signal::Down { mref: m, .. } => *m == mref,
        _ => false,
    };
    let ended = match shutdown {
        Shutdown::BrutalKill => {
            exit(child, Reason::Kill);
            false
        }
        Shutdown::Timeout(grace) => {
            exit(child, Reason::Shutdown);
            let ended = inbox.receive_timeout(grace, is_down).is_some();
            if !ended {
                exit(child, Reason::Kill);
            }
            ended
        }
        Shutdown::Infinity => {
            exit(child, Reason::Shutdown);
            false
        }
    };
    if !ended {
        inbox.receive(is_down);
    }
    await_run_end(child, shutdown);
    let _ = inbox.receive_timeout(
        Duration::ZERO,
        |signal| matches!(signal, Signal::Exit { from, .. } if from == child),
    );
}

/// Waits until `child`, which has ended, has also run to its end: killed while it waited, it
/// unwinds after its end was signalled, and a child started meanwhile could find what the old
/// one held (a bound address, a lock, a file) still held. A timed `shutdown` bounds this wait
/// too; after it the supervisor goes on.
fn await_run_end(child: &ProcessId, shutdown: Shutdown) {
    let deadline = match shutdown {
        Shutdown::Timeout(grace) => Deadline::after(grace),
        Shutdown::BrutalKill | Shutdown::Infinity => Deadline::NEVER,
    };
    child.proc().core().ran.wait_until(deadline);
}

#[cfg(test)]
mod tests {
    use super::Restarts;
    use std::time::{Duration, Instant};

    #[test]
    fn a_restart_exactly_one_period_before_the_last_still_counts() {
        let period = Duration::from_secs(5);
        let first = Instant::now();
        let mut restarts = Restarts::new(1, period);
        assert!(restarts.add(first));
        assert!(!restarts.add(first + period), "two within the period");

        let mut restarts = Restarts::new(1, period);
        assert!(restarts.add(first));
        let later = first + period + Duration::from_nanos(1);
        assert!(restarts.add(later), "the first one has expired");
        assert!(!restarts.add(later), "the second one has not");
    }
}
