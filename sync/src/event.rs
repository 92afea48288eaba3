//! [`Event`]: a flag plus the [`EventCount`] that announces its setting.

use crate::event_count::{Announced, EventCount};
use crate::TimedOut;
use fibra_runtime::wait::{Deadline, WaitKind, WaitSite};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A manual-reset event: [`set`](Self::set) releases every waiter, present and future, until
/// [`reset`](Self::reset). A waiter present at a `set` returns even if a `reset` follows
/// before it runs.
///
/// ```
/// use fibra::sync::Event;
///
/// let ready = Event::new();
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..3 {
///             s.spawn(|| ready.wait());
///         }
///         ready.set();
///     });
/// });
/// assert!(ready.is_set());
/// ```
pub struct Event {
    set: AtomicBool,
    changed: EventCount,
}

impl Event {
    const_unless_loom! {
        /// An event that is not set.
        ///
        /// ```
        /// static STARTED: fibra::sync::Event = fibra::sync::Event::new();
        /// assert!(!STARTED.is_set());
        /// ```
        pub fn new() -> Event {
            Event {
                set: AtomicBool::new(false),
                changed: EventCount::new(),
            }
        }
    }

    /// Sets the event and releases every waiter, including those that have not run yet when a
    /// [`reset`](Self::reset) follows.
    ///
    /// ```
    /// let e = fibra::sync::Event::new();
    /// e.set();
    /// e.wait(); // returns at once
    /// ```
    pub fn set(&self) {
        if !self.set.swap(true, Ordering::Release) {
            self.changed.advance();
        }
    }

    /// Clears the event: later waits park until the next [`set`](Self::set).
    ///
    /// ```
    /// let e = fibra::sync::Event::new();
    /// e.set();
    /// e.reset();
    /// assert!(!e.is_set());
    /// ```
    pub fn reset(&self) {
        self.set.store(false, Ordering::Relaxed);
    }

    /// Whether the event is set.
    ///
    /// ```
    /// let e = fibra::sync::Event::new();
    /// assert!(!e.is_set());
    /// e.set();
    /// assert!(e.is_set());
    /// ```
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Parks the caller until the event is set.
    ///
    /// ```
    /// let e = fibra::sync::Event::new();
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let waiter = s.spawn(|| e.wait());
    ///         e.set();
    ///         waiter.join().unwrap();
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn wait(&self) {
        // Without a deadline the wait cannot time out.
        let _ = self.wait_until(Deadline::NEVER);
    }

    /// Parks the caller until the event is set, for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let e = fibra::sync::Event::new();
    /// assert!(e.wait_timeout(Duration::from_millis(1)).is_err());
    /// e.set();
    /// assert!(e.wait_timeout(Duration::from_secs(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn wait_timeout(&self, timeout: Duration) -> Result<(), TimedOut> {
        self.wait_until(Deadline::after(timeout))
    }

    /// Only a `set` advances the event count, so a waiter that sees it move was released by a
    /// set during its wait, even if a reset has cleared the flag again.
    #[track_caller]
    fn wait_until(&self, deadline: Deadline) -> Result<(), TimedOut> {
        let site = WaitSite::new(WaitKind::Event, self);
        self.changed
            .wait_announced(|| self.is_set(), deadline, &site)
    }

    /// A future that completes once the event is set; its wait begins when it is first polled.
    ///
    /// ```
    /// let e = fibra::sync::Event::new();
    /// e.set();
    /// futures::executor::block_on(e.wait_async());
    /// ```
    pub fn wait_async(&self) -> EventWait<'_> {
        EventWait::new(Announced::new(&self.changed, self, Event::is_set))
    }
}

impl Default for Event {
    fn default() -> Self {
        Event::new()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("set", &self.is_set())
            .finish_non_exhaustive()
    }
}

announced_future! {
    /// The future of [`Event::wait_async`].
    EventWait for Event
}
