//! What the current thread is: a worker (and of which runtime), and which fiber it runs.

use super::worker::Local;
use crate::fiber::Core;
use std::cell::Cell;
use std::ptr;

/// What this thread is doing, in one thread-local so a safepoint costs one TLS access.
struct Current {
    /// The worker running on this thread, while its loop runs.
    worker: Cell<*const Local>,
    /// The fiber this thread is running, while it runs. Also read by the overflow signal
    /// handler, hence plain cells in a const-initialised thread-local without a destructor.
    running: Cell<*const Core>,
    /// Reductions left in the running fiber's slice; meaningless while no fiber runs.
    budget: Cell<u32>,
    /// The worker's coarse clock as of its last look (`WorkerSlots::tick`): when a wait that
    /// is published now began, read without following pointers (the load right before a
    /// park's fence would stall it).
    clock: Cell<u64>,
}

thread_local! {
    static CURRENT: Current = const {
        Current {
            worker: Cell::new(ptr::null()),
            running: Cell::new(ptr::null()),
            budget: Cell::new(0),
            clock: Cell::new(0),
        }
    };
}

/// Marks the current thread as running `local`'s loop until the guard drops.
pub(crate) struct EnterWorker(());

impl EnterWorker {
    /// # Panics
    ///
    /// If this thread already runs a worker (a runtime started from inside a fiber).
    pub(crate) fn new(local: &Local) -> EnterWorker {
        CURRENT.with(|current| {
            assert!(
                current.worker.get().is_null(),
                "cannot start a fibra runtime on a thread that is already a fibra worker \
                 (a runtime was started from inside a fiber)"
            );
            current.worker.set(local);
        });
        EnterWorker(())
    }
}

impl Drop for EnterWorker {
    fn drop(&mut self) {
        CURRENT.with(|current| current.worker.set(ptr::null()));
    }
}

/// Runs `f` with the current worker, if this thread is one.
#[inline]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
    let local = CURRENT.with(|current| current.worker.get());
    // SAFETY: a non-null pointer was set by `EnterWorker::new` from a `Local` that outlives the
    // guard (the worker loop owns both and drops the guard first), and is cleared on drop; the
    // `Local` is only used by this thread.
    f(unsafe { local.as_ref() })
}

/// Marks `core` as the fiber this thread runs, with `budget` reductions for its slice, until
/// the guard drops (also if the resume unwinds), so the thread never believes it still runs a
/// fiber that has stopped.
pub(crate) struct Running(());

impl Running {
    pub(crate) fn set(core: *const Core, budget: u32) -> Running {
        CURRENT.with(|current| {
            current.running.set(core);
            current.budget.set(budget);
        });
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        CURRENT.with(|current| {
            current.running.set(ptr::null());
            current.budget.set(0);
        });
    }
}

/// The fiber running on this thread, borrowed for `f`.
#[inline]
pub(crate) fn with_running<R>(f: impl FnOnce(Option<&Core>) -> R) -> R {
    let core = CURRENT.with(|current| current.running.get());
    // SAFETY: a non-null pointer is the `Arc<Core>` the worker holds for the whole resume, and
    // it is reset to null when the resume returns; only code on this fiber reads it.
    f(unsafe { core.as_ref() })
}

/// The fiber running on this thread, as the pointer its worker set: made from the worker's
/// `Arc<Core>`, so reference counts may be changed through it (a pointer made from a `&Core`
/// covers only the `Core`, not the counts beside it).
#[inline]
pub(crate) fn running_ptr() -> Option<*const Core> {
    let core = CURRENT.with(|current| current.running.get());
    (!core.is_null()).then_some(core)
}

/// The fiber running on this thread, and the worker's clock (see [`set_clock`]), in one
/// access: what a wait needs to publish itself.
#[inline]
pub(crate) fn with_running_clock<R>(f: impl FnOnce(Option<&Core>, u64) -> R) -> R {
    let (core, clock) = CURRENT.with(|current| (current.running.get(), current.clock.get()));
    // SAFETY: as in `with_running`.
    f(unsafe { core.as_ref() }, clock)
}

/// Sets the worker's clock on this thread (a worker thread, as it looks at the time).
#[inline]
pub(crate) fn set_clock(now: u64) {
    CURRENT.with(|current| current.clock.set(now));
}

/// Charges one reduction to the running fiber; true when its slice is used up.
/// Always false outside a fiber, where there is no slice to end.
#[inline]
pub(crate) fn charge() -> bool {
    CURRENT.with(|current| !current.running.get().is_null() && charge_in(current))
}

/// A safepoint's thread-local work in one access: the running fiber, if any, and whether the
/// reduction charged to it used up its slice.
#[inline]
pub(crate) fn with_running_charged<R>(f: impl FnOnce(Option<&Core>, bool) -> R) -> R {
    let (core, spent) = CURRENT.with(|current| {
        let core = current.running.get();
        (core, !core.is_null() && charge_in(current))
    });
    // SAFETY: as in `with_running`.
    f(unsafe { core.as_ref() }, spent)
}

/// Ends the running fiber's slice: the next reduction charged to it yields.
pub(crate) fn end_slice() {
    CURRENT.with(|current| current.budget.set(0));
}

#[inline]
fn charge_in(current: &Current) -> bool {
    // Saturating, so a fiber that did not yield when its slice ended (a cancellation unwound
    // it first) is told again at its next safepoint.
    let left = current.budget.get().saturating_sub(1);
    current.budget.set(left);
    left == 0
}

/// Describes the fiber running on this thread for the overflow report: `'name' (id 7)`.
/// Async-signal-safe: reads a thread-local cell and the fiber's immutable fields, writes bytes.
pub(crate) fn describe_running(out: &mut dyn FnMut(&[u8])) {
    let core = CURRENT
        .try_with(|current| current.running.get())
        .unwrap_or(ptr::null());
    // SAFETY: as in `with_running`; the fiber that overflowed is mid-resume, so the worker's
    // `Arc` keeps it alive.
    let Some(core) = (unsafe { core.as_ref() }) else {
        out(b"(unknown)");
        return;
    };
    if let Some(name) = &core.name {
        out(b"'");
        out(name.as_bytes());
        out(b"' ");
    }
    out(b"(id ");
    crate::stack::write_decimal(core.id.as_u64(), out);
    out(b")");
}
