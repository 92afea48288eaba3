//! Waiting on a [`WaitList`] entry, written once for every primitive: blocking (fiber or
//! thread), with a deadline, or polled as a future; and giving the entry back when the wait
//! ends early (a timeout, a dropped future, a fiber unwinding from a cancelled park).

use super::{
    current_waker, park_current, park_current_until, Deadline, Key, WaitList, WaitSite, WakeList,
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
        self.block(deadline)
    }

    /// Parks until the entry is woken and [`Waitable::woken`] finishes the wait, or until
    /// `deadline`, without recording the wait (see [`block_at`](Self::block_at)).
    pub fn block(mut self, deadline: Deadline) -> Result<W::Output, TimedOut> {
        let waker = current_waker();
        loop {
            // Parking is fibra's cancellation point: a cancelled fiber unwinds
            // from here, and dropping `self` gives the entry back, passing on whatever the
            // waiter had been granted. So does a fiber unwinding from a deadlock.
            if deadline.instant().is_some() {
                park_current_until(deadline);
            } else {
                // No timer to arm, and no hold: a hold says time will end the wait.
                park_current();
            }
            let mut wakers = WakeList::new();
            let mut state = self.on.lock().lock();
            let key = self.key.take().expect("a blocking wait holds its key");
            let list = W::list(&mut state);
            if list.is_woken(&key) {
                let (entry, _) = list.remove(key);
                match self.on.woken(&mut state, entry, &waker, &mut wakers) {
                    Ok(output) => return Ok(output),
                    Err(key) => self.key = Some(key),
                }
            } else if deadline.has_passed() {
                let (entry, _) = list.remove(key);
                self.on.abandon(&mut state, entry, false, &mut wakers);
                return Err(TimedOut);
            } else {
                // Spurious: the waker registered is still this caller's.
                self.key = Some(key);
            }
        }
    }

    /// Polls the entry: ready once woken and finished, else pending with `cx`'s waker
    /// registered.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<W::Output> {
        let mut wakers = WakeList::new();
        let mut state = self.on.lock().lock();
        let key = self.key.take().expect("future polled after completion");
        let list = W::list(&mut state);
        if list.is_woken(&key) {
            let (entry, _) = list.remove(key);
            match self.on.woken(&mut state, entry, cx.waker(), &mut wakers) {
                Ok(output) => return Poll::Ready(output),
                Err(key) => self.key = Some(key),
            }
        } else {
            list.set_waker(&key, cx.waker());
            self.key = Some(key);
        }
        Poll::Pending
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
            let mut state = self.on.lock().lock();
            let (entry, woken) = W::list(&mut state).remove(key);
            self.on.abandon(&mut state, entry, woken, &mut wakers);
        }
    }
}
