//! Wait queues: the FIFO of registered operations on one side of a channel (parked receivers,
//! parked senders, or close watchers), kept under the channel's lock.
//!
//! An entry points at its owner's [`Waiter`] and [`Packet`], which live on the owner's stack or
//! in its future. Invariant (the owner upholds it, see `op`): an entry stays in a queue only
//! while its waiter and packet are alive, and the owner removes its entries under the lock
//! before either goes away — except entries a claimer popped, which the claimer touches only
//! while still holding the lock and only up to [`Claimed::finish`].

use crate::packet::Packet;
use crate::waiter::Waiter;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::task::Waker;

/// One registered operation.
pub(crate) struct Entry<T> {
    waiter: NonNull<Waiter>,
    oper: usize,
    packet: NonNull<Packet<T>>,
}

// SAFETY: an entry is a pair of pointers to a `Waiter` (atomics and a `Waker`, both `Sync`) and
// a `Packet<T>` (`Sync` for `T: Send`); it is only dereferenced under the channel's lock, per
// the module invariant, so moving it to another thread with the queue is sound.
unsafe impl<T: Send> Send for Entry<T> {}

impl<T> Entry<T> {
    /// An entry for operation `oper` of `waiter`, whose value slot is `packet`.
    pub(crate) fn new(waiter: &Waiter, oper: usize, packet: &Packet<T>) -> Self {
        Entry {
            waiter: NonNull::from(waiter),
            oper,
            packet: NonNull::from(packet),
        }
    }

    fn waiter(&self) -> &Waiter {
        // SAFETY: the entry is in (or was just popped from) a queue whose lock the caller holds,
        // so by the module invariant the waiter is alive.
        unsafe { self.waiter.as_ref() }
    }

    fn is_of(&self, waiter: &Waiter) -> bool {
        std::ptr::eq(self.waiter.as_ptr(), waiter)
    }
}

/// A FIFO of entries.
pub(crate) struct WaitQueue<T> {
    entries: VecDeque<Entry<T>>,
}

impl<T> WaitQueue<T> {
    pub(crate) fn new() -> Self {
        WaitQueue {
            entries: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, entry: Entry<T>) {
        self.entries.push_back(entry);
    }

    /// Pops entries in FIFO order until one's waiter is claimed for it; entries whose waiter
    /// was already decided elsewhere are dropped on the way (their owners find nothing to
    /// remove).
    pub(crate) fn claim(&mut self) -> Option<Claimed<'_, T>> {
        while let Some(entry) = self.entries.pop_front() {
            if entry.waiter().try_claim(entry.oper) {
                return Some(Claimed {
                    entry,
                    _queue: PhantomData,
                });
            }
        }
        None
    }

    /// Claims and finishes every entry without touching packets (a close: receivers find no
    /// value, senders keep theirs), collecting the wakers.
    pub(crate) fn finish_all(&mut self, wakers: &mut Vec<Waker>) {
        while let Some(claimed) = self.claim() {
            wakers.push(claimed.finish());
        }
    }

    /// Wakes every claimable entry to try again (a close: a receiver then finds the values
    /// still buffered, or the end), collecting the wakers.
    pub(crate) fn retry_all(&mut self, wakers: &mut Vec<Waker>) {
        while let Some(claimed) = self.claim() {
            wakers.push(claimed.retry());
        }
    }

    /// Takes back the entry just pushed (the caller held the lock since).
    pub(crate) fn pop_back(&mut self) {
        self.entries.pop_back();
    }

    /// Whether an entry of another waiter than `waiter` may still be claimed (a hint).
    pub(crate) fn has_other(&self, waiter: &Waiter) -> bool {
        self.entries
            .iter()
            .any(|entry| !entry.is_of(waiter) && entry.waiter().is_waiting())
    }

    /// Removes every entry of `waiter`.
    pub(crate) fn remove(&mut self, waiter: &Waiter) {
        self.entries.retain(|entry| !entry.is_of(waiter));
    }

    /// Entries, including ones whose waiter was decided elsewhere and that are not yet dropped.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// An entry whose waiter this party has claimed: it may use the packet, then must
/// [`finish`](Claimed::finish). Borrows the queue, so it cannot outlive the lock.
pub(crate) struct Claimed<'q, T> {
    entry: Entry<T>,
    _queue: PhantomData<&'q mut WaitQueue<T>>,
}

impl<T> Claimed<'_, T> {
    /// Puts a value in the claimed packet: a receiver's, or back into a sender's.
    pub(crate) fn put(&self, value: T) {
        // SAFETY: we claimed the waiter, so until `finish` we are the only party that may touch
        // its packet, which is alive (module invariant; the lock is held).
        let previous = unsafe { self.entry.packet.as_ref().replace(Some(value)) };
        debug_assert!(previous.is_none(), "a claimed packet was not empty");
    }

    /// Takes the value out of the claimed sender's packet.
    pub(crate) fn take(&self) -> T {
        // SAFETY: as for `put`.
        let value = unsafe { self.entry.packet.as_ref().take() };
        value.expect("a parked sender's packet held no value")
    }

    /// Publishes the completion; returns the waker to wake after unlocking.
    pub(crate) fn finish(self) -> Waker {
        // SAFETY: a `Claimed` is made only by a won claim and is consumed here, so this is the
        // one finish of that claim.
        unsafe { self.entry.waiter().finish(self.entry.oper) }
    }

    /// Publishes that nothing completed (the packet is as the owner left it); returns the waker
    /// to wake after unlocking.
    pub(crate) fn retry(self) -> Waker {
        // SAFETY: as for `finish`.
        unsafe { self.entry.waiter().finish_retry() }
    }
}
