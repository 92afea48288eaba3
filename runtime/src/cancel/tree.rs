//! The tree of cancel scopes: cancelling one cancels its descendants and wakes every fiber in
//! them, so a parked fiber unwinds at once instead of at its timeout.

use super::CancelCause;
use crate::fiber::{Core, Fiber};
use slab::Slab;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct CancelScope {
    pub(crate) id: u64,
    /// Which scope's cancellation reached this one, and why; set once.
    origin: OnceLock<(u64, CancelCause)>,
    inner: Mutex<Inner>,
    parent: Option<Arc<CancelScope>>,
}

struct Inner {
    /// Fibers to wake on cancellation. Weak, and never removed one by one: a fiber that has
    /// finished (or whose wake is spurious) ignores the unpark, and dead entries are swept
    /// whenever the list doubles, so joining costs one uncontended push.
    members: Vec<Weak<Core>>,
    sweep_at: usize,
    children: Slab<Weak<CancelScope>>,
    /// Where this scope is listed among its parent's children.
    in_parent: Option<usize>,
}

/// Members kept before the first sweep.
const FIRST_SWEEP: usize = 64;

impl CancelScope {
    /// A scope inside `parent` (already cancelled if the parent is).
    pub(crate) fn new(parent: Option<Arc<CancelScope>>) -> Arc<CancelScope> {
        let scope = Arc::new(CancelScope {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            origin: OnceLock::new(),
            inner: Mutex::new(Inner {
                members: Vec::new(),
                sweep_at: FIRST_SWEEP,
                children: Slab::default(),
                in_parent: None,
            }),
            parent,
        });
        if let Some(parent) = &scope.parent {
            // Listed only once it is whole, so a cancellation that collects the parent's
            // children can reach it; and the parent is read under the lock that collection
            // takes, so a cancellation that collected them before it was listed has marked
            // the parent visibly by then.
            let (key, cancelled) = {
                let mut siblings = parent.lock();
                let key = siblings.children.insert(Arc::downgrade(&scope));
                (key, parent.cancelled())
            };
            scope.lock().in_parent = Some(key);
            if let Some(origin) = cancelled {
                scope.mark(origin);
            }
        }
        scope
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Never held across user code.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The origin and cause, once cancelled.
    pub(crate) fn cancelled(&self) -> Option<(u64, CancelCause)> {
        self.origin.get().copied()
    }

    /// Marks this scope cancelled from `origin`; false if it already was. Either way it reads
    /// as cancelled when this returns: a concurrent first mark is waited for.
    fn mark(&self, origin: (u64, CancelCause)) -> bool {
        self.origin.set(origin).is_ok()
    }

    /// Cancels this scope (the origin) and everything inside it.
    pub(crate) fn cancel(&self, cause: CancelCause) {
        self.cancel_from((self.id, cause));
    }

    fn cancel_from(&self, origin: (u64, CancelCause)) {
        // Mark the whole subtree before raising any hint: a fiber's innermost scope can be one
        // level below the scope it is a member of (a joinable fiber's own scope is inside its
        // spawner's), and a fiber that sees its hint looks at its innermost scope at once. Seen
        // unmarked, it would lower the hint for good and sleep through the wake below.
        let mut members = Vec::new();
        if self.mark(origin) {
            // A loop over a list of scopes still to mark, not a recursion: the tree can be
            // deeper than the canceller's stack (a fiber with a small one) has room for.
            let mut unmarked = Vec::new();
            self.collect(&mut members, &mut unmarked);
            while let Some(scope) = unmarked.pop() {
                // Whoever marked a scope first marks (or has marked) its subtree, and raises
                // the hints of its members once that is done.
                if scope.mark(origin) {
                    scope.collect(&mut members, &mut unmarked);
                }
            }
        }
        for core in &members {
            core.cancel_hint.raise();
        }
        for core in members {
            Fiber(core).unpark();
        }
    }

    /// Adds this scope's members to `members` and its children to `children`.
    fn collect(&self, members: &mut Vec<Arc<Core>>, children: &mut Vec<Arc<CancelScope>>) {
        let inner = self.lock();
        members.extend(inner.members.iter().filter_map(Weak::upgrade));
        children.extend(
            inner
                .children
                .iter()
                .filter_map(|(_, child)| child.upgrade()),
        );
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

impl CancelScope {
    /// Takes this scope off its parent's list of children (once; it is being dropped).
    fn leave_parent(&mut self) {
        let in_parent = self
            .inner
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .in_parent
            .take();
        if let (Some(parent), Some(key)) = (&self.parent, in_parent) {
            parent.lock().children.try_remove(key);
        }
    }
}

impl Drop for CancelScope {
    fn drop(&mut self) {
        self.leave_parent();
        // Dropping the parent here could drop its own parent in turn, a stack frame per level:
        // a chain of scopes whose last references go at once (each held by the one inside it,
        // the innermost by a detached fiber that just ended) could be deeper than the stack.
        // So the ancestors that this drop ends are taken apart one at a time, in a loop.
        let mut next = self.parent.take();
        while let Some(parent) = next {
            next = Arc::into_inner(parent).and_then(|mut scope| {
                scope.leave_parent();
                scope.parent.take()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn a_chain_of_scopes_deeper_than_the_stack_drops_without_recursing() {
        // Each scope holds its parent; only the innermost is referenced from outside.
        let mut innermost = CancelScope::new(None);
        let outermost = Arc::downgrade(&innermost);
        for _ in 0..200_000 {
            innermost = CancelScope::new(Some(innermost));
        }
        let parent = Arc::downgrade(innermost.parent.as_ref().unwrap());
        // A recursive drop needs tens of bytes of stack per level: megabytes here.
        std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || drop(innermost))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(outermost.strong_count(), 0);
        assert_eq!(parent.strong_count(), 0);
    }

    #[test]
    fn a_dropped_scope_leaves_its_living_parents_list_of_children() {
        let grandparent = CancelScope::new(None);
        let parent = CancelScope::new(Some(grandparent.clone()));
        let child = CancelScope::new(Some(parent.clone()));
        drop(parent);
        assert_eq!(
            grandparent.lock().children.len(),
            1,
            "the child keeps the parent"
        );
        drop(child);
        assert_eq!(grandparent.lock().children.len(), 0);
    }

    #[test]
    fn a_child_made_while_its_parent_is_cancelled_ends_up_cancelled() {
        for _ in 0..50 {
            let parent = CancelScope::new(None);
            let start = Barrier::new(2);
            let children = std::thread::scope(|s| {
                let maker = s.spawn(|| {
                    start.wait();
                    (0..2_000)
                        .map(|_| CancelScope::new(Some(parent.clone())))
                        .collect::<Vec<_>>()
                });
                start.wait();
                std::thread::yield_now();
                parent.cancel(CancelCause::Token);
                maker.join().unwrap()
            });
            let origin = Some((parent.id, CancelCause::Token));
            for child in &children {
                assert_eq!(child.cancelled(), origin, "a child was missed");
            }
        }
    }

    /// The canceller's window between marking a subtree and raising its members' hints: a
    /// joiner whose joined fiber ended cancelled unwinds from its marked scope, though its
    /// hint is still down.
    /// Runs `body` in a `scope_with` on one worker, `body` getting the scope's own cancel
    /// scope; the outcome's cause, or `None` if it returned.
    fn cancelled_in_scope(body: impl FnOnce(Arc<CancelScope>) + Send) -> Option<CancelCause> {
        let runtime = crate::Runtime::builder().workers(1).build().unwrap();
        runtime.block_on(|| {
            crate::scope_with(crate::ScopeOptions::new(), |_| {
                body(crate::fiber_ctx::with(|ctx| ctx.cancel.clone()).expect("a scope"))
            })
            .err()
            .map(|cancelled| cancelled.cause())
        })
    }

    /// The first step of a cancellation of `scope` alone: marked, with no hint raised.
    fn mark_only(scope: &CancelScope) {
        assert!(scope.mark((scope.id, CancelCause::Token)));
    }

    /// The innermost cancel scope of the running fiber.
    fn innermost() -> Arc<CancelScope> {
        crate::fiber_ctx::with(|ctx| ctx.cancel.clone()).expect("a scope")
    }

    #[test]
    fn a_join_that_finds_its_fiber_cancelled_unwinds_from_a_marked_scope_before_the_hint() {
        let cause = cancelled_in_scope(|body| {
            let inner = crate::spawn(|| loop {
                crate::park();
            });
            // The inner fiber's own scope is below the body's: not marked.
            mark_only(&body);
            inner.abort();
            let _ = inner.join();
            unreachable!("the join unwinds the body");
        });
        assert_eq!(cause, Some(CancelCause::Token));
    }

    #[test]
    fn a_race_whose_racers_all_ended_cancelled_unwinds_from_a_marked_scope_before_the_hint() {
        let cause = cancelled_in_scope(|body| {
            crate::race([|| {
                mark_only(&body);
                innermost().cancel(CancelCause::Token);
                loop {
                    crate::park();
                }
            }]);
            unreachable!("the race unwinds the body");
        });
        assert_eq!(cause, Some(CancelCause::Token));
    }

    #[test]
    fn a_map_whose_item_ended_cancelled_unwinds_from_a_marked_scope_before_the_hint() {
        let cause = cancelled_in_scope(|body| {
            crate::parallel_chunks(0..4, |item| {
                if item == 0 {
                    mark_only(&body);
                    innermost().cancel(CancelCause::Token);
                }
                crate::checkpoint();
                item
            });
            unreachable!("the map unwinds the body");
        });
        assert_eq!(cause, Some(CancelCause::Token));
    }

    #[test]
    fn a_dropped_child_leaves_its_parents_list() {
        let parent = CancelScope::new(None);
        let child = CancelScope::new(Some(parent.clone()));
        assert_eq!(parent.lock().children.len(), 1);
        drop(child);
        assert_eq!(parent.lock().children.len(), 0);
    }
}
