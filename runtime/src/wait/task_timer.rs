//! Waking a future's task at a deadline: the timed wait of code that polls instead of parking.
//!
//! A blocking caller times its wait with [`park_current_until`](super::park_current_until); a
//! future needs its task woken instead, by a driver's timer either way. Inside a tokio context
//! (every fibra worker enters the driver's) that is the context's timer, and on a fibra worker
//! it takes a `Timer` hold, like every other timed wait. Outside any tokio runtime
//! (`futures::executor::block_on` on a plain thread) it is the process's fallback driver
//! (`fibra_driver::Driver::fallback`), and no runtime is there to see a hold.

use crate::holds;
use fibra_driver::{Deadline, Driver, Hold, HoldKind, Timer};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that completes at (never before) its deadline and can be polled by any task.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(2);
/// // On a plain thread, outside any runtime:
/// futures::executor::block_on(fibra::wait::TaskTimer::at(deadline));
/// assert!(Instant::now() >= deadline);
/// // In a fiber (the driver's timer, with a hold meanwhile):
/// fibra::run(|| fibra::block_on(fibra::wait::TaskTimer::at(Instant::now())));
/// ```
#[must_use = "a timer does nothing unless polled"]
pub struct TaskTimer {
    timer: Timer,
    _hold: Option<Hold>,
}

impl TaskTimer {
    /// A timer for `deadline` (an `Instant` or a [`Deadline`]; a never deadline never fires).
    #[track_caller]
    pub fn at(deadline: impl Into<Deadline>) -> TaskTimer {
        let deadline = deadline.into();
        if tokio::runtime::Handle::try_current().is_ok() {
            return TaskTimer {
                timer: Timer::at(deadline),
                _hold: holds::take(HoldKind::Timer),
            };
        }
        let _context = Driver::fallback().enter();
        TaskTimer {
            timer: Timer::at(deadline),
            _hold: None,
        }
    }

    /// The deadline asked for.
    ///
    /// ```
    /// let timer = fibra::wait::TaskTimer::at(fibra::wait::Deadline::NEVER);
    /// assert!(timer.deadline().is_never());
    /// ```
    pub fn deadline(&self) -> Deadline {
        self.timer.deadline()
    }
}

impl Future for TaskTimer {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.get_mut().timer).poll(cx)
    }
}

impl fmt::Debug for TaskTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskTimer")
            .field("deadline", &self.timer.deadline())
            .finish_non_exhaustive()
    }
}
