//! The shared record of one process: liveness, links, monitors, name and mailbox.
//!
//! Each process's record has one lock. Operations that touch two processes (link, unlink)
//! take both in number order; everything else holds one lock at a time, so there is no lock
//! cycle. Signals a process sends when it ends (`Down` messages) are put into the watchers'
//! mailboxes while its lock is held, so whoever locks it afterwards (a `demonitor`) finds
//! them already delivered.

use crate::id::next_number;
use crate::node::Node;
use crate::ordered::Ordered;
use crate::{MonitorRef, ProcessId, Reason, Signal};
use fibra_runtime::CancelGroup;
use futures::task::AtomicWaker;
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

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
}

/// What the process's lock guards.
#[derive(Default)]
pub(crate) struct State {
    /// Set once, when the process ends.
    pub(crate) reason: Option<Reason>,
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
}

/// A process taking messages of type `M`.
pub(crate) struct Proc<M> {
    pub(crate) core: Core,
    pub(crate) mailbox: Mailbox<M>,
}

/// Arrivals: what senders have appended since the owner last looked; the owner takes them
/// all at once, swapping the vector, and moves them into its inbox's private queue. One lock
/// per send and one per batch the owner takes (a lock-free queue costs an atomic per message
/// on both sides); the lock is held only for a push or a swap.
pub(crate) struct Mailbox<M> {
    pub(crate) arrivals: Arrivals<M>,
    /// The owner's waker while it waits in a receive.
    pub(crate) waker: AtomicWaker,
    /// Messages in the mailbox, counted only when there is a limit.
    pub(crate) len: AtomicUsize,
    pub(crate) limit: Option<usize>,
}

/// The arrivals of one mailbox.
pub(crate) struct Arrivals<M> {
    signals: Mutex<Vec<Signal<M>>>,
    /// Whether `signals` may be non-empty: read without the lock by the owner before it parks.
    any: AtomicBool,
}

impl<M> Default for Arrivals<M> {
    fn default() -> Self {
        Arrivals {
            signals: Mutex::new(Vec::new()),
            any: AtomicBool::new(false),
        }
    }
}

impl<M> Arrivals<M> {
    fn lock(&self) -> MutexGuard<'_, Vec<Signal<M>>> {
        // Held only for a push or a swap, which do not panic with the lock held but on
        // allocation failure, which aborts.
        self.signals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn push(&self, signal: Signal<M>) {
        self.lock().push(signal);
        self.any.store(true, Ordering::Release);
    }

    /// Everything that arrived, in order, swapped for `spare` (empty, its capacity reused).
    pub(crate) fn take_all(&self, spare: Vec<Signal<M>>) -> Vec<Signal<M>> {
        debug_assert!(spare.is_empty());
        if !self.any.load(Ordering::Acquire) {
            return spare;
        }
        let mut signals = self.lock();
        self.any.store(false, Ordering::Relaxed);
        std::mem::replace(&mut *signals, spare)
    }

    /// Whether something may have arrived; the owner's look before it parks, after it
    /// registered its waker (a push after this look wakes it).
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(Ordering::SeqCst)
    }
}

impl<M: Send + 'static> Proc<M> {
    pub(crate) fn new(node: Arc<Node>, group: CancelGroup, limit: Option<usize>) -> Proc<M> {
        Proc {
            core: Core::new(node, group),
            mailbox: Mailbox {
                arrivals: Arrivals::default(),
                waker: AtomicWaker::new(),
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
        self.mailbox.waker.wake();
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
        drop(self.mailbox.arrivals.take_all(Vec::new()));
        drop(self.mailbox.waker.take());
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}
