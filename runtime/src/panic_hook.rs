//! The panic hook that names the fiber: a panic in a fiber is reported as
//! `fiber 'name' (id 7) panicked at src/x.rs:3:5:` rather than under the name of whichever
//! worker thread ran it; every other panic goes to the hook installed before.

use crate::wait::running_fiber;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::fmt::Write;
use std::panic::{self, PanicHookInfo};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Installs the hook, once per process, in front of the hook that was set before it.
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| match fiber_report(info) {
            // One write, so that reports of panics on several workers do not interleave.
            Some(report) => eprint!("{report}"),
            None => previous(info),
        }));
    });
}

/// The report of a panic in a fiber whose runtime asked for this hook; `None` otherwise.
fn fiber_report(info: &PanicHookInfo<'_>) -> Option<String> {
    let fiber = running_fiber().filter(|fiber| fiber.0.shared.config.panic_hook)?;
    let name = fiber.name().unwrap_or("<unnamed>");
    let mut report = format!("fiber '{name}' (id {}) panicked", fiber.id());
    if let Some(location) = info.location() {
        let _ = write!(report, " at {location}");
    }
    let message = crate::spawn::panic_message(info.payload()).unwrap_or("Box<dyn Any>");
    let _ = writeln!(report, ":\n{message}");
    let backtrace = Backtrace::capture();
    match backtrace.status() {
        BacktraceStatus::Captured => {
            let _ = writeln!(report, "stack backtrace:\n{backtrace}");
        }
        // As std's hook: the hint once per process.
        BacktraceStatus::Disabled => {
            static HINTED: AtomicBool = AtomicBool::new(false);
            if !HINTED.swap(true, Ordering::Relaxed) {
                report.push_str(
                    "note: run with `RUST_BACKTRACE=1` environment variable to display a \
                     backtrace\n",
                );
            }
        }
        _ => {}
    }
    Some(report)
}
