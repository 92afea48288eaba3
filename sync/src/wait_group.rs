//! [`WaitGroup`]: Go's, over a [`Counter`].

use crate::counter::Counter;
use crate::counter_waits::counter_waits;
use std::fmt;

/// Waits for a collection of tasks to finish, like Go's `sync.WaitGroup`: [`add`](Self::add)
/// before starting work, [`done`](Self::done) when each piece finishes, [`wait`](Self::wait)
/// until the counter is back at zero. Reusable once it is.
///
/// ```
/// use fibra::sync::WaitGroup;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let (wg, finished) = (Arc::new(WaitGroup::new()), Arc::new(AtomicUsize::new(0)));
/// fibra::run(|| {
///     for _ in 0..4 {
///         wg.add(1);
///         let (wg, finished) = (wg.clone(), finished.clone());
///         fibra::spawn(move || {
///             finished.fetch_add(1, Ordering::SeqCst);
///             wg.done();
///         });
///     }
///     wg.wait();
///     assert_eq!(finished.load(Ordering::SeqCst), 4);
/// });
/// ```
pub struct WaitGroup {
    counter: Counter,
}

impl WaitGroup {
    const_unless_loom! {
        /// A wait group at zero.
        ///
        /// ```
        /// static TASKS: fibra::sync::WaitGroup = fibra::sync::WaitGroup::new();
        /// TASKS.wait(); // zero: returns at once
        /// ```
        pub fn new() -> WaitGroup {
            WaitGroup {
                counter: Counter::new(0),
            }
        }
    }

    /// Adds `n` to the counter.
    ///
    /// # Panics
    ///
    /// If the counter would overflow.
    ///
    /// ```
    /// let wg = fibra::sync::WaitGroup::new();
    /// wg.add(2);
    /// assert_eq!(wg.count(), 2);
    /// ```
    pub fn add(&self, n: usize) {
        if self.counter.update(|count| count.checked_add(n)).is_err() {
            panic!("WaitGroup::add({n}) overflows the counter");
        }
    }

    /// Subtracts one from the counter; at zero, releases every waiter.
    ///
    /// # Panics
    ///
    /// If the counter is already zero (more `done`s than `add`s: Go's "negative WaitGroup
    /// counter").
    ///
    /// ```should_panic
    /// fibra::sync::WaitGroup::new().done();
    /// ```
    pub fn done(&self) {
        if self.counter.update(|count| count.checked_sub(1)).is_err() {
            panic!("WaitGroup::done() with the counter at zero: negative WaitGroup counter");
        }
    }

    counter_waits! {
        kind WaitGroup;

        /// The counter (a snapshot).
        ///
        /// ```
        /// assert_eq!(fibra::sync::WaitGroup::new().count(), 0);
        /// ```
        fn count;

        /// Parks the caller until the counter is zero.
        ///
        /// ```
        /// let wg = fibra::sync::WaitGroup::new();
        /// wg.add(1);
        /// fibra::run(|| {
        ///     fibra::scope(|s| {
        ///         let worker = s.spawn(|| wg.done());
        ///         wg.wait();
        ///         worker.join().unwrap();
        ///     });
        /// });
        /// ```
        fn wait;

        /// Parks the caller until the counter is zero, for at most `timeout`.
        ///
        /// ```
        /// use std::time::Duration;
        ///
        /// let wg = fibra::sync::WaitGroup::new();
        /// wg.add(1);
        /// assert!(wg.wait_timeout(Duration::from_millis(1)).is_err());
        /// wg.done();
        /// assert!(wg.wait_timeout(Duration::from_secs(1)).is_ok());
        /// ```
        fn wait_timeout;

        /// A future that completes once the counter is zero.
        ///
        /// ```
        /// let wg = fibra::sync::WaitGroup::new();
        /// futures::executor::block_on(wg.wait_async());
        /// ```
        fn wait_async;
    }
}

impl Default for WaitGroup {
    fn default() -> Self {
        WaitGroup::new()
    }
}

impl fmt::Debug for WaitGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitGroup")
            .field("count", &self.count())
            .finish_non_exhaustive()
    }
}
