//! [`EventCount`] and [`Sequencer`] (Reed and Kanodia, 1979). The event count is also the wake-up
//! channel behind [`Event`](crate::Event), [`CountDownLatch`](crate::CountDownLatch),
//! [`WaitGroup`](crate::WaitGroup) and the once-cells: their state lives in an atomic of their
//! own, and a waiter reads the count, checks the state, and waits for the count to move past
//! what it read; a changer changes the state, then advances. A waiter either checks the state
//! again when woken ([`EventCount::wait_until`]), or, when every advance announces that the
//! state it waits for held, returns ([`EventCount::wait_announced`]).

use crate::TimedOut;
use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use fibra_runtime::loom::sync::Lock;
use fibra_runtime::wait::{current_waker, Key, WaitKind, WaitList, WaitSite, WakeList};
use fibra_runtime::wait::{Deadline, PlainWaitable, Wait};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

/// Somebody waits: advancing must look at the queue.
const WAITERS: usize = 1;
/// One step of the count, in the word.
const ONE: usize = 2;

/// A count that only goes up, with waits for it to reach a value.
///
/// [`advance`](Self::advance) adds one and wakes everyone waiting for a value it has reached;
/// [`await_value(v)`](Self::await_value) parks the caller until the count is at least `v`. With
/// a [`Sequencer`] it orders work by ticket. Reading it never touches a waker or a lock.
///
/// ```
/// use fibra::sync::{EventCount, Sequencer};
///
/// // Fibers enter a critical section strictly in ticket order.
/// let (turn, tickets) = (EventCount::new(), Sequencer::new());
/// let order = std::sync::Mutex::new(Vec::new());
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..5 {
///             s.spawn(|| {
///                 let t = tickets.ticket();
///                 turn.await_value(t);
///                 order.lock().unwrap().push(t);
///                 turn.advance();
///             });
///         }
///     });
/// });
/// assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
/// assert_eq!(turn.read(), 5);
/// ```
pub struct EventCount {
    /// The count times [`ONE`], plus [`WAITERS`].
    word: AtomicUsize,
    /// Waiters sorted by the value they wait for.
    waiters: Lock<WaitList<usize>>,
}

impl EventCount {
    const_unless_loom! {
        /// A count at 0.
        ///
        /// ```
        /// static STEPS: fibra::sync::EventCount = fibra::sync::EventCount::new();
        /// assert_eq!(STEPS.read(), 0);
        /// ```
        pub fn new() -> EventCount {
            EventCount {
                word: AtomicUsize::new(0),
                waiters: Lock::new(WaitList::new()),
            }
        }
    }

    /// The count. Whatever an advancer wrote before advancing is visible to a caller that
    /// reads the advanced count.
    ///
    /// ```
    /// let ec = fibra::sync::EventCount::new();
    /// ec.advance();
    /// assert_eq!(ec.read(), 1);
    /// ```
    pub fn read(&self) -> usize {
        self.word.load(Ordering::Acquire) / ONE
    }

    /// Adds one and wakes the waiters whose value is reached; returns the new count.
    ///
    /// # Panics
    ///
    /// Past `usize::MAX / 2`.
    ///
    /// ```
    /// let ec = fibra::sync::EventCount::new();
    /// assert_eq!(ec.advance(), 1);
    /// assert_eq!(ec.advance(), 2);
    /// ```
    pub fn advance(&self) -> usize {
        let previous = self.word.fetch_add(ONE, Ordering::AcqRel);
        assert!(
            previous <= usize::MAX - ONE,
            "EventCount advanced past usize::MAX / 2"
        );
        let count = previous / ONE + 1;
        if previous & WAITERS != 0 {
            self.wake_reached(count);
        }
        count
    }

    /// Parks the caller until the count is at least `value`.
    ///
    /// ```
    /// let ec = fibra::sync::EventCount::new();
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let waiter = s.spawn(|| ec.await_value(2));
    ///         ec.advance();
    ///         ec.advance();
    ///         waiter.join().unwrap();
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn await_value(&self, value: usize) {
        // Without a deadline the wait cannot time out.
        let _ = self.await_until(value, Deadline::NEVER, &self.site());
    }

    /// Parks the caller until the count is at least `value`, for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let ec = fibra::sync::EventCount::new();
    /// assert!(ec.await_value_timeout(1, Duration::from_millis(1)).is_err());
    /// ec.advance();
    /// assert!(ec.await_value_timeout(1, Duration::from_secs(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn await_value_timeout(&self, value: usize, timeout: Duration) -> Result<(), TimedOut> {
        self.await_until(value, Deadline::after(timeout), &self.site())
    }

    /// A future that completes once the count is at least `value`.
    ///
    /// ```
    /// let ec = fibra::sync::EventCount::new();
    /// ec.advance();
    /// futures::executor::block_on(ec.await_value_async(1));
    /// ```
    pub fn await_value_async(&self, value: usize) -> AwaitValue<'_> {
        AwaitValue {
            ec: self,
            value,
            wait: None,
        }
    }

    /// A wait on the event count itself, at the caller's location.
    #[track_caller]
    fn site(&self) -> WaitSite<'static> {
        WaitSite::new(WaitKind::EventCount, self)
    }

    /// Parks the caller until the count is at least `value`, recording `site` meanwhile.
    fn await_until(
        &self,
        value: usize,
        deadline: Deadline,
        site: &WaitSite<'_>,
    ) -> Result<(), TimedOut> {
        if self.read() >= value {
            return Ok(());
        }
        match self.register(value, current_waker()) {
            None => Ok(()),
            Some(key) => Wait::new(Waiters(self), key).block_at(deadline, site),
        }
    }

    /// Parks the caller until `done()` holds, for a `done` that becomes true only before an
    /// [`advance`](Self::advance), recording `site` (the primitive built on this event count,
    /// and its caller) while it waits.
    pub(crate) fn wait_until(
        &self,
        done: impl Fn() -> bool,
        deadline: Deadline,
        site: &WaitSite<'_>,
    ) -> Result<(), TimedOut> {
        loop {
            // Read first: a change after the check advances past `seen`.
            let seen = self.read();
            if done() {
                return Ok(());
            }
            self.await_until(seen + 1, deadline, site)?;
        }
    }

    /// Parks the caller until `done()` holds, for a `done` that every
    /// [`advance`](Self::advance) announces: one that held when the advance was made, even if
    /// it no longer holds when the waiter runs. A waiter present at the advance returns then,
    /// without checking `done` again, which could park it anew and lose that release. Records
    /// `site` while it waits.
    pub(crate) fn wait_announced(
        &self,
        done: impl FnOnce() -> bool,
        deadline: Deadline,
        site: &WaitSite<'_>,
    ) -> Result<(), TimedOut> {
        match self.begin_announced(done) {
            None => Ok(()),
            Some(value) => self.await_until(value, deadline, site),
        }
    }

    /// Starts a [`wait_announced`](Self::wait_announced): `None` if `done()` holds, else the
    /// count whose reaching announces it.
    fn begin_announced(&self, done: impl FnOnce() -> bool) -> Option<usize> {
        // Read first: an advance after the check moves past `seen`.
        let seen = self.read();
        (!done()).then_some(seen + 1)
    }

    /// Queues a waiter for `value`, unless the count has reached it (`None`).
    fn register(&self, value: usize, waker: Waker) -> Option<Key> {
        let mut list = self.waiters.lock();
        let mut word = self.word.load(Ordering::Acquire);
        while word / ONE < value {
            // Setting WAITERS is a read-modify-write on the count's own word, so an advance
            // either came first (and the CAS fails, to look again) or sees the flag.
            match self.word.compare_exchange(
                word,
                word | WAITERS,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(list.push_sorted(value, waker)),
                Err(actual) => word = actual,
            }
        }
        None
    }

    #[cold]
    fn wake_reached(&self, count: usize) {
        let mut wakers = WakeList::new();
        let mut list = self.waiters.lock();
        // Our own count suffices: a later advance that saw WAITERS wakes for its count.
        while list.front().is_some_and(|&value| value <= count) {
            wakers.push(list.pop_front().expect("the front was just seen"));
        }
        self.settle(&list);
    }

    /// Clears WAITERS once nobody waits, so that advancing skips the lock again.
    fn settle(&self, list: &WaitList<usize>) {
        if list.is_empty() {
            self.word.fetch_and(!WAITERS, Ordering::Relaxed);
        }
    }
}

impl Default for EventCount {
    fn default() -> Self {
        EventCount::new()
    }
}

impl fmt::Debug for EventCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCount")
            .field("count", &self.read())
            .finish_non_exhaustive()
    }
}

/// The waits on a [`EventCount`], kept out of its public API.
#[derive(Clone, Copy)]
struct Waiters<'a>(&'a EventCount);

impl PlainWaitable for Waiters<'_> {
    type Entry = usize;

    fn lock(&self) -> &Lock<WaitList<usize>> {
        &self.0.waiters
    }

    fn abandon(&self, list: &mut WaitList<usize>, _: usize, _woken: bool, _: &mut WakeList) {
        // Every waiter whose value was reached is woken, so nothing is passed on.
        self.0.settle(list);
    }
}

/// The future of [`EventCount::await_value_async`].
#[must_use = "futures do nothing unless polled"]
pub struct AwaitValue<'a> {
    ec: &'a EventCount,
    value: usize,
    wait: Option<Wait<Waiters<'a>>>,
}

impl Future for AwaitValue<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if let Some(wait) = &mut this.wait {
            ready!(wait.poll(cx));
            this.wait = None;
            return Poll::Ready(());
        }
        if this.ec.read() >= this.value {
            return Poll::Ready(());
        }
        match this.ec.register(this.value, cx.waker().clone()) {
            None => Poll::Ready(()),
            Some(key) => {
                this.wait = Some(Wait::new(Waiters(this.ec), key));
                Poll::Pending
            }
        }
    }
}

impl fmt::Debug for AwaitValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwaitValue")
            .field("value", &self.value)
            .finish_non_exhaustive()
    }
}

/// A future that completes once `done(state)` holds, for a `done` that every advance of `state`'s
/// event count announces: the async form of [`EventCount::wait_announced`]. Its wait begins when
/// it is first polled.
pub(crate) struct Announced<'a, T> {
    ec: &'a EventCount,
    state: &'a T,
    done: fn(&T) -> bool,
    /// `None` until the first poll finds `done` false.
    wait: Option<AwaitValue<'a>>,
}

impl<'a, T> Announced<'a, T> {
    pub(crate) fn new(ec: &'a EventCount, state: &'a T, done: fn(&T) -> bool) -> Self {
        Announced {
            ec,
            state,
            done,
            wait: None,
        }
    }

    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.wait.is_none() {
            match self.ec.begin_announced(|| (self.done)(self.state)) {
                None => return Poll::Ready(()),
                Some(value) => self.wait = Some(self.ec.await_value_async(value)),
            }
        }
        let wait = self.wait.as_mut().expect("a wait was just begun");
        Pin::new(wait).poll(cx)
    }
}

/// Hands out tickets 0, 1, 2, … : each call to [`ticket`](Self::ticket) gets the next one, once.
///
/// ```
/// let seq = fibra::sync::Sequencer::new();
/// assert_eq!((seq.ticket(), seq.ticket()), (0, 1));
/// ```
pub struct Sequencer {
    next: StdAtomicUsize,
}

impl Sequencer {
    /// A sequencer whose first ticket is 0.
    ///
    /// ```
    /// static TICKETS: fibra::sync::Sequencer = fibra::sync::Sequencer::new();
    /// assert_eq!(TICKETS.ticket(), 0);
    /// ```
    pub const fn new() -> Sequencer {
        Sequencer {
            next: StdAtomicUsize::new(0),
        }
    }

    /// The next ticket.
    ///
    /// # Panics
    ///
    /// After `usize::MAX` tickets.
    ///
    /// ```
    /// let seq = fibra::sync::Sequencer::new();
    /// seq.ticket();
    /// assert_eq!(seq.ticket(), 1);
    /// ```
    pub fn ticket(&self) -> usize {
        // Tickets need only be unique; ordering comes from the event count they are used with.
        let ticket = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(ticket != usize::MAX, "Sequencer ran out of tickets");
        ticket
    }
}

impl Default for Sequencer {
    fn default() -> Self {
        Sequencer::new()
    }
}

impl fmt::Debug for Sequencer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sequencer").finish_non_exhaustive()
    }
}
