//! Joiners that wait from outside the runtime's fibers (plain threads, async tasks): their
//! wakers are kept here so that shutdown can wake them to report the cancellation.

use crate::loom::sync::Lock;
use crate::wait::{Key, WaitList, WakeList};
use std::task::Waker;

#[derive(Debug, Default)]
pub(crate) struct Outside {
    slots: Lock<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    joiners: WaitList<()>,
    shut: bool,
}

impl Outside {
    pub(crate) fn new() -> Outside {
        Outside::default()
    }

    /// Registers `waker`, or replaces the one registered under `key`. False once shutdown has
    /// woken everyone (and `key` is gone): the caller must not wait any more.
    pub(crate) fn register(&self, key: &mut Option<Key>, waker: &Waker) -> bool {
        // Declared before the lock: a replaced waker is a task's, whose drop may run its code.
        let mut replaced = WakeList::new();
        let mut slots = self.slots.lock();
        if slots.shut {
            if let Some(key) = key.take() {
                slots.joiners.remove(key);
            }
            return false;
        }
        match key {
            Some(key) => slots.joiners.set_waker(key, waker, &mut replaced),
            None => *key = Some(slots.joiners.push_back((), waker.clone())),
        }
        true
    }

    /// Whether a joiner outside the runtime's fibers waits.
    pub(crate) fn has_joiners(&self) -> bool {
        !self.slots.lock().joiners.is_empty()
    }

    pub(crate) fn deregister(&self, key: Key) {
        self.slots.lock().joiners.remove(key);
    }

    pub(crate) fn wake_all(&self) {
        let mut woken = WakeList::new();
        let mut slots = self.slots.lock();
        slots.shut = true;
        while let Some(waker) = slots.joiners.pop_front() {
            woken.push(waker);
        }
        drop(slots);
        woken.wake_all();
    }
}
