//! The tree of cancel scopes: cancelling one cancels its descendants and wakes every fiber in
//! them, so a parked fiber unwinds at once instead of at its timeout.

use super::CancelCause;
use crate::fiber::{Core, Fiber};
use crate::slab::Slab;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct CancelScope {
    pub(crate) id: u64,
    cancelled: AtomicBool,
    /// Which scope's cancellation reached this one, and why; set once.
    origin: OnceLock<(u64, CancelCause)>,
    inner: Mutex<Inner>,
    parent: Option<(Arc<CancelScope>, usize)>,
}

struct Inner {
    /// Fibers to wake on cancellation. Weak, and never removed one by one: a fiber that has
    /// finished (or whose wake is spurious) ignores the unpark, and dead entries are swept
    /// whenever the list doubles, so joining costs one uncontended push.
    members: Vec<Weak<Core>>,
    sweep_at: usize,
    children: Slab<Weak<CancelScope>>,
}

/// Members kept before the first sweep.
const FIRST_SWEEP: usize = 64;

impl CancelScope {
    /// A scope inside `parent` (already cancelled if the parent is).
    pub(crate) fn new(parent: Option<Arc<CancelScope>>) -> Arc<CancelScope> {
        Arc::new_cyclic(|me: &Weak<CancelScope>| {
            let parent = parent.map(|parent| {
                let key = parent.lock().children.insert(me.clone());
                (parent, key)
            });
            let scope = CancelScope {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                cancelled: AtomicBool::new(false),
                origin: OnceLock::new(),
                inner: Mutex::new(Inner {
                    members: Vec::new(),
                    sweep_at: FIRST_SWEEP,
                    children: Slab::default(),
                }),
                parent,
            };
            if let Some((parent, _)) = &scope.parent {
                if let Some(origin) = parent.cancelled() {
                    scope.mark(origin);
                }
            }
            scope
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Never held across user code.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The origin and cause, once cancelled.
    pub(crate) fn cancelled(&self) -> Option<(u64, CancelCause)> {
        if self.cancelled.load(Ordering::Acquire) {
            self.origin.get().copied()
        } else {
            None
        }
    }

    fn mark(&self, origin: (u64, CancelCause)) -> bool {
        if self.origin.set(origin).is_err() {
            return false;
        }
        self.cancelled.store(true, Ordering::Release);
        true
    }

    /// Cancels this scope (the origin) and everything inside it.
    pub(crate) fn cancel(&self, cause: CancelCause) {
        self.cancel_from((self.id, cause));
    }

    fn cancel_from(&self, origin: (u64, CancelCause)) {
        // Mark the whole subtree before waking anyone: a woken fiber checks its innermost
        // scope, which must already be cancelled.
        let mut to_wake = Vec::new();
        self.mark_tree(origin, &mut to_wake);
        for fiber in to_wake {
            fiber.unpark();
        }
    }

    fn mark_tree(&self, origin: (u64, CancelCause), to_wake: &mut Vec<Fiber>) {
        if !self.mark(origin) {
            return;
        }
        let children: Vec<Arc<CancelScope>> = {
            let inner = self.lock();
            // The hint is raised after `mark`, so a fiber that sees it and then looks at its
            // scope finds it cancelled; a member that has left this scope meanwhile just takes
            // the slow path once.
            to_wake.extend(inner.members.iter().filter_map(Weak::upgrade).map(|core| {
                core.cancel_hint.raise();
                Fiber(core)
            }));
            inner.children.values().filter_map(Weak::upgrade).collect()
        };
        for child in children {
            child.mark_tree(origin, to_wake);
        }
    }

    /// Registers a fiber to be woken, and its cancel hint raised, when the scope is cancelled
    /// (for as long as it lives). A fiber that makes this its innermost scope must join first
    /// and then call `Core::resync_cancel_hint`, or a cancellation racing with the join
    /// could go unseen by the fast path.
    pub(crate) fn join(&self, fiber: &Arc<Core>) {
        let mut inner = self.lock();
        if inner.members.len() >= inner.sweep_at {
            inner.members.retain(|member| member.strong_count() > 0);
            inner.sweep_at = (inner.members.len() * 2).max(FIRST_SWEEP);
        }
        inner.members.push(Arc::downgrade(fiber));
    }
}

impl Drop for CancelScope {
    fn drop(&mut self) {
        if let Some((parent, key)) = &self.parent {
            parent.lock().children.remove(*key);
        }
    }
}
