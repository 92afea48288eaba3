//! Waiting on a [`WaitList`] entry, written once for every primitive: blocking (fiber or
//! thread), with a deadline, or polled as a future; and giving the entry back when the wait
//! ends early (a timeout, a dropped future, a fiber unwinding from a cancelled park).

use crate::shim::{self, Lock};
use crate::waiters::{Key, WaitList, Wakers};
use crate::TimedOut;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A primitive whose waiters sit in a [`WaitList`] inside its internal lock.
pub(crate) trait Waitable {
    /// What the internal lock protects.
    type State;
    /// Each waiter's data.
    type Entry;
    /// What a waiter that was woken takes away.
    type Output;

    fn lock(&self) -> &Lock<Self::State>;

    fn list(state: &mut Self::State) -> &mut WaitList<Self::Entry>;

    /// The waiter's entry was woken and removed: finish the wait, or queue it again (with
    /// `waker`) and return the new key. Runs under the lock.
    fn woken(
        &self,
        state: &mut Self::State,
        entry: Self::Entry,
        waker: &Waker,
        wakers: &mut Wakers,
    ) -> Result<Self::Output, Key>;

    /// The waiter gives up; its entry has been removed, and `woken` says whether it had been
    /// woken first (then whatever the wake granted must be passed on). Runs under the lock.
    fn abandon(
        &self,
        state: &mut Self::State,
        entry: Self::Entry,
        woken: bool,
        wakers: &mut Wakers,
    );
}

/// The deadline `timeout` from now; `None` (wait for ever) when it is too far to represent.
pub(crate) fn deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// A registered waiter. Dropping it before the wait has finished gives the entry back through
/// [`Waitable::abandon`].
pub(crate) struct Wait<'a, W: Waitable> {
    on: &'a W,
    /// `None` once the wait has finished.
    key: Option<Key>,
}

impl<'a, W: Waitable> Wait<'a, W> {
    /// Takes over an entry the caller registered with [`shim::current_waker`] (to
    /// [`block`](Self::block)) or with a task's waker (to [`poll`](Self::poll)).
    pub(crate) fn new(on: &'a W, key: Key) -> Self {
        Wait { on, key: Some(key) }
    }

    /// Parks until the entry is woken and [`Waitable::woken`] finishes the wait, or until
    /// `deadline`.
    pub(crate) fn block(mut self, deadline: Option<Instant>) -> Result<W::Output, TimedOut> {
        let waker = shim::current_waker();
        loop {
            // Parking is fibra's cancellation point: a cancelled fiber unwinds
            // from here, and dropping `self` gives the entry back, passing on whatever the
            // waiter had been granted.
            match deadline {
                Some(deadline) => shim::park_until(deadline),
                None => shim::park(),
            }
            let mut wakers = Wakers::new();
            let mut state = self.on.lock().lock();
            let key = self.key.take().expect("a blocking wait holds its key");
            let list = W::list(&mut state);
            if list.is_woken(&key) {
                let (entry, _) = list.remove(key);
                match self.on.woken(&mut state, entry, &waker, &mut wakers) {
                    Ok(output) => return Ok(output),
                    Err(key) => self.key = Some(key),
                }
            } else if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
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
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<W::Output> {
        let mut wakers = Wakers::new();
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

impl<W: Waitable> Drop for Wait<'_, W> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut wakers = Wakers::new();
            let mut state = self.on.lock().lock();
            let (entry, woken) = W::list(&mut state).remove(key);
            self.on.abandon(&mut state, entry, woken, &mut wakers);
        }
    }
}
