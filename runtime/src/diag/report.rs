//! Printing a deadlock report: once, through `tracing` and on stderr.

use crate::fiber::Core;
use crate::sched::Shared;
use std::sync::atomic::Ordering;

/// Reports a deadlock of the runtime of `shared`: emits `text` and counts it in the metrics.
pub(crate) fn deadlock(shared: &Shared, text: &str) {
    emit(text);
    shared.deadlocks.fetch_add(1, Ordering::Relaxed);
}

/// Sends `text` to `tracing::error!` and stderr.
pub(crate) fn emit(text: &str) {
    tracing::error!(target: "fibra::deadlock", "{text}");
    eprintln!("{text}");
}

/// `fiber 7 "name"`, or `fiber 7` without a name.
pub(crate) fn fiber_label(core: &Core) -> String {
    match &core.name {
        Some(name) => format!("fiber {} {:?}", core.id, name),
        None => format!("fiber {}", core.id),
    }
}
