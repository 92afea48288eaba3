//! The count under [`CountDownLatch`](crate::CountDownLatch) and
//! [`WaitGroup`](crate::WaitGroup): an atomic counter plus the [`EventCount`] that announces it
//! reaching zero.

use crate::event_count::{Announced, EventCount};
use crate::TimedOut;
use fibra_runtime::wait::{Deadline, WaitKind, WaitSite};
use std::sync::atomic::{AtomicUsize, Ordering};

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

    /// Parks the caller until the count is zero; its wait is shown as a `kind` wait on
    /// `owner` (the latch or wait group), at the caller's location. Only a change down to zero
    /// advances the event count, so a waiter present then returns even if the count has risen
    /// again (a wait group's `add`) before it runs.
    #[track_caller]
    pub(crate) fn wait<T>(
        &self,
        deadline: Deadline,
        kind: WaitKind,
        owner: &T,
    ) -> Result<(), TimedOut> {
        let site = WaitSite::new(kind, owner);
        self.reached_zero
            .wait_announced(|| self.is_zero(), deadline, &site)
    }

    /// The future form of [`wait`](Self::wait); its wait begins when it is first polled.
    pub(crate) fn wait_async(&self) -> UntilZero<'_> {
        UntilZero::new(Announced::new(&self.reached_zero, self, Counter::is_zero))
    }

    fn is_zero(&self) -> bool {
        self.get() == 0
    }
}

announced_future! {
    /// The future of [`CountDownLatch::wait_async`](crate::CountDownLatch::wait_async) and
    /// [`WaitGroup::wait_async`](crate::WaitGroup::wait_async): completes once the count is zero.
    UntilZero for Counter
}
