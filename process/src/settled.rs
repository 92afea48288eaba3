//! The gate a process's end opens once everything the end does is done: its monitors told,
//! its name freed, its links signalled. A caller that finds the process ended part-way
//! through (an `exit` of a process another fiber is ending, a `demonitor` whose monitor the
//! end took) waits here, so that what it promises holds when it returns.

use fibra_runtime::wait::{current_waker, Deadline, Lock, PlainWaitable, Wait, WaitList, WakeList};
use std::sync::atomic::{AtomicBool, Ordering};

/// See [`Settled::opens_on_drop`].
pub(crate) struct OpensOnDrop<'a>(&'a Settled);

impl Drop for OpensOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// One process's gate (see the module docs).
#[derive(Default)]
pub(crate) struct Settled {
    open: AtomicBool,
    waiters: Lock<WaitList<()>>,
}

impl PlainWaitable for &Settled {
    type Entry = ();

    fn lock(&self) -> &Lock<WaitList<()>> {
        &self.waiters
    }

    // Opening wakes every waiter, so one that gives up has nothing to pass on.
    fn abandon(&self, _: &mut WaitList<()>, _: (), _: bool, _: &mut WakeList) {}
}

impl Settled {
    /// Waits until the gate is open (a cancellation point while it waits).
    pub(crate) fn wait(&self) {
        self.wait_until(Deadline::NEVER);
    }

    /// Waits until the gate is open or `deadline` has passed (a cancellation point while it
    /// waits).
    pub(crate) fn wait_until(&self, deadline: Deadline) {
        let key = {
            let mut waiters = self.waiters.lock();
            if self.open.load(Ordering::Acquire) {
                return;
            }
            waiters.push_back((), current_waker())
        };
        let _ = Wait::new(self, key).block(deadline);
    }

    /// A guard that opens the gate when dropped: when the end is done, or if a message's
    /// `Drop` panics part-way, so that nobody waits for ever.
    pub(crate) fn opens_on_drop(&self) -> OpensOnDrop<'_> {
        OpensOnDrop(self)
    }

    /// Opens the gate for good, waking whoever waits.
    pub(crate) fn open(&self) {
        // Declared before the guard: the waiters are woken after the lock is released.
        let mut wakers = WakeList::new();
        let mut waiters = self.waiters.lock();
        self.open.store(true, Ordering::Release);
        while let Some(waker) = waiters.pop_front() {
            wakers.push(waker);
        }
    }
}
