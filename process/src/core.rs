//! The shared record of one process: liveness, links, monitors, name and mailbox.
//!
//! Each process's record has one lock. Operations that touch two processes (link, unlink)
//! take both in number order; everything else holds one lock at a time, so there is no lock
//! cycle. Signals a process sends when it ends (`Down` messages, exit signals) are sent after
//! its lock is released (a watcher's id may be the last of its process, whose drop may drop
//! messages, and a message's drop may park); once they all are, its end opens the record's
//! `settled` gate, where whoever finds the process ended but must see its end complete (a
//! `demonitor`, an `exit`) waits.

use crate::id::next_number;
use crate::node::Node;
use crate::ordered::Ordered;
use crate::settled::Settled;
use crate::{MonitorRef, ProcessId, Reason, Signal};
use fibra_runtime::loom::sync::{SpinGuard, SpinLock};
use fibra_runtime::{CancelGroup, FiberId};
use std::any::Any;
use std::collections::HashMap;
use std::mem;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

/// The untyped part of a process.
pub(crate) struct Core {
    pub(crate) number: u64,
    alive: AtomicBool,
    state: Mutex<State>,
    /// Cancelling it unwinds the process's fiber.
    pub(crate) group: CancelGroup,
    pub(crate) node: Arc<Node>,
    /// How many flushed `Down`s wait in the mailbox (see `State::flushed`).
    pub(crate) flushed: AtomicUsize,
    /// Opened once the process's end is complete (see the module docs).
    pub(crate) settled: Settled,
    /// Opened once the process's fiber has run to its end, its destructors done (or was
    /// dropped unstarted), which can be after its end was signalled: a process killed while
    /// it waits unwinds later, on its own worker.
    pub(crate) ran: Settled,
    /// Whether `State::unanswered` holds a call (read at every receive without the lock).
    has_unanswered: AtomicBool,
}

/// What the process's lock guards.
#[derive(Default)]
pub(crate) struct State {
    /// Set once, when the process ends.
    pub(crate) reason: Option<Reason>,
    /// The fiber that ended the process, if it was ended in one: it must not wait at the
    /// `settled` gate for itself (a message it drops with the mailbox may call `exit` on the
    /// same process).
    pub(crate) ender: Option<FiberId>,
    /// Linked processes by number, in the order the links were made.
    pub(crate) links: Ordered<ProcessId>,
    /// Monitors on this process by reference, in the order they were made.
    pub(crate) watchers: Ordered<Watcher>,
    /// Monitors this process holds on others (by reference: the target), to drop them when
    /// it ends.
    pub(crate) held: HashMap<u64, ProcessId>,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) trap_exit: bool,
    /// Monitors demonitored with `flush` whose `Down` is already in the mailbox: the inbox
    /// drops those `Down`s when it comes to them.
    pub(crate) flushed: Vec<u64>,
    /// Calls whose request this process dropped unanswered while it unwound: if the panic
    /// ends the process, its end fails them; if the process catches it, its next receive
    /// does (see `ReplyTo`'s drop).
    unanswered: Vec<Box<dyn FnOnce() + Send>>,
}

/// Who is told when a process ends.
pub(crate) enum Watcher {
    /// A process, by a `Down` message.
    Process { mref: u64, watcher: ProcessId },
    /// A waiting `call`.
    Call(Arc<dyn DownSink>),
}

/// Told the reason of a process that ended.
pub(crate) trait DownSink: Send + Sync {
    fn down(&self, reason: &Reason);
}

/// A signal the runtime (not a sender) puts into a mailbox.
pub(crate) enum System {
    Exit {
        from: ProcessId,
        reason: Reason,
    },
    Down {
        mref: MonitorRef,
        pid: ProcessId,
        reason: Reason,
    },
}

/// A process of any message type.
pub(crate) trait AnyProc: Send + Sync + 'static {
    fn core(&self) -> &Core;
    /// Puts a system signal into the mailbox (dropped if the process has ended).
    fn post(&self, signal: System);
    /// Drops what waits in the mailbox's queue of arrivals, and the owner's waker: an ended
    /// process keeps neither (a waker keeps its fiber, and the fiber its spawner's process,
    /// alive — a chain as long as the chain of spawns).
    fn discard_mailbox(&self);
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl Core {
    pub(crate) fn new(node: Arc<Node>, group: CancelGroup) -> Core {
        Core {
            number: next_number(),
            alive: AtomicBool::new(true),
            state: Mutex::new(State::default()),
            group,
            node,
            flushed: AtomicUsize::new(0),
            settled: Settled::default(),
            ran: Settled::default(),
            has_unanswered: AtomicBool::new(false),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // No user code runs under the lock, so a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Marks the process ended, under its lock.
    pub(crate) fn mark_ended(&self, state: &mut State, reason: Reason) {
        state.reason = Some(reason);
        self.alive.store(false, Ordering::Release);
    }

    /// Keeps `fail` (which fails a call this process dropped unanswered while unwinding)
    /// until the process next receives or ends. Run at once if it has ended: a process killed
    /// while it waits unwinds after its end, which so cannot run what it drops then.
    pub(crate) fn defer_unanswered(&self, fail: Box<dyn FnOnce() + Send>) {
        let mut state = self.lock();
        if state.reason.is_some() {
            drop(state);
            fail();
            return;
        }
        state.unanswered.push(fail);
        self.has_unanswered.store(true, Ordering::Release);
    }

    /// Fails the calls kept by `defer_unanswered`: the process caught the panic it dropped
    /// them in, and receives again.
    pub(crate) fn fail_unanswered(&self) {
        if !self.has_unanswered.load(Ordering::Acquire) {
            return;
        }
        let unanswered = self.take_unanswered(&mut self.lock());
        for fail in unanswered {
            fail();
        }
    }

    /// What `defer_unanswered` kept, under the process's lock, to be run after it.
    pub(crate) fn take_unanswered(&self, state: &mut State) -> Vec<Box<dyn FnOnce() + Send>> {
        self.has_unanswered.store(false, Ordering::Release);
        mem::take(&mut state.unanswered)
    }

    /// Waits until the end of this process, which has been marked ended, is complete (see
    /// the module docs) — unless the caller is the fiber ending it.
    pub(crate) fn wait_settled(&self) {
        let ender = self.lock().ender;
        if ender.is_some() && ender == running_fiber() {
            return;
        }
        self.settled.wait();
    }
}

/// The fiber the caller runs in, if any (an unstarted process's function can be dropped,
/// ending the process, on a worker's thread outside any fiber).
pub(crate) fn running_fiber() -> Option<FiberId> {
    fibra_runtime::wait::in_fiber().then(|| fibra_runtime::current().id())
}

/// A process taking messages of type `M`.
pub(crate) struct Proc<M> {
    pub(crate) core: Core,
    pub(crate) mailbox: Mailbox<M>,
}

/// Arrivals: what senders have appended since the owner last looked; the owner takes them
/// all at once and moves them into its inbox's private queue. One lock per send and one per
/// batch the owner takes (a lock-free queue costs an atomic per message on both sides); the
/// lock is held only for a push, a take or the wake of the owner. It is a spin lock: taking it
/// is the one atomic read-modify-write, and releasing it a store, where a `std` mutex's release
/// is a second one (with a message per hop, the atomics are most of a send's and a receive's
/// cost).
pub(crate) struct Mailbox<M> {
    pub(crate) arrivals: Arrivals<M>,
    /// Messages in the mailbox, counted only when there is a limit.
    pub(crate) len: AtomicUsize,
    pub(crate) limit: Option<usize>,
}

/// The arrivals of one mailbox, and whether their owner waits for the next one.
pub(crate) struct Arrivals<M> {
    pending: SpinLock<Pending<M>>,
    /// Whether signals may be pending: read without the lock by the owner, which so takes no
    /// lock to find nothing new while it scans its queue.
    any: AtomicBool,
}

struct Pending<M> {
    /// The oldest pending signal, kept beside the lock: a lone message (the usual one between
    /// two receives) goes from sender to owner without touching a heap buffer, a cache miss
    /// on each side when many processes take turns.
    first: Option<Signal<M>>,
    /// The signals after `first`, in order; empty while `first` is.
    rest: Vec<Signal<M>>,
    /// The waker of the fiber that last waited, kept until its process ends: a receive that
    /// waits in the same fiber as the last one sets `waiting` rather than registering a waker.
    /// It is replaced when another fiber waits (one the inbox was lent to, or the process
    /// again after it), which would otherwise never be woken.
    owner: Option<Waker>,
    /// Whether the owner waits for an arrival: the next push wakes it. Set and cleared under
    /// the lock, with the pushes, so no push falls between the owner's last look and its wait.
    waiting: bool,
}

/// What the owner took from its arrivals.
pub(crate) enum Taken<M> {
    Nothing,
    One(Signal<M>),
    /// The oldest signal, and the others in order.
    Many(Signal<M>, Vec<Signal<M>>),
}

impl<M> Default for Arrivals<M> {
    fn default() -> Self {
        Arrivals {
            pending: SpinLock::new(Pending {
                first: None,
                rest: Vec::new(),
                owner: None,
                waiting: false,
            }),
            any: AtomicBool::new(false),
        }
    }
}

impl<M> Arrivals<M> {
    fn lock(&self) -> SpinGuard<'_, Pending<M>> {
        self.pending.lock()
    }

    /// Appends `signal`, and wakes the owner if it waits. The wake is made under the lock,
    /// where the waker is borrowed (cloning it out would cost two more atomics per send); it
    /// queues the owner's fiber and runs no user code.
    pub(crate) fn push(&self, signal: Signal<M>) {
        let mut pending = self.lock();
        if pending.first.is_none() {
            pending.first = Some(signal);
        } else {
            pending.rest.push(signal);
        }
        self.any.store(true, Ordering::Release);
        if mem::take(&mut pending.waiting) {
            if let Some(owner) = &pending.owner {
                owner.wake_by_ref();
            }
        }
    }

    /// Whether something may have arrived since the owner last took the arrivals.
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Everything that arrived, in order; several signals come with `spare` (empty, its
    /// capacity reused) swapped in for the vector of the later ones.
    pub(crate) fn take(&self, spare: &mut Vec<Signal<M>>) -> Taken<M> {
        debug_assert!(spare.is_empty());
        if !self.any() {
            return Taken::Nothing;
        }
        let mut pending = self.lock();
        self.any.store(false, Ordering::Relaxed);
        let Some(first) = pending.first.take() else {
            return Taken::Nothing;
        };
        if pending.rest.is_empty() {
            return Taken::One(first);
        }
        Taken::Many(first, mem::replace(&mut pending.rest, mem::take(spare)))
    }

    /// The owner's step before it parks: false if something arrived since its last look
    /// (it looks again instead), else it is marked waiting, with `waker` (the waiting fiber's)
    /// as its waker, and the next push wakes it.
    pub(crate) fn wait(&self, waker: Waker) -> bool {
        let mut pending = self.lock();
        if pending.first.is_some() {
            return false;
        }
        let stale = match &pending.owner {
            Some(owner) if owner.will_wake(&waker) => None,
            _ => pending.owner.replace(waker),
        };
        pending.waiting = true;
        drop(pending);
        // A waker runs user code when dropped (it may be the last handle on a finished fiber):
        // not under the lock.
        drop(stale);
        true
    }

    /// The owner stopped waiting without an arrival (its wait timed out): no push needs to
    /// wake it.
    pub(crate) fn stop_waiting(&self) {
        self.lock().waiting = false;
    }

    /// Drops what waits, and the owner's waker.
    fn discard(&self) {
        let mut pending = self.lock();
        let first = pending.first.take();
        let rest = mem::take(&mut pending.rest);
        let owner = pending.owner.take();
        pending.waiting = false;
        self.any.store(false, Ordering::Relaxed);
        drop(pending);
        // Signals and wakers run user code when dropped: not under the lock.
        drop((first, rest, owner));
    }
}

impl<M: Send + 'static> Proc<M> {
    pub(crate) fn new(node: Arc<Node>, group: CancelGroup, limit: Option<usize>) -> Proc<M> {
        Proc {
            core: Core::new(node, group),
            mailbox: Mailbox {
                arrivals: Arrivals::default(),
                len: AtomicUsize::new(0),
                limit,
            },
        }
    }

    /// Appends `signal` and wakes the owner; drops it if the process has ended.
    pub(crate) fn push(&self, signal: Signal<M>) {
        if !self.core.is_alive() {
            return;
        }
        if let Some(limit) = self.mailbox.limit {
            if self.mailbox.len.fetch_add(1, Ordering::Relaxed) >= limit {
                self.mailbox.len.fetch_sub(1, Ordering::Relaxed);
                self.core.node.runtime_error(&format!(
                    "the mailbox of <0.{}.0> exceeded its limit of {limit} messages",
                    self.core.number
                ));
                return;
            }
        }
        self.mailbox.arrivals.push(signal);
    }

    /// Accounts for a signal the owner took out of the mailbox.
    pub(crate) fn taken(&self) {
        if self.mailbox.limit.is_some() {
            self.mailbox.len.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<M: Send + 'static> AnyProc for Proc<M> {
    fn core(&self) -> &Core {
        &self.core
    }

    fn post(&self, signal: System) {
        self.push(match signal {
            System::Exit { from, reason } => Signal::Exit { from, reason },
            System::Down { mref, pid, reason } => Signal::Down { mref, pid, reason },
        });
    }

    fn discard_mailbox(&self) {
        self.mailbox.arrivals.discard();
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::task::Wake;

    /// Counts its wakes.
    #[derive(Default)]
    struct Count(AtomicU64);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn owner() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        let waker = Waker::from(count.clone());
        (count, waker)
    }

    fn msgs(arrivals: &Arrivals<u32>) -> Vec<u32> {
        let signals = match arrivals.take(&mut Vec::new()) {
            Taken::Nothing => Vec::new(),
            Taken::One(first) => vec![first],
            Taken::Many(first, rest) => std::iter::once(first).chain(rest).collect(),
        };
        signals
            .into_iter()
            .map(|signal| signal.into_msg().unwrap())
            .collect()
    }

    #[test]
    fn only_the_first_push_after_a_wait_wakes_the_owner() {
        let arrivals = Arrivals::default();
        let (wakes, waker) = owner();
        arrivals.push(Signal::Msg(0));
        assert!(!arrivals.wait(waker.clone()), "something arrived: no wait");
        assert_eq!(msgs(&arrivals), [0]);
        assert!(arrivals.wait(waker.clone()));
        arrivals.push(Signal::Msg(1));
        arrivals.push(Signal::Msg(2));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(msgs(&arrivals), [1, 2]);
        assert!(arrivals.wait(waker));
        arrivals.push(Signal::Msg(3));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
    }

    /// An inbox lent to another fiber: each wait is woken through the waker of the fiber that
    /// made it, whichever waited before.
    #[test]
    fn a_wait_with_another_waker_is_woken_through_it() {
        let arrivals = Arrivals::default();
        let (first_wakes, first) = owner();
        let (second_wakes, second) = owner();
        assert!(arrivals.wait(first.clone()));
        arrivals.push(Signal::Msg(1));
        assert_eq!(msgs(&arrivals), [1]);
        assert!(arrivals.wait(second));
        arrivals.push(Signal::Msg(2));
        assert_eq!(msgs(&arrivals), [2]);
        assert!(arrivals.wait(first));
        arrivals.push(Signal::Msg(3));
        let wakes = |count: &Count| count.0.load(Ordering::SeqCst);
        assert_eq!((wakes(&first_wakes), wakes(&second_wakes)), (2, 1));
        assert_eq!(
            Arc::strong_count(&second_wakes),
            1,
            "the replaced waker was dropped"
        );
    }

    #[test]
    fn a_wait_that_stopped_is_not_woken() {
        let arrivals = Arrivals::default();
        let (wakes, waker) = owner();
        assert!(arrivals.wait(waker));
        arrivals.stop_waiting();
        arrivals.push(Signal::Msg(1));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        assert_eq!(msgs(&arrivals), [1]);
    }

    #[test]
    fn discarding_drops_the_arrivals_and_the_owners_waker() {
        let arrivals = Arrivals::default();
        let (wakes, waker) = owner();
        assert!(arrivals.wait(waker));
        arrivals.discard();
        assert_eq!(Arc::strong_count(&wakes), 1, "the waker was dropped");
        arrivals.push(Signal::Msg(1));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        arrivals.discard();
        assert!(msgs(&arrivals).is_empty());
    }
}
