//! What belongs to the running fiber beyond its stack: its cancel scope, its shield depth and
//! its fiber-local bindings. A plain thread has one of its own.

use crate::cancel::CancelScope;
use crate::sched::with_running;
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// One fiber's (or thread's) context.
#[derive(Default)]
pub(crate) struct FiberCtx {
    /// The innermost cancel scope the fiber is in.
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
}

thread_local! {
    static THREAD_CTX: RefCell<FiberCtx> = RefCell::new(FiberCtx::default());
}

/// Runs `f` with the caller's context: the running fiber's, else the thread's. `f` must not
/// call user code (the context stays borrowed).
pub(crate) fn with<R>(f: impl FnOnce(&mut FiberCtx) -> R) -> R {
    match with_running(|core| core.map(|core| core as *const crate::fiber::Core)) {
        // SAFETY: the running fiber's `Core` is alive while it runs (its worker lent it a
        // reference for this resume), and its context is only touched by the fiber itself.
        Some(core) => f(&mut unsafe { &*core }.ctx.borrow_mut()),
        None => THREAD_CTX.with(|ctx| f(&mut ctx.borrow_mut())),
    }
}
