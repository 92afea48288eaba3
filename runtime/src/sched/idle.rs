//! Which workers sleep, and waking exactly one of them when work appears.
//!
//! No lost wake-up: a pusher publishes its work, then (SeqCst fence) reads `searching` and
//! `sleeping`; a worker going to sleep first registers in `sleeping` and leaves `searching`
//! (SeqCst), then (SeqCst fence) checks every queue once more. In the single total order either
//! the pusher sees the registration and wakes someone, or the worker's re-check sees the work.
//!
//! No thundering herd: one push wakes at most one worker, and none while another worker is
//! already searching; a searcher that finds work wakes the next one (so a burst of work spreads
//! one worker at a time).

use super::parker::Parker;
use crate::loom::sync::atomic::{fence, AtomicUsize, Ordering};
use crate::loom::sync::Mutex;

#[derive(Debug)]
pub(crate) struct Idle {
    /// Indices of sleeping workers not yet chosen by a notifier.
    sleepers: Mutex<Vec<usize>>,
    sleeping: AtomicUsize,
    /// Workers awake without work, looking for some. A worker chosen by a notifier is counted
    /// here by the notifier, before it even runs.
    searching: AtomicUsize,
}

/// How a worker came out of [`Idle::sleep_on`] or [`Idle::cancel_sleep`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// A notifier chose this worker and counted it as searching.
    Searching,
    /// Something else woke it (its inbox, shutdown); it is not counted as searching.
    Other,
}

impl Idle {
    pub(crate) fn new(workers: usize) -> Idle {
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            sleeping: AtomicUsize::new(0),
            searching: AtomicUsize::new(0),
        }
    }

    /// Called by a pusher after its work is visible to other workers: wakes one sleeper unless
    /// a worker is already searching.
    pub(crate) fn notify_one(&self, parkers: &[Parker]) {
        fence(Ordering::SeqCst);
        if self.searching.load(Ordering::SeqCst) != 0 || self.sleeping.load(Ordering::SeqCst) == 0 {
            return;
        }
        let chosen = {
            let mut sleepers = self.sleepers.lock().expect("idle lock poisoned");
            let chosen = sleepers.pop();
            if chosen.is_some() {
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                self.searching.fetch_add(1, Ordering::SeqCst);
            }
            chosen
        };
        if let Some(index) = chosen {
            parkers[index].unpark();
        }
    }

    /// A worker starts searching on its own (it ran out of work).
    /// Workers registered to sleep.
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Ordering::SeqCst)
    }

    pub(crate) fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// A searching worker found work. If it was the last searcher, another sleeper is woken to
    /// look for more.
    pub(crate) fn found_work(&self, parkers: &[Parker]) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.notify_one(parkers);
        }
    }

    /// A searching worker registers as asleep. It must then check every queue once more and
    /// either [`Idle::cancel_sleep`] (work found) or [`Idle::sleep_on`] its parker.
    pub(crate) fn prepare_sleep(&self, index: usize) {
        self.sleepers
            .lock()
            .expect("idle lock poisoned")
            .push(index);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        self.searching.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Leaves the sleeper list after [`Idle::prepare_sleep`] without sleeping.
    pub(crate) fn cancel_sleep(&self, index: usize) -> Woken {
        let mut sleepers = self.sleepers.lock().expect("idle lock poisoned");
        match sleepers.iter().position(|&i| i == index) {
            Some(at) => {
                sleepers.swap_remove(at);
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                Woken::Other
            }
            // A notifier chose us already; its unpark leaves a token we consume later.
            None => Woken::Searching,
        }
    }

    /// Sleeps after [`Idle::prepare_sleep`] until unparked.
    pub(crate) fn sleep_on(&self, index: usize, parker: &Parker) -> Woken {
        parker.park();
        self.cancel_sleep(index)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
