//! Timers on the driver's wheel.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

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
    deadline: Instant,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

/// Deadlines further out than this are treated as "never": tokio's wheel cannot hold more.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `now + duration`, saturating at a deadline decades away (for `Duration::MAX` and the like),
/// which no wait ever reaches.
///
/// ```
/// let far = fibra_driver::deadline_after(std::time::Duration::MAX);
/// assert!(far > std::time::Instant::now());
/// ```
pub fn deadline_after(duration: Duration) -> Instant {
    let now = Instant::now();
    now + duration.min(FAR_FUTURE)
}

impl Timer {
    /// A timer that fires at `deadline`.
    ///
    /// # Panics
    ///
    /// Outside the driver's context (tokio's "no reactor running" message).
    pub fn at(deadline: Instant) -> Timer {
        let now = Instant::now();
        let clamped = now
            .checked_add(FAR_FUTURE)
            .filter(|&far| far < deadline)
            .unwrap_or(deadline);
        Timer {
            deadline,
            sleep: Box::pin(tokio::time::sleep_until(clamped.into())),
        }
    }

    /// A timer that fires after `duration` (saturating: `Duration::MAX` is "never").
    ///
    /// # Panics
    ///
    /// As [`Timer::at`].
    pub fn after(duration: Duration) -> Timer {
        Timer::at(deadline_after(duration))
    }

    /// The deadline asked for.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// let at = std::time::Instant::now();
    /// let timer = { let _c = driver.enter(); fibra_driver::Timer::at(at) };
    /// assert_eq!(timer.deadline(), at);
    /// driver.shut_down();
    /// ```
    pub fn deadline(&self) -> Instant {
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
        let now = Instant::now();
        if now >= self.deadline {
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        self.sleep.as_mut().reset(deadline.into());
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) if Instant::now() >= deadline => Poll::Ready(()),
            _ => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}
