//! What `#[fibra::test]`'s harness asks of the runtime, and no program should.

use crate::diag::GlobalCheck;

/// Runs `watchdog` with the calling thread left out of every global deadlock check: for the
/// harness's watchdog, whose timed wait would otherwise keep the check from ever finding the
/// test's deadlock, and which wakes a fiber only by cancelling a test that outlasted its
/// timeout.
#[doc(hidden)]
pub fn __as_watchdog<T>(watchdog: impl FnOnce() -> T) -> T {
    GlobalCheck::leaving_out_current_thread(watchdog)
}
