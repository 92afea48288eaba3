//! The tree of cancel scopes: cancelling one cancels its descendants and wakes every fiber in
//! them, so a parked fiber unwinds at once instead of at its timeout.

use super::CancelCause;
use crate::fiber::Fiber;
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

#[derive(Default)]
struct Inner {
    members: Slab<Fiber>,
    children: Slab<Weak<CancelScope>>,
}

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
                inner: Mutex::new(Inner::default()),
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
            to_wake.extend(inner.members.values().cloned());
            inner.children.values().filter_map(Weak::upgrade).collect()
        };
        for child in children {
            child.mark_tree(origin, to_wake);
        }
    }

    /// Registers a fiber to be woken when the scope is cancelled.
    pub(crate) fn join(&self, fiber: Fiber) -> usize {
        self.lock().members.insert(fiber)
    }

    pub(crate) fn leave(&self, key: usize) {
        let fiber = self.lock().members.remove(key);
        drop(fiber);
    }
}

impl Drop for CancelScope {
    fn drop(&mut self) {
        if let Some((parent, key)) = &self.parent {
            parent.lock().children.remove(*key);
        }
    }
}
