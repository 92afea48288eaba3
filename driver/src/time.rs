//! Timers on the driver's wheel.

use crate::Deadline;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A deadline on the driver's timer wheel: a future that completes at (never before) its
/// deadline. Dropping it deregisters it, exactly once.
///
/// Must be created where the driver's context is entered (a fibra worker, or inside
/// [`Driver::enter`](crate::Driver::enter)).
///
/// ```
/// let mut driver = fibra_driver::Driver::start(1).unwrap();
/// let start = std::time::Instant::now();
/// driver.handle().block_on(async {
///     fibra_driver::Timer::after(std::time::Duration::from_millis(5)).await;
/// });
/// assert!(start.elapsed() >= std::time::Duration::from_millis(5));
/// driver.shut_down();
/// ```
#[derive(Debug)]
#[must_use = "a timer does nothing unless polled"]
pub struct Timer {
    deadline: Deadline,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Timer {
    /// A timer that fires at `deadline` (an [`Instant`](std::time::Instant) or a [`Deadline`]; a never deadline
    /// never fires).
    ///
    /// # Panics
    ///
    /// Outside the driver's context (tokio's "no reactor running" message).
    pub fn at(deadline: impl Into<Deadline>) -> Timer {
        let deadline = deadline.into();
        Timer {
            deadline,
            sleep: Box::pin(tokio::time::sleep_until(deadline.timer_instant().into())),
        }
    }

    /// A timer that fires after `duration` (saturating: `Duration::MAX` is "never").
    ///
    /// # Panics
    ///
    /// As [`Timer::at`].
    pub fn after(duration: Duration) -> Timer {
        Timer::at(Deadline::after(duration))
    }

    /// The deadline asked for.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// let at = std::time::Instant::now();
    /// let timer = { let _c = driver.enter(); fibra_driver::Timer::at(at) };
    /// assert_eq!(timer.deadline(), fibra_driver::Deadline::at(at));
    /// driver.shut_down();
    /// ```
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }
}

impl Future for Timer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        // The wheel has millisecond granularity and rounds up, but the contract is "never
        // early" against `Instant::now()`: re-arm for any remainder.
        if self.deadline.has_passed() {
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        self.sleep.as_mut().reset(deadline.timer_instant().into());
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) if deadline.has_passed() => Poll::Ready(()),
            _ => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}
