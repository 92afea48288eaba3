//! [`Semaphore`]: a fair [`RawSemaphore`] with RAII permits (borrowed, or owned through an
//! `Arc`), and [`acquire_all`] across several.

use crate::raw_semaphore::{Acquire, RawSemaphore, MAX_PERMITS};
use crate::TimedOut;
use fibra_runtime::wait::Deadline;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

/// A counting semaphore that parks the waiting fiber (or thread) instead of blocking its
/// worker.
///
/// Fair: waiters are served in arrival order, and a large [`acquire_n`](Self::acquire_n) at the
/// head of the queue is not overtaken by smaller requests behind it (it collects released
/// permits until it has all it asked for). Permits come back when their [`Permit`] is dropped.
///
/// ```
/// use fibra::sync::Semaphore;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let slots = Semaphore::new(3);
/// let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..10 {
///             s.spawn(|| {
///                 let _permit = slots.acquire();
///                 let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
///                 most.fetch_max(now, Ordering::SeqCst);
///                 fibra::yield_now();
///                 inside.fetch_sub(1, Ordering::SeqCst);
///             });
///         }
///     });
/// });
/// assert!(most.load(Ordering::SeqCst) <= 3);
/// assert_eq!(slots.available_permits(), 3);
/// ```
pub struct Semaphore {
    raw: RawSemaphore,
}

impl Semaphore {
    /// The most permits a semaphore can hold.
    pub const MAX_PERMITS: usize = MAX_PERMITS;

    const_unless_loom! {
        /// A semaphore with `permits` permits and no bound ([`add_permits`](Self::add_permits)
        /// may add more).
        ///
        /// # Panics
        ///
        /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
        ///
        /// ```
        /// static POOL: fibra::sync::Semaphore = fibra::sync::Semaphore::new(4);
        /// assert_eq!(POOL.available_permits(), 4);
        /// ```
        pub fn new(permits: usize) -> Semaphore {
            Semaphore {
                raw: RawSemaphore::new(permits, MAX_PERMITS, true),
            }
        }
    }

    const_unless_loom! {
        /// A semaphore that starts with `max` permits and never holds more: releasing or adding
        /// past `max` is a bug, and panics.
        ///
        /// # Panics
        ///
        /// If `max` is 0 or exceeds [`Semaphore::MAX_PERMITS`].
        ///
        /// ```
        /// let sem = fibra::sync::Semaphore::bounded(2);
        /// let permit = sem.acquire();
        /// sem.add_permits(1); // back to 2: fine
        /// permit.forget();
        /// assert_eq!(sem.available_permits(), 2);
        /// ```
        ///
        /// ```should_panic
        /// let sem = fibra::sync::Semaphore::bounded(2);
        /// sem.add_permits(1); // 3 > 2
        /// ```
        pub fn bounded(max: usize) -> Semaphore {
            assert!(max > 0, "Semaphore::bounded(0): a semaphore bounded at 0 permits could never be acquired");
            Semaphore {
                raw: RawSemaphore::new(max, max, true),
            }
        }
    }

    /// The permits that could be taken right now (0 while anyone is waiting).
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(5);
    /// let _p = sem.acquire_n(2);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.raw.available()
    }

    /// Adds `n` permits, handing them to waiters first.
    ///
    /// # Panics
    ///
    /// If the total would exceed the bound ([`Semaphore::bounded`]) or
    /// [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(0);
    /// sem.add_permits(2);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn add_permits(&self, n: usize) {
        self.raw.release(n);
    }

    /// The classic V operation: gives `n` permits to the semaphore, waking waiters first. With
    /// [`Permit::forget`] as the P (`acquire().forget()`), a semaphore counts events that one
    /// fiber signals and another waits for, where no guard could span both. The same as
    /// [`add_permits`](Self::add_permits).
    ///
    /// # Panics
    ///
    /// As [`add_permits`](Self::add_permits).
    ///
    /// ```
    /// use fibra::sync::Semaphore;
    ///
    /// let items = Semaphore::new(0);
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         s.spawn(|| {
    ///             for _ in 0..3 {
    ///                 items.acquire().forget(); // P: wait for an item
    ///             }
    ///         });
    ///         for _ in 0..3 {
    ///             items.release(1); // V: one more item
    ///         }
    ///     });
    /// });
    /// assert_eq!(items.available_permits(), 0);
    /// ```
    pub fn release(&self, n: usize) {
        self.raw.release(n);
    }

    /// Takes one permit, parking the caller until it is available.
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(1);
    /// let permit = sem.acquire();
    /// assert_eq!(permit.count(), 1);
    /// ```
    #[track_caller]
    pub fn acquire(&self) -> Permit<'_> {
        self.acquire_n(1)
    }

    /// Takes `n` permits at once, parking the caller until they are all available.
    ///
    /// # Panics
    ///
    /// If `n` exceeds the bound (or [`Semaphore::MAX_PERMITS`]): the wait could never end.
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(4);
    /// let three = sem.acquire_n(3);
    /// assert!(sem.try_acquire_n(2).is_none());
    /// drop(three);
    /// assert!(sem.try_acquire_n(2).is_some());
    /// ```
    #[track_caller]
    pub fn acquire_n(&self, n: usize) -> Permit<'_> {
        self.acquire_until(n, Deadline::NEVER)
            .expect("a wait without a deadline does not time out")
    }

    /// Takes one permit as an [`OwnedSemaphorePermit`], which holds the semaphore through the `Arc`
    /// rather than a borrow, so it can move into a fiber of its own (as tokio's
    /// `acquire_owned`).
    ///
    /// ```
    /// use fibra::sync::Semaphore;
    /// use std::sync::Arc;
    ///
    /// let connections = Arc::new(Semaphore::new(2));
    /// fibra::run(|| {
    ///     let handlers: Vec<_> = (0..5)
    ///         .map(|n| {
    ///             let permit = connections.acquire_owned(); // waits while two are open
    ///             fibra::spawn(move || {
    ///                 let _permit = permit; // given back when the handler ends
    ///                 n * 2
    ///             })
    ///         })
    ///         .collect();
    ///     let total: i32 = handlers.into_iter().map(|h| h.join().unwrap()).sum();
    ///     assert_eq!(total, 20);
    /// });
    /// assert_eq!(connections.available_permits(), 2);
    /// ```
    #[track_caller]
    pub fn acquire_owned(self: &Arc<Self>) -> OwnedSemaphorePermit {
        self.acquire_n_owned(1)
    }

    /// Takes `n` permits at once as an [`OwnedSemaphorePermit`], parking the caller until they are all
    /// available.
    ///
    /// # Panics
    ///
    /// As [`acquire_n`](Self::acquire_n).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(fibra::sync::Semaphore::new(3));
    /// let permit = sem.acquire_n_owned(2);
    /// assert_eq!((permit.count(), sem.available_permits()), (2, 1));
    /// ```
    #[track_caller]
    pub fn acquire_n_owned(self: &Arc<Self>, n: usize) -> OwnedSemaphorePermit {
        self.acquire_n(n).forget();
        OwnedSemaphorePermit {
            sem: self.clone(),
            n,
        }
    }

    /// Takes one permit as an [`OwnedSemaphorePermit`] if that needs no waiting (and nobody is
    /// waiting).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(fibra::sync::Semaphore::new(1));
    /// let permit = sem.try_acquire_owned().unwrap();
    /// assert!(sem.try_acquire_owned().is_none());
    /// drop(permit);
    /// assert!(sem.try_acquire_owned().is_some());
    /// ```
    pub fn try_acquire_owned(self: &Arc<Self>) -> Option<OwnedSemaphorePermit> {
        self.raw.try_acquire(1).then(|| OwnedSemaphorePermit {
            sem: self.clone(),
            n: 1,
        })
    }

    /// Takes one permit if that needs no waiting (and nobody is waiting).
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(1);
    /// let p = sem.try_acquire().unwrap();
    /// assert!(sem.try_acquire().is_none());
    /// drop(p);
    /// ```
    pub fn try_acquire(&self) -> Option<Permit<'_>> {
        self.try_acquire_n(1)
    }

    /// Takes `n` permits if that needs no waiting (and nobody is waiting).
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(2);
    /// assert!(sem.try_acquire_n(3).is_none());
    /// assert_eq!(sem.try_acquire_n(2).unwrap().count(), 2);
    /// ```
    pub fn try_acquire_n(&self, n: usize) -> Option<Permit<'_>> {
        self.raw.try_acquire(n).then(|| Permit { sem: self, n })
    }

    /// Takes one permit, parking the caller for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let sem = fibra::sync::Semaphore::new(1);
    /// let held = sem.acquire();
    /// assert!(sem.acquire_timeout(Duration::from_millis(1)).is_err());
    /// drop(held);
    /// assert!(sem.acquire_timeout(Duration::from_secs(1)).is_ok());
    /// ```
    #[track_caller]
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Permit<'_>, TimedOut> {
        self.acquire_n_timeout(1, timeout)
    }

    /// Takes `n` permits, parking the caller for at most `timeout`; on timeout it holds none.
    ///
    /// # Panics
    ///
    /// As [`acquire_n`](Self::acquire_n).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let sem = fibra::sync::Semaphore::new(2);
    /// assert!(sem.acquire_n_timeout(3, Duration::from_millis(1)).is_err());
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    #[track_caller]
    pub fn acquire_n_timeout(&self, n: usize, timeout: Duration) -> Result<Permit<'_>, TimedOut> {
        self.acquire_until(n, Deadline::after(timeout))
    }

    /// A future that takes one permit.
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(1);
    /// let permit = futures::executor::block_on(sem.acquire_async());
    /// assert_eq!(permit.count(), 1);
    /// ```
    pub fn acquire_async(&self) -> SemaphoreAcquire<'_> {
        self.acquire_n_async(1)
    }

    /// A future that takes `n` permits. Dropping it before it completes leaves the queue (and
    /// passes on whatever it had been handed).
    ///
    /// # Panics
    ///
    /// As [`acquire_n`](Self::acquire_n).
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(3);
    /// let permit = futures::executor::block_on(sem.acquire_n_async(3));
    /// assert_eq!(permit.count(), 3);
    /// ```
    pub fn acquire_n_async(&self, n: usize) -> SemaphoreAcquire<'_> {
        self.check_request(n);
        SemaphoreAcquire {
            sem: self,
            n,
            acquire: self.raw.acquire_async(n),
        }
    }

    #[track_caller]
    fn acquire_until(&self, n: usize, deadline: Deadline) -> Result<Permit<'_>, TimedOut> {
        self.check_request(n);
        self.raw.acquire(
            n,
            deadline,
            fibra_runtime::wait::WaitSite::new(fibra_runtime::wait::WaitKind::Semaphore, self),
        )?;
        Ok(Permit { sem: self, n })
    }

    fn check_request(&self, n: usize) {
        let max = self.raw.max();
        assert!(
            n <= max,
            "acquiring {n} permits from a semaphore that never holds more than {max}: \
             the wait could never end"
        );
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish_non_exhaustive()
    }
}

/// Permits taken from a [`Semaphore`]; given back when dropped.
#[must_use = "the permits are given back as soon as the permit is dropped"]
pub struct Permit<'a> {
    sem: &'a Semaphore,
    n: usize,
}

impl Permit<'_> {
    /// How many permits this holds.
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(2);
    /// assert_eq!(sem.acquire_n(2).count(), 2);
    /// ```
    pub fn count(&self) -> usize {
        self.n
    }

    /// Drops the permits without giving them back: the semaphore has that many fewer.
    ///
    /// ```
    /// let sem = fibra::sync::Semaphore::new(2);
    /// sem.acquire().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.sem.raw.release(self.n);
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit").field("count", &self.n).finish()
    }
}

/// Permits taken from a [`Semaphore`] in an `Arc` with [`Semaphore::acquire_owned`]: a
/// [`Permit`] that owns its semaphore, so it is `'static`. Given back when dropped.
#[must_use = "the permits are given back as soon as the permit is dropped"]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    n: usize,
}

impl OwnedSemaphorePermit {
    /// How many permits this holds.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(fibra::sync::Semaphore::new(2));
    /// assert_eq!(sem.acquire_owned().count(), 1);
    /// ```
    pub fn count(&self) -> usize {
        self.n
    }

    /// The semaphore the permits came from.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let sem = Arc::new(fibra::sync::Semaphore::new(1));
    /// let permit = sem.acquire_owned();
    /// assert!(Arc::ptr_eq(permit.semaphore(), &sem));
    /// ```
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Drops the permits without giving them back: the semaphore has that many fewer.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(fibra::sync::Semaphore::new(2));
    /// sem.acquire_owned().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.n = 0;
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        if self.n > 0 {
            self.sem.raw.release(self.n);
        }
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("count", &self.n)
            .finish()
    }
}

/// The future of [`Semaphore::acquire_async`] and [`Semaphore::acquire_n_async`].
#[must_use = "futures do nothing unless polled"]
pub struct SemaphoreAcquire<'a> {
    sem: &'a Semaphore,
    n: usize,
    acquire: Acquire<'a>,
}

impl<'a> Future for SemaphoreAcquire<'a> {
    type Output = Permit<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit<'a>> {
        let (sem, n) = (self.sem, self.n);
        Pin::new(&mut self.acquire)
            .poll(cx)
            .map(|()| Permit { sem, n })
    }
}

impl fmt::Debug for SemaphoreAcquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphoreAcquire")
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

/// Takes `n` permits from each `(semaphore, n)` of `requests`, parking the caller until it has
/// all of them; returns one [`Permit`] per request, in the same order.
///
/// All or none: the caller never holds a permit while it waits for another semaphore, so
/// callers that name the same semaphores, in any order, cannot deadlock, and a fiber holding
/// one of them can take the others while this waits. It takes what it can without waiting; on
/// a semaphore that cannot serve it at once it gives everything back, waits for that one
/// alone, and then, holding only that, tries the others again, as often as it takes. So under
/// steady contention it may retry many times, and it is not served in arrival order as a
/// single semaphore's waiters are. The same semaphore may be named twice (its requests are
/// taken together).
///
/// # Panics
///
/// As [`Semaphore::acquire_n`], for any request, or if the counts for one semaphore overflow.
///
/// ```
/// use fibra::sync::{acquire_all, Semaphore};
///
/// let (forks, plates) = (Semaphore::new(2), Semaphore::new(1));
/// let held = acquire_all(&[(&forks, 2), (&plates, 1)]);
/// assert_eq!((forks.available_permits(), plates.available_permits()), (0, 0));
/// drop(held);
/// assert_eq!((forks.available_permits(), plates.available_permits()), (2, 1));
/// ```
#[track_caller]
pub fn acquire_all<'a>(requests: &[(&'a Semaphore, usize)]) -> Vec<Permit<'a>> {
    acquire_all_until(requests, Deadline::NEVER)
        .expect("a wait without a deadline does not time out")
}

/// [`acquire_all`], parking the caller for at most `timeout`: it returns every permit, or, on
/// timeout, holds none.
///
/// ```
/// use fibra::sync::{acquire_all_timeout, Semaphore};
/// use std::time::Duration;
///
/// let (a, b) = (Semaphore::new(1), Semaphore::new(1));
/// let _b = b.acquire();
/// assert!(acquire_all_timeout(&[(&a, 1), (&b, 1)], Duration::from_millis(1)).is_err());
/// assert_eq!(a.available_permits(), 1); // none kept
/// ```
#[track_caller]
pub fn acquire_all_timeout<'a>(
    requests: &[(&'a Semaphore, usize)],
    timeout: Duration,
) -> Result<Vec<Permit<'a>>, TimedOut> {
    acquire_all_until(requests, Deadline::after(timeout))
}

#[track_caller]
fn acquire_all_until<'a>(
    requests: &[(&'a Semaphore, usize)],
    deadline: Deadline,
) -> Result<Vec<Permit<'a>>, TimedOut> {
    let totals = Totals::new(requests);
    // Like every blocking acquire, a cancellation point even when nothing is waited for.
    fibra_runtime::checkpoint();
    let mut waited = None;
    loop {
        let missed = match totals.round(requests, &mut waited) {
            Ok(permits) => return Ok(permits),
            Err(missed) => missed,
        };
        // Let the others run before queuing again: callers that each hold the permit another
        // one misses would otherwise, queued on each other's, hand the permits round among
        // themselves in step for ever.
        fibra_runtime::yield_now();
        let (sem, n) = totals.0[missed];
        waited = Some((missed, sem.acquire_until(n, deadline)?));
    }
}

/// A future taking permits from several semaphores, all or none, as [`acquire_all`] does.
///
/// It owns a copy of the request list, so the slice it was made from need not outlive it.
/// Its wait begins when it is first polled. Dropping it at any point leaves it holding
/// nothing: a permit it had taken is given back, and one a semaphore had just handed it passes
/// to that semaphore's next waiter.
///
/// ```
/// use fibra::sync::{acquire_all_async, Semaphore};
///
/// let (a, b) = (Semaphore::new(1), Semaphore::new(2));
/// let held = futures::executor::block_on(acquire_all_async(&[(&a, 1), (&b, 2)]));
/// assert_eq!(held.iter().map(|p| p.count()).collect::<Vec<_>>(), [1, 2]);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct AcquireAll<'a> {
    requests: Vec<(&'a Semaphore, usize)>,
    totals: Totals<'a>,
    waited: Option<(usize, Permit<'a>)>,
    /// The wait for the semaphore a round missed, by its place in `totals`; made after the miss
    /// but first polled only at the next poll, which lets the others run in between.
    waiting: Option<(usize, SemaphoreAcquire<'a>)>,
}

/// A future taking `n` permits from each `(semaphore, n)` of `requests`, all or none, with the
/// algorithm and guarantees of [`acquire_all`]; resolves to one [`Permit`] per request, in the
/// same order. Between a round that missed a semaphore and its wait for that one, it returns
/// `Pending` once, having woken its task, so that other tasks run first.
///
/// # Panics
///
/// As [`acquire_all`], when called.
///
/// ```
/// use fibra::sync::{acquire_all_async, Semaphore};
///
/// let (forks, plates) = (Semaphore::new(2), Semaphore::new(1));
/// let held = futures::executor::block_on(async {
///     let requests = vec![(&forks, 2), (&plates, 1)];
///     let all = acquire_all_async(&requests); // copies the list
///     drop(requests);
///     all.await
/// });
/// assert_eq!((forks.available_permits(), plates.available_permits()), (0, 0));
/// drop(held);
/// assert_eq!((forks.available_permits(), plates.available_permits()), (2, 1));
/// ```
pub fn acquire_all_async<'a>(requests: &[(&'a Semaphore, usize)]) -> AcquireAll<'a> {
    AcquireAll {
        totals: Totals::new(requests),
        requests: requests.to_vec(),
        waited: None,
        waiting: None,
    }
}

impl<'a> Future for AcquireAll<'a> {
    type Output = Vec<Permit<'a>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<Permit<'a>>> {
        let this = &mut *self;
        if let Some((missed, acquire)) = &mut this.waiting {
            let permit = ready!(Pin::new(acquire).poll(cx));
            this.waited = Some((*missed, permit));
            this.waiting = None;
        }
        match this.totals.round(&this.requests, &mut this.waited) {
            Ok(permits) => Poll::Ready(permits),
            Err(missed) => {
                let (sem, n) = this.totals.0[missed];
                this.waiting = Some((missed, sem.acquire_n_async(n)));
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

impl fmt::Debug for AcquireAll<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireAll")
            .field("requests", &self.requests)
            .finish_non_exhaustive()
    }
}

/// What an [`acquire_all`] asks of each semaphore: its requests summed, one entry per
/// semaphore.
struct Totals<'a>(Vec<(&'a Semaphore, usize)>);

impl<'a> Totals<'a> {
    /// Panics as [`acquire_all`] does.
    fn new(requests: &[(&'a Semaphore, usize)]) -> Totals<'a> {
        let mut totals: Vec<(&'a Semaphore, usize)> = Vec::with_capacity(requests.len());
        for &(sem, n) in requests {
            match totals.iter_mut().find(|(s, _)| std::ptr::eq(*s, sem)) {
                Some((_, total)) => {
                    *total = total
                        .checked_add(n)
                        .expect("acquire_all: the counts for one semaphore overflow")
                }
                None => totals.push((sem, n)),
            }
        }
        for &(sem, n) in &totals {
            sem.check_request(n);
        }
        Totals(totals)
    }

    /// One round: takes what every semaphore but the one last waited for (`waited`, by its
    /// place in the totals; the only permits held across a round) can give without waiting.
    /// Returns one permit per request of `requests` once it has them all; otherwise the place
    /// of the semaphore it missed, holding nothing (`waited` is emptied too).
    fn round(
        &self,
        requests: &[(&'a Semaphore, usize)],
        waited: &mut Option<(usize, Permit<'a>)>,
    ) -> Result<Vec<Permit<'a>>, usize> {
        let mut taken = Vec::with_capacity(self.0.len());
        for (i, &(sem, n)) in self.0.iter().enumerate() {
            if waited.as_ref().is_some_and(|&(w, _)| w == i) {
                continue;
            }
            match sem.try_acquire_n(n) {
                Some(permit) => taken.push(permit),
                None => {
                    // Hold nothing while waiting: give back this round's permits and the
                    // last waited-for.
                    drop(taken);
                    *waited = None;
                    return Err(i);
                }
            }
        }
        taken
            .into_iter()
            .chain(waited.take().map(|(_, permit)| permit))
            .for_each(Permit::forget);
        Ok(requests.iter().map(|&(sem, n)| Permit { sem, n }).collect())
    }
}
