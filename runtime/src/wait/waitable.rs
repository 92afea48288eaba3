//! Waiting on a [`WaitList`] entry, written once for every primitive: blocking (fiber or
//! thread), with a deadline, or polled as a future; and giving the entry back when the wait
//! ends early (a timeout, a dropped future, a fiber unwinding from a cancelled park).

use super::{
    current_waker, park_current_until_as, Deadline, Key, WaitKind, WaitList, WaitSite, WakeList,
};
use crate::diag::Published;
use crate::loom::sync::Lock;
use std::fmt;
use std::task::{Context, Poll, Waker};

/// A timed wait ended because its deadline passed first.
///
/// ```
/// use std::time::Duration;
///
/// let lock = fibra::sync::Mutex::new(());
/// let _held = lock.lock();
/// assert_eq!(lock.lock_timeout(Duration::from_millis(1)).unwrap_err(), fibra::sync::TimedOut);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the wait timed out")
    }
}

impl std::error::Error for TimedOut {}

/// A primitive whose waiters sit in a [`WaitList`] inside its internal lock: usually a
/// reference to it (or a private wrapper of one, to keep the impl out of its public API).
/// [`PlainWaitable`]'s example builds a whole primitive on it.
pub trait Waitable {
    /// What the internal lock protects.
    type State;
    /// Each waiter's data.
    type Entry;
    /// What a waiter that was woken takes away.
    type Output;

    /// The internal lock.
    fn lock(&self) -> &Lock<Self::State>;

    /// The waiter list inside the locked state.
    fn list(state: &mut Self::State) -> &mut WaitList<Self::Entry>;

    /// The waiter's entry was woken and removed: finish the wait, or queue it again (with
    /// `waker`) and return the new key. Runs under the lock.
    fn woken(
        &self,
        state: &mut Self::State,
        entry: Self::Entry,
        waker: &Waker,
        wakers: &mut WakeList,
    ) -> Result<Self::Output, Key>;

    /// The waiter gives up; its entry has been removed, and `woken` says whether it had been
    /// woken first (then whatever the wake granted must be passed on). Runs under the lock.
    fn abandon(
        &self,
        state: &mut Self::State,
        entry: Self::Entry,
        woken: bool,
        wakers: &mut WakeList,
    );
}

/// A [`Waitable`] of the plainest kind: its internal lock guards the [`WaitList`] alone, and a
/// wake ends the wait. Implementing this implements [`Waitable`], with `()` as the output.
///
/// A gate that fibers (or threads) wait at until it opens, written on the toolkit:
///
/// ```
/// use fibra::wait::{current_waker, Deadline, Lock, PlainWaitable, Wait, WaitList, WakeList};
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// #[derive(Default)]
/// struct Gate {
///     open: AtomicBool,
///     waiters: Lock<WaitList<()>>,
/// }
///
/// impl PlainWaitable for &Gate {
///     type Entry = ();
///
///     fn lock(&self) -> &Lock<WaitList<()>> {
///         &self.waiters
///     }
///
///     // Opening wakes every waiter, so one that gives up has nothing to pass on.
///     fn abandon(&self, _: &mut WaitList<()>, _: (), _: bool, _: &mut WakeList) {}
/// }
///
/// impl Gate {
///     fn wait(&self) {
///         let key = {
///             let mut waiters = self.waiters.lock();
///             if self.open.load(Ordering::Acquire) {
///                 return;
///             }
///             waiters.push_back((), current_waker())
///         };
///         Wait::new(self, key).block(Deadline::NEVER).unwrap();
///     }
///
///     fn open(&self) {
///         // Declared before the guard, so it wakes the waiters after the lock is released.
///         let mut wakers = WakeList::new();
///         let mut waiters = self.waiters.lock();
///         self.open.store(true, Ordering::Release);
///         while let Some(waker) = waiters.pop_front() {
///             wakers.push(waker);
///         }
///     }
/// }
///
/// let gate = Gate::default();
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..3 {
///             s.spawn(|| gate.wait());
///         }
///         fibra::yield_now();
///         gate.open();
///     });
/// });
/// ```
pub trait PlainWaitable {
    /// Each waiter's data.
    type Entry;

    /// The internal lock around the waiter list.
    fn lock(&self) -> &Lock<WaitList<Self::Entry>>;

    /// As [`Waitable::abandon`].
    fn abandon(
        &self,
        list: &mut WaitList<Self::Entry>,
        entry: Self::Entry,
        woken: bool,
        wakers: &mut WakeList,
    );
}

impl<P: PlainWaitable> Waitable for P {
    type State = WaitList<P::Entry>;
    type Entry = P::Entry;
    type Output = ();

    fn lock(&self) -> &Lock<WaitList<P::Entry>> {
        PlainWaitable::lock(self)
    }

    fn list(state: &mut WaitList<P::Entry>) -> &mut WaitList<P::Entry> {
        state
    }

    fn woken(
        &self,
        _: &mut Self::State,
        _: P::Entry,
        _: &Waker,
        _: &mut WakeList,
    ) -> Result<(), Key> {
        Ok(())
    }

    fn abandon(&self, list: &mut Self::State, entry: P::Entry, woken: bool, wakers: &mut WakeList) {
        PlainWaitable::abandon(self, list, entry, woken, wakers);
    }
}

/// A registered waiter. Dropping it before the wait has finished gives the entry back through
/// [`Waitable::abandon`].
pub struct Wait<W: Waitable> {
    on: W,
    /// `None` once the wait has finished.
    key: Option<Key>,
}

impl<W: Waitable> Wait<W> {
    /// Takes over an entry the caller registered with [`current_waker`] (to
    /// [`block`](Self::block)) or with a task's waker (to [`poll`](Self::poll)).
    pub fn new(on: W, key: Key) -> Self {
        Wait { on, key: Some(key) }
    }

    /// [`block`](Self::block), recording the wait for the fiber while it waits (see
    /// [`park_current_at`](super::park_current_at)): the form every blocking primitive uses.
    pub fn block_at(self, deadline: Deadline, site: &WaitSite<'_>) -> Result<W::Output, TimedOut> {
        let _published = Published::new(site, deadline.instant().is_some());
        self.block_as(deadline, Some(site.kind()))
    }

    /// Parks until the entry is woken and [`Waitable::woken`] finishes the wait, or until
    /// `deadline`, without recording the wait (see [`block_at`](Self::block_at)).
    pub fn block(self, deadline: Deadline) -> Result<W::Output, TimedOut> {
        self.block_as(deadline, None)
    }

    /// [`block`](Self::block) in a wait of `kind`, if one was named.
    fn block_as(
        mut self,
        deadline: Deadline,
        kind: Option<WaitKind>,
    ) -> Result<W::Output, TimedOut> {
        let waker = current_waker();
        loop {
            // Parking is fibra's cancellation point: a cancelled fiber unwinds
            // from here, and dropping `self` gives the entry back, passing on whatever the
            // waiter had been granted. So does a fiber unwinding from a deadlock. No timer is
            // armed, and no hold taken, for a wait without deadline: a hold says time will
            // end the wait.
            park_current_until_as(deadline, kind);
            let mut wakers = WakeList::new();
            let mut state = self.on.lock().lock();
            if let Some(output) =
                finish_if_woken(&self.on, &mut self.key, &mut state, &waker, &mut wakers)
            {
                return Ok(output);
            }
            if deadline.has_passed() {
                let key = self.key.take().expect("an unfinished wait holds its key");
                self.give_back(&mut state, key, &mut wakers);
                return Err(TimedOut);
            }
            // Not woken (a spurious wake-up), or queued again: the waker registered is this
            // caller's.
        }
    }

    /// Polls the entry: ready once woken and finished, else pending with `cx`'s waker
    /// registered.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<W::Output> {
        let mut wakers = WakeList::new();
        let mut state = self.on.lock().lock();
        if let Some(output) =
            finish_if_woken(&self.on, &mut self.key, &mut state, cx.waker(), &mut wakers)
        {
            return Poll::Ready(output);
        }
        let key = self.key.as_ref().expect("an unfinished wait holds its key");
        W::list(&mut state).set_waker(key, cx.waker(), &mut wakers);
        Poll::Pending
    }

    /// Under the lock: removes the entry of a waiter that gives up, passing on whatever a wake
    /// had granted it; its waker (a task's, whose drop may run user code) is dropped with
    /// `wakers`, after the lock.
    fn give_back(&self, state: &mut W::State, key: Key, wakers: &mut WakeList) {
        let (entry, woken) = W::list(state).remove_into(key, wakers);
        self.on.abandon(state, entry, woken, wakers);
    }
}

/// Under the lock: hands a woken entry to [`Waitable::woken`] and returns the output if that
/// finished the wait. Otherwise `key` holds the entry's key: the same one, or the one `woken`
/// queued it under again with `waker`.
///
/// # Panics
///
/// If the wait has already finished (a future polled after it completed).
fn finish_if_woken<W: Waitable>(
    on: &W,
    key: &mut Option<Key>,
    state: &mut W::State,
    waker: &Waker,
    wakers: &mut WakeList,
) -> Option<W::Output> {
    let taken = key
        .take()
        .expect("a wait polled or blocked on after it finished");
    let list = W::list(state);
    if !list.is_woken(&taken) {
        *key = Some(taken);
        return None;
    }
    let (entry, _) = list.remove(taken);
    match on.woken(state, entry, waker, wakers) {
        Ok(output) => Some(output),
        Err(requeued) => {
            *key = Some(requeued);
            None
        }
    }
}

impl<W: Waitable> fmt::Debug for Wait<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait").field("key", &self.key).finish()
    }
}

impl<W: Waitable> Drop for Wait<W> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut wakers = WakeList::new();
            self.give_back(&mut self.on.lock().lock(), key, &mut wakers);
        }
    }
}
