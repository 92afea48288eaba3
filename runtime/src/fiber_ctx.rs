//! What belongs to the running fiber beyond its stack: its cancel scope, its shield depth and
//! its fiber-local bindings. A plain thread has one of its own.

use crate::cancel::CancelScope;
use crate::sched::running_ptr;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// One fiber's (or thread's) context.
#[derive(Default)]
pub(crate) struct FiberCtx {
    /// The innermost cancel scope the fiber is in. Changed only through [`replace_cancel`],
    /// which keeps the fiber's cancel hint (and a thread's `THREAD_HAS_SCOPE`) in step.
    pub(crate) cancel: Option<Arc<CancelScope>>,
    /// Nesting depth of `shield`: cancellation points are off while it is above zero.
    pub(crate) shield: u32,
    /// Fiber-local bindings: key address to value.
    pub(crate) locals: Vec<(usize, Arc<dyn Any + Send + Sync>)>,
}

impl FiberCtx {
    /// The context a fiber spawned from this one starts with: the given cancel scope, and a
    /// snapshot of the bindings.
    pub(crate) fn child(&self, cancel: Option<Arc<CancelScope>>) -> FiberCtx {
        FiberCtx {
            cancel,
            shield: 0,
            locals: self.locals.clone(),
        }
    }

    /// Whether an unwind must wait: inside a shield (a wait that must end first, such as a
    /// scope's wait for the children that borrow from it), or while the thread unwinds
    /// already (a destructor that blocks must not start a second unwind, which would abort).
    /// Cancellations and deadlock verdicts both wait for this to pass.
    pub(crate) fn holds_unwinds(&self) -> bool {
        self.shield > 0 || std::thread::panicking()
    }
}

thread_local! {
    static THREAD_CTX: RefCell<FiberCtx> = const {
        RefCell::new(FiberCtx {
            cancel: None,
            shield: 0,
            locals: Vec::new(),
        })
    };
    /// Whether `THREAD_CTX` has a cancel scope: the thread's counterpart of a fiber's cancel
    /// hint, exact because only the thread itself sets it.
    static THREAD_HAS_SCOPE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the caller's context: the running fiber's, else the thread's. `f` must not
/// call user code (the context stays borrowed).
pub(crate) fn with<R>(f: impl FnOnce(&mut FiberCtx) -> R) -> R {
    match running_ptr() {
        // SAFETY: the running fiber's `Core` is alive while it runs (its worker lent it a
        // reference for this resume), and its context is only touched by the fiber itself.
        Some(core) => f(&mut unsafe { &*core }.ctx.borrow_mut()),
        None => THREAD_CTX.with(|ctx| f(&mut ctx.borrow_mut())),
    }
}

/// Makes `scope` the caller's innermost cancel scope and returns the previous one. A fiber
/// must have joined `scope` (`CancelScope::join`) first, so its cancel hint stays right.
pub(crate) fn replace_cancel(scope: Option<Arc<CancelScope>>) -> Option<Arc<CancelScope>> {
    match running_ptr() {
        Some(core) => {
            // SAFETY: as in `with`.
            let core = unsafe { &*core };
            let mut ctx = core.ctx.borrow_mut();
            let previous = std::mem::replace(&mut ctx.cancel, scope);
            core.resync_cancel_hint(ctx.cancel.as_deref());
            previous
        }
        None => {
            THREAD_HAS_SCOPE.with(|has| has.set(scope.is_some()));
            THREAD_CTX.with(|ctx| std::mem::replace(&mut ctx.borrow_mut().cancel, scope))
        }
    }
}

/// Ends the running fiber's context as its body returns, before its joiner can see the result.
/// The scope may end as soon as the fiber's packet has ended, so it is not kept alive; the
/// fiber-locals drop here, in the fiber, rather than wherever the last reference to the fiber
/// goes (a worker's list of fibers to check for deadlocks may hold it).
pub(crate) fn end_fiber() {
    // Dropped outside the borrow: a value's `Drop` may read fiber-locals. And dropped while the
    // fiber is still in its scope: a `Drop` is the fiber's code, so it sees the fiber's
    // cancellation and its cancellation points unwind, as anywhere else in the fiber.
    let locals = with(|ctx| std::mem::take(&mut ctx.locals));
    drop(locals);
    drop(replace_cancel(None));
}

/// Whether the calling thread, outside any fiber, has a cancel scope (see `THREAD_HAS_SCOPE`).
#[inline]
pub(crate) fn thread_has_scope() -> bool {
    THREAD_HAS_SCOPE.with(Cell::get)
}
