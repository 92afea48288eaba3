//! Joiners that wait from outside the runtime's fibers (plain threads, async tasks): their
//! wakers are kept here so that shutdown can wake them to report the cancellation.

use std::sync::Mutex;
use std::task::Waker;

#[derive(Debug, Default)]
pub(crate) struct Outside {
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
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
            match &mut slots.wakers[key] {
                Some(old) if old.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
            return Some(key);
        }
        let key = match slots.free.pop() {
            Some(key) => {
                slots.wakers[key] = Some(waker.clone());
                key
            }
            None => {
                slots.wakers.push(Some(waker.clone()));
                slots.wakers.len() - 1
            }
        };
        Some(key)
    }

    pub(crate) fn deregister(&self, key: usize) {
        let mut slots = self.slots.lock().expect("outside-joiner lock poisoned");
        // After `wake_all` the table is empty and every key stale.
        if let Some(Some(_)) = slots.wakers.get_mut(key).map(Option::take) {
            slots.free.push(key);
        }
    }

    pub(crate) fn wake_all(&self) {
        let wakers = {
            let mut slots = self.slots.lock().expect("outside-joiner lock poisoned");
            slots.shut = true;
            slots.free.clear();
            std::mem::take(&mut slots.wakers)
        };
        for waker in wakers.into_iter().flatten() {
            waker.wake();
        }
    }
}
