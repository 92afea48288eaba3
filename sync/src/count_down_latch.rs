//! [`CountDownLatch`]: a one-shot [`Counter`].

use crate::counter::Counter;
use crate::counter_waits::counter_waits;
use std::fmt;

/// A one-shot latch: waiters park until [`count_down`](Self::count_down) has been called
/// `count` times. Counting down past zero does nothing (it saturates).
///
/// ```
/// use fibra::sync::CountDownLatch;
///
/// let workers_ready = CountDownLatch::new(3);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..3 {
///             s.spawn(|| workers_ready.count_down());
///         }
///         workers_ready.wait();
///         assert_eq!(workers_ready.count(), 0);
///     });
/// });
/// ```
pub struct CountDownLatch {
    counter: Counter,
}

impl CountDownLatch {
    const_unless_loom! {
        /// A latch that opens after `count` count-downs.
        ///
        /// # Panics
        ///
        /// If `count` is 0 (the latch would be open from the start).
        ///
        /// ```should_panic
        /// fibra::sync::CountDownLatch::new(0);
        /// ```
        pub fn new(count: usize) -> CountDownLatch {
            assert!(count > 0, "CountDownLatch::new(0): a latch must start above zero");
            CountDownLatch {
                counter: Counter::new(count),
            }
        }
    }

    /// Counts down by one; at zero, releases every waiter.
    ///
    /// ```
    /// let latch = fibra::sync::CountDownLatch::new(1);
    /// latch.count_down();
    /// latch.count_down(); // saturates
    /// assert_eq!(latch.count(), 0);
    /// ```
    pub fn count_down(&self) {
        self.count_down_n(1);
    }

    /// Counts down by `n`, stopping at zero; at zero, releases every waiter.
    ///
    /// ```
    /// let latch = fibra::sync::CountDownLatch::new(5);
    /// latch.count_down_n(3);
    /// assert_eq!(latch.count(), 2);
    /// latch.count_down_n(10);
    /// assert_eq!(latch.count(), 0);
    /// ```
    pub fn count_down_n(&self, n: usize) {
        // Leaving zero alone keeps it from announcing zero twice.
        let _ = self
            .counter
            .update(|count| (count > 0).then(|| count.saturating_sub(n)));
    }

    counter_waits! {
        kind CountDownLatch;

        /// The count left (a snapshot).
        ///
        /// ```
        /// assert_eq!(fibra::sync::CountDownLatch::new(4).count(), 4);
        /// ```
        fn count;

        /// Parks the caller until the count is zero.
        ///
        /// ```
        /// let latch = fibra::sync::CountDownLatch::new(1);
        /// fibra::run(|| {
        ///     fibra::scope(|s| {
        ///         let opener = s.spawn(|| latch.count_down());
        ///         latch.wait();
        ///         opener.join().unwrap();
        ///     });
        /// });
        /// ```
        fn wait;

        /// Parks the caller until the count is zero, for at most `timeout`.
        ///
        /// ```
        /// use std::time::Duration;
        ///
        /// let latch = fibra::sync::CountDownLatch::new(1);
        /// assert!(latch.wait_timeout(Duration::from_millis(1)).is_err());
        /// latch.count_down();
        /// assert!(latch.wait_timeout(Duration::from_secs(1)).is_ok());
        /// ```
        fn wait_timeout;

        /// A future that completes once the count is zero.
        ///
        /// ```
        /// let latch = fibra::sync::CountDownLatch::new(1);
        /// latch.count_down();
        /// futures::executor::block_on(latch.wait_async());
        /// ```
        fn wait_async;
    }
}

impl fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("count", &self.count())
            .finish_non_exhaustive()
    }
}
