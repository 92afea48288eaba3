//! Sleeping and timed parking on the driver's timer wheel.

use crate::diag::Published;
use crate::wait::{in_fiber, park_current_until_at, park_fiber, FiberTimer};
use crate::wait::{Deadline, WaitKind, WaitSite};
use std::thread;
use std::time::{Duration, Instant};

/// Suspends the calling fiber for at least `duration` (never less); on a plain thread, sleeps
/// the thread. `Duration::MAX` sleeps for good, without overflow. Every call is a cancellation
/// point, `Duration::ZERO` included.
///
/// ```
/// let start = std::time::Instant::now();
/// fibra::run(|| fibra::sleep(std::time::Duration::from_millis(3)));
/// assert!(start.elapsed() >= std::time::Duration::from_millis(3));
/// ```
#[track_caller]
pub fn sleep(duration: Duration) {
    sleep_at(Deadline::after(duration));
}

/// Suspends the calling fiber until `deadline` (never before); on a plain thread, sleeps the
/// thread. Every call is a cancellation point, a deadline already passed included.
///
/// ```
/// let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2);
/// fibra::run(|| fibra::sleep_until(deadline));
/// assert!(std::time::Instant::now() >= deadline);
/// ```
#[track_caller]
pub fn sleep_until(deadline: Instant) {
    sleep_at(Deadline::at(deadline));
}

#[track_caller]
fn sleep_at(deadline: Deadline) {
    if !in_fiber() {
        while !deadline.has_passed() {
            thread::sleep(deadline.remaining());
        }
        return;
    }
    // A cancellation point costing a reduction even when the deadline has passed, so a loop
    // of such sleeps can be cancelled and shares its worker; that sleep needs no timer.
    crate::checkpoint();
    if deadline.has_passed() {
        return;
    }
    let mut timer = FiberTimer::at(deadline);
    let published = Published::new(&WaitSite::new(WaitKind::Sleep, &timer), true);
    // Wake-ups meant for other waits of this fiber only cause a re-poll.
    while !timer.expired() {
        park_fiber();
    }
    drop(published);
}

/// Parks the calling fiber until it is unparked or `timeout` has passed, whichever is first
/// ([`park`](crate::park) with a bound). Like `park`, it may return early without either.
///
/// # Panics
///
/// Outside a fiber.
///
/// ```
/// fibra::run(|| {
///     // Nobody unparks us: this returns once the timeout has passed.
///     let start = std::time::Instant::now();
///     fibra::park_timeout(std::time::Duration::from_millis(2));
///     assert!(start.elapsed() >= std::time::Duration::from_millis(2));
/// });
/// ```
#[track_caller]
pub fn park_timeout(timeout: Duration) {
    assert!(
        in_fiber(),
        "fibra::park_timeout() called outside a fiber of a fibra runtime"
    );
    park_current_until_at(
        Deadline::after(timeout),
        &WaitSite::new(WaitKind::Sleep, &timeout),
    );
}
