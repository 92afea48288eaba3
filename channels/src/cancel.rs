//! The cancellation point of every blocking channel operation.
//!
//! Every blocking operation of this crate and of `fibra-select` starts with [`point`] and
//! parks only in [`crate::wait::block`], through the runtime's park, which is itself a
//! cancellation point: a cancelled fiber unwinds out of it. The unwind is safe and loses
//! nothing: `op::wait` holds its registrations in a guard that, on unwinding, withdraws the
//! waiter and removes every registration before the waiter (on the unwinding stack) goes
//! away; and if an operation completed just before — a value was already handed to a
//! receive — the value goes back to the channel instead of being dropped.
//!
//! While the caller is already unwinding (a channel operation in a destructor during a
//! cancellation), operations are not cancellation points: a second unwind would abort. They
//! then park shielded.

/// Whether the caller is unwinding already, so that nothing may start another unwind.
///
/// `std::thread::panicking()` is per thread while fibers share threads; it means "this fiber
/// unwinds" only because the runtime never lets an unwinding fiber suspend (its waits block
/// the worker thread instead), so no other fiber runs on the thread while it is true. Outside
/// fibers it is the thread's own state.
#[cfg(not(loom))]
#[inline]
pub(crate) fn unwinding() -> bool {
    std::thread::panicking()
}

/// A cancellation point at the start of a blocking operation, charging its reduction too.
#[inline]
pub(crate) fn point() {
    #[cfg(not(loom))]
    if !unwinding() {
        fibra_runtime::checkpoint();
    }
}
