//! Joiners that wait from outside the runtime's fibers (plain threads, async tasks): their
//! wakers are kept here so that shutdown can wake them to report the cancellation.

use crate::slab::Slab;
use std::sync::Mutex;
use std::task::Waker;

#[derive(Debug, Default)]
pub(crate) struct Outside {
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    wakers: Slab<Waker>,
    shut: bool,
}

impl Outside {
    pub(crate) fn new() -> Outside {
        Outside::default()
    }

    /// Registers (or, with `key`, replaces) a waker. Returns `None` once shutdown has woken
    /// everyone: the caller must not wait any more.
    pub(crate) fn register(&self, key: Option<usize>, waker: &Waker) -> Option<usize> {
        let mut slots = self.slots.lock().expect("outside-joiner lock poisoned");
        if slots.shut {
            return None;
        }
        if let Some(key) = key {
            if let Some(old) = slots.wakers.get_mut(key) {
                if !old.will_wake(waker) {
                    *old = waker.clone();
                }
                return Some(key);
            }
        }
        Some(slots.wakers.insert(waker.clone()))
    }

    pub(crate) fn deregister(&self, key: usize) {
        let mut slots = self.slots.lock().expect("outside-joiner lock poisoned");
        slots.wakers.remove(key);
    }

    pub(crate) fn wake_all(&self) {
        let wakers = {
            let mut slots = self.slots.lock().expect("outside-joiner lock poisoned");
            slots.shut = true;
            slots.wakers.drain()
        };
        for waker in wakers {
            waker.wake();
        }
    }
}
