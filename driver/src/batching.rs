//! Batching the driver thread's readiness wake-ups.
//!
//! Each time the driver thread runs out of work it waits in `epoll_wait`, and each event that
//! wakes it costs a trip through the OS scheduler. When its last turn woke several fibers (many
//! sockets are busy), it first yields its core: the woken fibers' workers and their peers run,
//! and the next `epoll_wait` collects the events they caused in one batch instead of being
//! woken for each. A turn that woke at most one fiber does not yield, so a lone connection's
//! round trip never waits behind unrelated threads.

use std::cell::Cell;

thread_local! {
    /// Wakes this thread sent to other threads since the driver thread last looked.
    static WAKES: Cell<u32> = const { Cell::new(0) };
}

/// Wakes in one driver turn above which the driver yields before it waits for events.
#[cfg_attr(loom, allow(dead_code))]
const BATCHING: u32 = 1;

/// Records that the calling thread has woken a fiber (or thread) that runs elsewhere. Only the
/// driver thread's count is used: it decides whether the driver yields before its next wait.
///
/// ```
/// fibra_driver::note_remote_wake();
/// ```
#[inline]
pub fn note_remote_wake() {
    WAKES.with(|wakes| wakes.set(wakes.get().saturating_add(1)));
}

/// The driver thread's hook before it waits for events (see the module docs); not installed
/// under loom, whose tokio has no park hooks.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn before_wait() {
    if WAKES.with(|wakes| wakes.replace(0)) > BATCHING {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_taken_by_each_look() {
        note_remote_wake();
        note_remote_wake();
        before_wait();
        assert_eq!(WAKES.with(Cell::get), 0);
        note_remote_wake();
        assert_eq!(WAKES.with(Cell::get), 1);
    }
}
