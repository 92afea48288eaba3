//! Which process the calling fiber is.

use crate::ProcessId;
use fibra_runtime::FiberId;
use std::sync::Arc;

/// The process a fiber runs. Fibers a process spawns inherit the binding (fiber-locals are
/// snapshots), so it names the fiber it belongs to and counts only there.
pub(crate) struct Current {
    fiber: FiberId,
    pub(crate) id: ProcessId,
}

fibra_runtime::fiber_local! {
    static CURRENT: Option<Arc<Current>> = None;
}

/// Runs `f` as process `id` in the calling fiber.
pub(crate) fn enter<R>(id: ProcessId, f: impl FnOnce() -> R) -> R {
    let current = Current {
        fiber: fibra_runtime::current().id(),
        id,
    };
    CURRENT.scope(Some(Arc::new(current)), f)
}

/// The calling process, if the caller is one.
pub(crate) fn try_current() -> Option<ProcessId> {
    if !fibra_runtime::wait::in_fiber() {
        return None;
    }
    let me = fibra_runtime::current().id();
    CURRENT.with(|current| {
        current
            .as_ref()
            .filter(|current| current.fiber == me)
            .map(|current| current.id.clone())
    })
}

/// The process the calling fiber belongs to, or was spawned (directly or not) by.
pub(crate) fn lineage() -> Option<ProcessId> {
    if !fibra_runtime::wait::in_fiber() {
        return None;
    }
    CURRENT.with(|current| current.as_ref().map(|current| current.id.clone()))
}

/// The calling process.
///
/// # Panics
///
/// Outside a process, naming `what` was called.
#[track_caller]
pub(crate) fn current(what: &str) -> ProcessId {
    try_current().unwrap_or_else(|| panic!("fibra::process::{what}() called outside a process"))
}

/// The calling process's identity.
///
/// # Panics
///
/// Outside a process.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<()>| assert_eq!(process::self_id(), inbox.pid().id()));
/// ```
#[track_caller]
pub fn self_id() -> ProcessId {
    current("self_id")
}

/// The calling process's address, typed (OTP's `self()`).
///
/// # Panics
///
/// Outside a process, or if the process takes messages of another type than `M`.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<u32>| assert_eq!(process::self_pid::<u32>(), inbox.pid()));
/// ```
#[track_caller]
pub fn self_pid<M: Send + 'static>() -> crate::Pid<M> {
    current("self_pid").downcast().unwrap_or_else(|| {
        panic!(
            "fibra::process::self_pid::<{}>() called in a process of another message type",
            std::any::type_name::<M>()
        )
    })
}
