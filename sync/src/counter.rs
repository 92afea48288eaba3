//! The count under [`CountDownLatch`](crate::CountDownLatch) and
//! [`WaitGroup`](crate::WaitGroup): an atomic counter plus the [`EventCount`] that announces it
//! reaching zero.

use crate::event_count::{EventCount, Until};
use crate::TimedOut;
use fibra_runtime::wait::Deadline;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

pub(crate) struct Counter {
    count: AtomicUsize,
    reached_zero: EventCount,
}

impl Counter {
    const_unless_loom! {
        pub(crate) fn new(count: usize) -> Counter {
            Counter {
                count: AtomicUsize::new(count),
                reached_zero: EventCount::new(),
            }
        }
    }

    pub(crate) fn get(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Applies `change` (as `fetch_update`: `None` leaves the count alone and is returned as
    /// `Err`); a change down to zero releases the waiters.
    pub(crate) fn update(
        &self,
        mut change: impl FnMut(usize) -> Option<usize>,
    ) -> Result<usize, usize> {
        let mut next = 0;
        let before = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                next = change(count)?;
                Some(next)
            });
        if before.is_ok_and(|before| before > 0 && next == 0) {
            self.reached_zero.advance();
        }
        before
    }

    pub(crate) fn wait(&self, deadline: Deadline) -> Result<(), TimedOut> {
        self.reached_zero.wait_until(|| self.is_zero(), deadline)
    }

    pub(crate) fn wait_async(&self) -> UntilZero<'_> {
        UntilZero(Until::new(&self.reached_zero, self, Counter::is_zero))
    }

    fn is_zero(&self) -> bool {
        self.get() == 0
    }
}

/// The future of [`CountDownLatch::wait_async`](crate::CountDownLatch::wait_async) and
/// [`WaitGroup::wait_async`](crate::WaitGroup::wait_async): completes once the count is zero.
#[must_use = "futures do nothing unless polled"]
pub struct UntilZero<'a>(Until<'a, Counter>);

impl Future for UntilZero<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.poll(cx)
    }
}

impl fmt::Debug for UntilZero<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UntilZero").finish_non_exhaustive()
    }
}
