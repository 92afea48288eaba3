//! The permit core behind [`Mutex`](crate::Mutex) (1 permit), [`RwLock`](crate::RwLock) (a
//! reader takes 1, a writer all), [`ReentrantMutex`](crate::ReentrantMutex) and
//! [`Semaphore`](crate::Semaphore).
//!
//! One word holds the available permits and two flags; the fast paths are one CAS on it and
//! never touch a waker or the lock. Two policies:
//!
//! - **Fair** (FIFO handoff): while anyone waits, every released permit goes to the head of the
//!   queue, even partially (a large request at the head collects permits until it has all it
//!   wants), so nobody overtakes a waiter. The word's count stays 0 while [`WAITERS`] is set, and
//!   only holders of the internal lock change the word then.
//! - **Unfair** (barging): released permits go back to the word, where any caller may take them;
//!   the releaser wakes the waiters that the permits could satisfy, in queue order but passing
//!   over any that want more than is left (a reader-priority lock's queued reader must not stay
//!   behind a writer while only readers hold the lock), and a woken waiter that lost the race
//!   queues again at the front. [`WOKEN`] keeps a stream of releases
//!   from waking a waiter per release while one woken waiter has yet to run: whoever clears it
//!   decides again, under the lock, who to wake.

use crate::TimedOut;
use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use fibra_runtime::loom::sync::Lock;
use fibra_runtime::wait::{current_waker, Key, WaitList, WakeList};
use fibra_runtime::wait::{Deadline, Wait, WaitSite, Waitable};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// The queue is not empty.
const WAITERS: usize = 1;
/// Unfair only: a waiter has been woken and has not retried yet.
const WOKEN: usize = 2;
const FLAGS: usize = WAITERS | WOKEN;
/// One permit, in the word.
const ONE: usize = 4;

/// The most permits a semaphore can hold.
pub(crate) const MAX_PERMITS: usize = usize::MAX / ONE;

fn permits(word: usize) -> usize {
    word / ONE
}

/// The panic of a release past a bounded semaphore's `max`.
#[cold]
#[inline(never)]
fn past_bound(available: usize, n: usize, max: usize) -> ! {
    panic!("released {n} permit(s) with {available} available: past the semaphore's bound of {max}")
}

/// Unfair: whether a waiter wanting `need` gets a share of the `budget` permits left, taking it
/// if so; `None` once none are left, for nobody wants 0 (a request for 0 never waits), so that
/// a walk of the queue ends there (a lock's release wakes one waiter in one step).
fn share_out(budget: &mut usize, need: &Need) -> Option<bool> {
    (*budget > 0).then(|| {
        let fits = need.wanted <= *budget;
        if fits {
            *budget -= need.wanted;
        }
        fits
    })
}

/// One waiter's request.
pub(crate) struct Need {
    wanted: usize,
    /// Fair only: permits already handed to this waiter (only ever the head's are non-zero).
    got: usize,
}

pub(crate) struct RawSemaphore {
    word: AtomicUsize,
    /// Releasing past this many available permits panics.
    max: usize,
    fair: bool,
    waiters: Lock<WaitList<Need>>,
}

impl RawSemaphore {
    const_unless_loom! {
        /// Panics unless `permits <= max <= MAX_PERMITS` (callers pass `max` = `permits` or
        /// `MAX_PERMITS`, so one message fits both).
        pub(crate) fn new(permits: usize, max: usize, fair: bool) -> RawSemaphore {
            assert!(max <= MAX_PERMITS, "more permits than a semaphore can hold (Semaphore::MAX_PERMITS)");
            assert!(permits <= max, "more permits than a semaphore can hold (Semaphore::MAX_PERMITS)");
            RawSemaphore {
                word: AtomicUsize::new(permits * ONE),
                max,
                fair,
                waiters: Lock::new(WaitList::new()),
            }
        }
    }

    /// The permits that could be taken right now (a snapshot).
    pub(crate) fn available(&self) -> usize {
        permits(self.word.load(Ordering::Relaxed))
    }

    /// The bound given to [`new`](Self::new).
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Takes `n` permits if that needs no waiting (and, fair, nobody waits).
    #[inline]
    pub(crate) fn try_acquire(&self, n: usize) -> bool {
        let mut word = self.word.load(Ordering::Relaxed);
        // Fair: WAITERS leaves the count at 0, so the count check also keeps us behind them.
        while permits(word) >= n {
            match self.word.compare_exchange_weak(
                word,
                word - n * ONE,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
        false
    }

    /// Takes `n` permits, parking the caller until they are granted or `deadline` passes.
    /// Starts with a cancellation point, which also charges the call's reduction, whether or
    /// not it then waits: a lock is a runtime operation even when nobody holds it, so a fiber
    /// looping on a free lock still ends its slice and still sees its cancellation.
    #[inline]
    pub(crate) fn acquire(
        &self,
        n: usize,
        deadline: Deadline,
        site: WaitSite<'_>,
    ) -> Result<(), TimedOut> {
        fibra_runtime::checkpoint();
        if self.try_acquire(n) {
            return Ok(());
        }
        self.acquire_contended(n, deadline, &site)
    }

    /// [`acquire`](Self::acquire) after its cancellation point and a failed
    /// [`try_acquire`](Self::try_acquire), for a caller that builds the wait's site only
    /// when it has to wait.
    #[cold]
    pub(crate) fn acquire_contended(
        &self,
        n: usize,
        deadline: Deadline,
        site: &WaitSite<'_>,
    ) -> Result<(), TimedOut> {
        match self.register(n, current_waker()) {
            None => Ok(()),
            Some(key) => Wait::new(self, key).block_at(deadline, site),
        }
    }

    /// A future taking `n` permits.
    pub(crate) fn acquire_async(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            n,
            state: AcquireState::Start,
        }
    }

    /// Takes `n` permits, or queues a waiter for them (`Some(key)`), deciding under the lock.
    fn register(&self, n: usize, waker: Waker) -> Option<Key> {
        let mut list = self.waiters.lock();
        let mut word = self.word.load(Ordering::Relaxed);
        let got = loop {
            let (next, got) = if permits(word) >= n {
                (word - n * ONE, None)
            } else if self.fair {
                // Take what there is and queue for the rest. The queue was empty unless
                // WAITERS was set, and then there was nothing to take.
                (WAITERS, Some(permits(word)))
            } else {
                (word | WAITERS, Some(0))
            };
            match self
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break got,
                Err(actual) => word = actual,
            }
        };
        got.map(|got| list.push_back(Need { wanted: n, got }, waker))
    }

    /// Gives `n` permits back: to the waiters first when fair, else to the word.
    #[inline]
    pub(crate) fn release(&self, n: usize) {
        let mut word = self.word.load(Ordering::Relaxed);
        loop {
            if self.fair && word & WAITERS != 0 {
                return self.release_to_waiters(n);
            }
            let next = (word & FLAGS) | (self.bounded(permits(word), n) * ONE);
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(actual) => word = actual,
            }
        }
        if word & FLAGS == WAITERS {
            self.wake_unfair();
        }
    }

    #[cold]
    fn release_to_waiters(&self, n: usize) {
        let mut wakers = WakeList::new();
        let mut list = self.waiters.lock();
        self.hand_out(&mut list, n, &mut wakers);
    }

    #[cold]
    fn wake_unfair(&self) {
        let mut wakers = WakeList::new();
        let mut list = self.waiters.lock();
        self.settle_unfair(&mut list, false, &mut wakers);
    }

    /// `available + n`, panicking past the bound. Inlined, with the panic out of line: every
    /// unlock of a lock passes here.
    #[inline]
    fn bounded(&self, available: usize, n: usize) -> usize {
        match available.checked_add(n) {
            Some(total) if total <= self.max => total,
            _ => past_bound(available, n, self.max),
        }
    }

    /// Fair: gives `n` released permits to the waiters in order, waking each one that has all
    /// it wants; once nobody waits, the rest go back to the word and the fast paths resume.
    fn hand_out(&self, list: &mut WaitList<Need>, mut n: usize, wakers: &mut WakeList) {
        if let Some(head) = list.front() {
            self.bounded(head.got, n);
        }
        while n > 0 {
            let Some(head) = list.front_mut() else { break };
            let given = n.min(head.wanted - head.got);
            head.got += given;
            n -= given;
            if head.got < head.wanted {
                break;
            }
            wakers.push(list.pop_front().expect("the head was just seen"));
        }
        if list.is_empty() {
            let mut word = self.word.load(Ordering::Relaxed);
            loop {
                // Also clears WAITERS (another releaser may have cleared it first: then the
                // fast paths are already running and the CAS keeps their changes).
                let next = self.bounded(permits(word), n) * ONE;
                match self
                    .word
                    .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => break,
                    Err(actual) => word = actual,
                }
            }
        }
    }

    /// Unfair: wakes the waiters that the available permits can satisfy, unless a woken waiter
    /// has yet to retry. `retried`: the caller is that waiter, done retrying or giving up.
    fn settle_unfair(&self, list: &mut WaitList<Need>, retried: bool, wakers: &mut WakeList) {
        let mut word = self.word.load(Ordering::Relaxed);
        let (wake, available) = loop {
            let mut next = word;
            if retried {
                next &= !WOKEN;
            }
            if list.is_empty() {
                next &= !WAITERS;
            }
            let mut wake = 0;
            if next & WOKEN == 0 {
                let mut budget = permits(next);
                wake = list
                    .iter()
                    .map_while(|need| share_out(&mut budget, need))
                    .filter(|&fits| fits)
                    .count();
                if wake > 0 {
                    next |= WOKEN;
                    if wake == list.len() {
                        next &= !WAITERS;
                    }
                }
            }
            // A CAS even when nothing changes: a plain load may be stale, and the decision
            // must be taken on the latest word.
            match self
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break (wake, permits(next)),
                Err(actual) => word = actual,
            }
        };
        if wake > 0 {
            // The same walk over the same queue and permits picks the waiters counted above.
            let mut budget = available;
            let woken = list.wake_where(|need| share_out(&mut budget, need), wakers);
            debug_assert_eq!(woken, wake);
        }
    }

    /// Unfair: a woken waiter tries again; if it loses, it queues at the front again.
    fn retry_unfair(
        &self,
        list: &mut WaitList<Need>,
        n: usize,
        waker: &Waker,
        wakers: &mut WakeList,
    ) -> Result<(), Key> {
        let mut word = self.word.load(Ordering::Relaxed);
        let acquired = loop {
            let (next, acquired) = if permits(word) >= n {
                (word - n * ONE, true)
            } else {
                (word | WAITERS, false)
            };
            match self
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break acquired,
                Err(actual) => word = actual,
            }
        };
        let requeued = match acquired {
            true => None,
            false => match panic::catch_unwind(AssertUnwindSafe(|| waker.clone())) {
                Ok(waker) => Some(list.push_front(Need { wanted: n, got: 0 }, waker)),
                // A task's waker runs user code to clone. If it panics, this waiter fails, but
                // it still ends its turn as the woken waiter (WOKEN would otherwise keep every
                // later release from waking anyone) and leaves the queue as others need it.
                Err(panic) => {
                    self.settle_unfair(list, true, wakers);
                    panic::resume_unwind(panic);
                }
            },
        };
        self.settle_unfair(list, true, wakers);
        match requeued {
            None => Ok(()),
            Some(key) => Err(key),
        }
    }
}

impl Waitable for &RawSemaphore {
    type State = WaitList<Need>;
    type Entry = Need;
    type Output = ();

    fn lock(&self) -> &Lock<WaitList<Need>> {
        &self.waiters
    }

    fn list(state: &mut WaitList<Need>) -> &mut WaitList<Need> {
        state
    }

    fn woken(
        &self,
        list: &mut WaitList<Need>,
        need: Need,
        waker: &Waker,
        wakers: &mut WakeList,
    ) -> Result<(), Key> {
        if self.fair {
            debug_assert_eq!(need.got, need.wanted, "woken only once served in full");
            Ok(())
        } else {
            self.retry_unfair(list, need.wanted, waker, wakers)
        }
    }

    fn abandon(&self, list: &mut WaitList<Need>, need: Need, woken: bool, wakers: &mut WakeList) {
        if self.fair {
            // What it was handed (all it wanted, if it was woken) goes to the next in line.
            self.hand_out(list, need.got, wakers);
        } else {
            self.settle_unfair(list, woken, wakers);
        }
    }
}

enum AcquireState<'a> {
    Start,
    Waiting(Wait<&'a RawSemaphore>),
    Done,
}

/// The future of [`RawSemaphore::acquire_async`]. Dropped while waiting, it leaves the queue;
/// dropped after its permits were granted but before it was polled again, it passes them on.
pub(crate) struct Acquire<'a> {
    sem: &'a RawSemaphore,
    n: usize,
    state: AcquireState<'a>,
}

impl Future for Acquire<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let ready = match &mut this.state {
            AcquireState::Start => {
                this.sem.try_acquire(this.n)
                    || match this.sem.register(this.n, cx.waker().clone()) {
                        None => true,
                        Some(key) => {
                            this.state = AcquireState::Waiting(Wait::new(this.sem, key));
                            false
                        }
                    }
            }
            AcquireState::Waiting(wait) => wait.poll(cx).is_ready(),
            AcquireState::Done => panic!("permit future polled after completion"),
        };
        if ready {
            this.state = AcquireState::Done;
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{RawSemaphore, MAX_PERMITS};
    use std::future::Future;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, RawWaker, RawWakerVTable, Wake, Waker};

    /// A waker that counts its wakes.
    struct Counts(AtomicUsize);

    impl Wake for Counts {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Counts {
        fn new() -> Arc<Counts> {
            Arc::new(Counts(AtomicUsize::new(0)))
        }

        fn woken(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    fn poll<F: Future + ?Sized>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(waker))
    }

    /// A waker whose clone panics (the test never clones it but once, in a retry).
    fn panics_when_cloned() -> Waker {
        fn clone(_: *const ()) -> RawWaker {
            panic!("a user waker's clone panicked");
        }
        fn ignore(_: *const ()) {}
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, ignore, ignore, ignore);
        // SAFETY: every function of the vtable ignores the data pointer, does nothing (or
        // panics, before making anything) and is thread-safe, so a null pointer meets
        // `RawWaker`'s contract.
        unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
    }

    #[test]
    fn an_unfair_waiter_whose_waker_panics_when_cloned_fails_and_the_others_are_served() {
        let sem = RawSemaphore::new(1, MAX_PERMITS, false);
        assert!(sem.try_acquire(1));
        let (first_woken, second_woken) = (Counts::new(), Counts::new());
        let second_waker = Waker::from(second_woken.clone());
        let mut first = Box::pin(sem.acquire_async(1));
        assert!(poll(first.as_mut(), &Waker::from(first_woken.clone())).is_pending());
        let mut second = Box::pin(sem.acquire_async(1));
        assert!(poll(second.as_mut(), &second_waker).is_pending());
        // The release wakes the first waiter, and a barging caller takes the permit before it
        // retries: the retry queues it again, cloning the waker it is polled with, which panics.
        sem.release(1);
        assert_eq!((first_woken.woken(), second_woken.woken()), (1, 0));
        assert!(sem.try_acquire(1));
        let retried = catch_unwind(AssertUnwindSafe(|| {
            poll(first.as_mut(), &panics_when_cloned())
        }));
        assert!(retried.is_err());
        drop(first);
        // The barger's release wakes the second waiter, which gets the permit.
        sem.release(1);
        assert_eq!((first_woken.woken(), second_woken.woken()), (1, 1));
        assert!(poll(second.as_mut(), &second_waker).is_ready());
        assert_eq!(sem.available(), 0);
        sem.release(1);
        assert_eq!(sem.available(), 1);
        assert!(sem.try_acquire(1));
    }

    #[test]
    fn a_waiter_whose_waker_panics_when_dropped_still_passes_on_what_it_was_handed() {
        let sem = RawSemaphore::new(1, MAX_PERMITS, true);
        assert!(sem.try_acquire(1));
        let mut big = Box::pin(sem.acquire_async(2));
        // The queue holds the waker's last handle.
        assert!(poll(big.as_mut(), &fibra_testing::panics_on_drop()).is_pending());
        let small_woken = Counts::new();
        let small_waker = Waker::from(small_woken.clone());
        let mut small = Box::pin(sem.acquire_async(1));
        assert!(poll(small.as_mut(), &small_waker).is_pending());
        // The head collects the released permit and waits for a second one.
        sem.release(1);
        assert_eq!(small_woken.woken(), 0);
        // Giving up passes that permit on, before the waker's drop panics.
        assert!(catch_unwind(AssertUnwindSafe(|| drop(big))).is_err());
        assert_eq!(small_woken.woken(), 1);
        assert!(poll(small.as_mut(), &small_waker).is_ready());
        assert_eq!(sem.available(), 0);
        sem.release(1);
        assert_eq!(sem.available(), 1);
        assert!(sem.try_acquire(1));
    }
}
