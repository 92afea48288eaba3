//! `Turns`: a value that fibers use one at a time, waiting for their turn as fibers.

use crate::loom::cell::Cell;
use crate::loom::sync::Lock;
use crate::wait::{
    current_waker, Deadline, Key, Wait, WaitKind, WaitList, WaitSite, Waitable, WakeList,
};
use std::task::Waker;

/// A value that fibers use in turns, for code that may block while it has the value: a std
/// lock held across a fiber's park would stop a thread that waits for it, and with it every
/// fiber pinned there, the holder too if it runs there. The turn passes to the waiters in
/// arrival order.
pub(crate) struct Turns<T> {
    state: Lock<State>,
    value: Cell<T>,
}

/// Who has the turn and who waits for it, under the internal lock.
pub(crate) struct State {
    /// Whether a fiber has the turn (or it has been handed to a woken waiter).
    taken: bool,
    waiters: WaitList<()>,
}

// SAFETY: the value is reached only by the one caller whose turn it is (see `with`), so
// sharing `Turns` hands `&mut T` to one thread at a time: `T: Send` suffices, as for a mutex.
unsafe impl<T: Send> Sync for Turns<T> {}

impl<T> Turns<T> {
    pub(crate) fn new(value: T) -> Turns<T> {
        Turns {
            state: Lock::new(State {
                taken: false,
                waiters: WaitList::new(),
            }),
            value: Cell::new(value),
        }
    }

    pub(crate) fn into_inner(self) -> T {
        self.value.into_inner()
    }

    /// Runs `f` on the value in the caller's turn, waiting for it first while another caller
    /// has it. The turn passes on when `f` returns or unwinds.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.take();
        let _turn = Turn(self);
        // SAFETY: the turn is ours until `_turn` drops, and only a turn's holder reaches the
        // value, so this is the one reference to it.
        self.value.with_mut(|value| f(unsafe { &mut *value }))
    }

    fn take(&self) {
        let key = {
            let mut state = self.state.lock();
            if !state.taken {
                state.taken = true;
                return;
            }
            state.waiters.push_back((), current_waker())
        };
        Wait::new(self, key)
            .block_at(Deadline::NEVER, &WaitSite::new(WaitKind::Mutex, self))
            .unwrap_or_else(|_| unreachable!("a wait without a deadline does not time out"));
    }
}

/// Hands the turn to the first waiter, or frees it when nobody waits.
fn pass_on(state: &mut State, wakers: &mut WakeList) {
    match state.waiters.pop_front() {
        Some(waker) => wakers.push(waker),
        None => state.taken = false,
    }
}

/// The caller's turn: passed on when dropped.
struct Turn<'a, T>(&'a Turns<T>);

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        // Declared before the guard, so the waiter is woken after the lock is released.
        let mut wakers = WakeList::new();
        let mut state = self.0.state.lock();
        pass_on(&mut state, &mut wakers);
    }
}

impl<T> Waitable for &Turns<T> {
    type State = State;
    type Entry = ();
    type Output = ();

    fn lock(&self) -> &Lock<State> {
        &self.state
    }

    fn list(state: &mut State) -> &mut WaitList<()> {
        &mut state.waiters
    }

    /// A waiter is woken only when the turn is handed to it.
    fn woken(&self, _: &mut State, _: (), _: &Waker, _: &mut WakeList) -> Result<(), Key> {
        Ok(())
    }

    fn abandon(&self, state: &mut State, _: (), woken: bool, wakers: &mut WakeList) {
        if woken {
            pass_on(state, wakers);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
