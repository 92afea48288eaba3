//! What becomes of a panic that reaches the scheduler instead of a fiber's own `catch_unwind`.
//!
//! A fiber's closure runs under `catch_unwind`, but user code also runs around it: the waker of
//! an async joiner, the `Drop` of a result nobody will take, a panic payload's `Drop`, the drop
//! of a closure that never started. A panic there must not unwind through `resume` into the
//! worker loop (that would kill the worker with fibers homed on it, and leave the thread
//! believing it still runs a fiber). Such panics are reported and the worker goes on, as tokio
//! does for a panicking task output `Drop`.

use crate::spawn::panic_message;
use std::panic::{self, AssertUnwindSafe};

/// Runs `f`; a panic out of it is logged with `what` and dropped (a payload whose own `Drop`
/// panics is leaked).
pub(crate) fn contain(what: &str, f: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
        tracing::error!(
            panic = panic_message(&*payload).unwrap_or("(a non-string payload)"),
            "fibra: a panic escaped {what}; the worker goes on"
        );
        if let Err(second) = panic::catch_unwind(AssertUnwindSafe(|| drop(payload))) {
            std::mem::forget(second);
        }
    }
}

/// Aborts the process if dropped while the thread unwinds: a worker loop that unwinds would
/// run its thread's TLS destructors while fibers elsewhere may still borrow from them.
pub(crate) struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        // Here the thread runs no fiber, so `panicking` is the worker's own.
        if std::thread::panicking() {
            eprintln!(
                "fibra: a worker thread's scheduling loop panicked; aborting, since fibers \
                 may still borrow from its thread-locals"
            );
            std::process::abort();
        }
    }
}
