//! What the current thread is: a worker (and of which runtime), and which fiber it runs.

use super::worker::Local;
use crate::fiber::Core;
use std::cell::Cell;
use std::ptr;

thread_local! {
    /// The worker running on this thread, while its loop runs.
    static WORKER: Cell<*const Local> = const { Cell::new(ptr::null()) };
    /// The fiber this thread is running, while it runs. Also read by the overflow signal
    /// handler, hence a plain const-initialised cell.
    static RUNNING: Cell<*const Core> = const { Cell::new(ptr::null()) };
}

/// Marks the current thread as running `local`'s loop until the guard drops.
pub(crate) struct EnterWorker(());

impl EnterWorker {
    /// # Panics
    ///
    /// If this thread already runs a worker (a runtime started from inside a fiber).
    pub(crate) fn new(local: &Local) -> EnterWorker {
        WORKER.with(|worker| {
            assert!(
                worker.get().is_null(),
                "cannot start a fibra runtime on a thread that is already a fibra worker \
                 (a runtime was started from inside a fiber)"
            );
            worker.set(local);
        });
        EnterWorker(())
    }
}

impl Drop for EnterWorker {
    fn drop(&mut self) {
        WORKER.with(|worker| worker.set(ptr::null()));
    }
}

/// Runs `f` with the current worker, if this thread is one.
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
    let local = WORKER.with(Cell::get);
    // SAFETY: a non-null pointer was set by `EnterWorker::new` from a `Local` that outlives the
    // guard (the worker loop owns both and drops the guard first), and is cleared on drop; the
    // `Local` is only used by this thread.
    f(unsafe { local.as_ref() })
}

/// Sets the running fiber for the duration of a resume.
pub(crate) fn set_running(core: *const Core) {
    RUNNING.with(|running| running.set(core));
}

/// The fiber running on this thread, borrowed for `f`.
pub(crate) fn with_running<R>(f: impl FnOnce(Option<&Core>) -> R) -> R {
    let core = RUNNING.with(Cell::get);
    // SAFETY: a non-null pointer is the `Arc<Core>` the worker holds for the whole resume, and
    // it is reset to null when the resume returns; only code on this fiber reads it.
    f(unsafe { core.as_ref() })
}

/// Describes the fiber running on this thread for the overflow report: `'name' (id 7)`.
/// Async-signal-safe: reads a thread-local cell and the fiber's immutable fields, writes bytes.
pub(crate) fn describe_running(out: &mut dyn FnMut(&[u8])) {
    let core = RUNNING.try_with(Cell::get).unwrap_or(ptr::null());
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
