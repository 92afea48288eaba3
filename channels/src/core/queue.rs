//! Wait queues: the FIFO of registered operations on one side of a channel (parked receivers,
//! parked senders, or close watchers), a [`WaitList`] kept under the channel's lock. Each entry
//! carries its owner's waker, moved in when it registers.
//!
//! An entry points at its owner's [`Waiter`] and [`Packet`], which live on the owner's stack or
//! in its future. Invariant (the owner upholds it, see `op`): an entry stays in a queue only
//! while its waiter and packet are alive, and the owner removes its entries under the lock
//! before either goes away — except the entry a claimer completed, whose slot the claimer
//! frees itself (the owner learns so from its waiter's `done` state and drops that key), and
//! which the claimer touches only while still holding the lock and only up to
//! [`Claimed::finish`].

use super::packet::Packet;
use super::waiter::Waiter;
use fibra_runtime::wait::{Key, Popped, WaitList, WakeList};
use std::ptr::NonNull;
use std::task::Waker;

/// One registered operation.
pub(crate) struct Entry<T> {
    waiter: NonNull<Waiter>,
    oper: usize,
    packet: NonNull<Packet<T>>,
}

// SAFETY: an entry is a pair of pointers to a `Waiter` (atomics, `Sync`) and a `Packet<T>`
// (`Sync` for `T: Send`); it is only dereferenced under the channel's lock, per the module
// invariant, so moving it to another thread with the queue is sound.
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
    list: WaitList<Entry<T>>,
}

impl<T> WaitQueue<T> {
    pub(crate) const fn new() -> Self {
        WaitQueue {
            list: WaitList::new(),
        }
    }

    pub(crate) fn push(&mut self, entry: Entry<T>, waker: Waker) -> Key {
        self.list.push_back(entry, waker)
    }

    /// Unlinks entries in FIFO order until one's waiter is claimed for it; entries whose
    /// waiter was already decided elsewhere stay in their slots for their owners to remove,
    /// and their wakers go to `wakers` to be dropped after the lock (user code may run).
    pub(crate) fn claim(&mut self, wakers: &mut WakeList) -> Option<Claimed<'_, T>> {
        loop {
            let entry = self.list.front()?;
            if entry.waiter().try_claim(entry.oper) {
                let popped = self.list.pop_front_entry()?;
                return Some(Claimed { popped });
            }
            if let Some(waker) = self.list.pop_front() {
                wakers.push_stale(waker);
            }
        }
    }

    /// Claims and finishes every entry without touching packets (a close: receivers find no
    /// value, senders keep theirs), collecting the wakers.
    pub(crate) fn finish_all(&mut self, wakers: &mut WakeList) {
        while let Some(claimed) = self.claim(wakers) {
            wakers.push(claimed.finish());
        }
    }

    /// Wakes every claimable entry to try again (a close: a receiver then finds the values
    /// still buffered, or the end), collecting the wakers.
    pub(crate) fn retry_all(&mut self, wakers: &mut WakeList) {
        while let Some(claimed) = self.claim(wakers) {
            wakers.push(claimed.retry());
        }
    }

    /// Whether an entry of another waiter than `waiter` may still be claimed (a hint).
    pub(crate) fn has_other(&self, waiter: &Waiter) -> bool {
        self.list
            .iter()
            .any(|entry| !entry.is_of(waiter) && entry.waiter().is_waiting())
    }

    /// Gives back the slot of `key`, an entry of `waiter` for operation `oper`, unless a
    /// claimer completed that operation (and freed the slot itself). Only for a waiter that
    /// can no longer be claimed (aborted or decided): under the lock, its state then says for
    /// good whether a claimer of this queue completed it. The entry's waker goes to `wakers`,
    /// to be dropped after the lock.
    pub(crate) fn remove(&mut self, key: Key, waiter: &Waiter, oper: usize, wakers: &mut WakeList) {
        debug_assert!(
            !waiter.is_waiting(),
            "a waiter withdraws before it unregisters"
        );
        if waiter.done() != Some(oper) {
            self.list.remove_into(key, wakers);
        }
    }

    /// Takes back the entry just pushed (the caller held the lock since); its waker goes to
    /// `wakers`, to be dropped after the lock.
    pub(crate) fn unpush(&mut self, key: Key, wakers: &mut WakeList) {
        self.list.remove_into(key, wakers);
    }

    /// Entries that may still be claimed or that no claimer has looked at yet.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

/// An entry whose waiter this party has claimed: it may use the packet, then must
/// [`finish`](Claimed::finish) or [`retry`](Claimed::retry). Borrows the queue, so it cannot
/// outlive the lock.
pub(crate) struct Claimed<'q, T> {
    popped: Popped<'q, Entry<T>>,
}

impl<T> Claimed<'_, T> {
    fn entry(&self) -> &Entry<T> {
        self.popped.data()
    }

    /// Hands `value` to the claimed receiver, as hand-off number `handoff` of its channel.
    pub(crate) fn hand(&self, value: T, handoff: u64) {
        // SAFETY: we claimed the waiter, so until `finish` we are the only party that may touch
        // its packet, which is alive (module invariant; the lock is held).
        let previous = unsafe { self.entry().packet.as_ref().hand(value, handoff) };
        debug_assert!(previous.is_none(), "a claimed packet was not empty");
    }

    /// Puts its value back into the claimed sender's packet.
    pub(crate) fn put_back(&self, value: T) {
        // SAFETY: as for `hand`.
        let previous = unsafe { self.entry().packet.as_ref().replace(Some(value)) };
        debug_assert!(previous.is_none(), "a claimed packet was not empty");
    }

    /// Takes the value out of the claimed sender's packet.
    pub(crate) fn take(&self) -> T {
        // SAFETY: as for `hand`.
        let value = unsafe { self.entry().packet.as_ref().take() };
        value.expect("a parked sender's packet held no value")
    }

    /// Publishes the completion and frees the entry's slot (its owner, seeing `done`, drops
    /// the key); returns the waker to wake after unlocking.
    pub(crate) fn finish(self) -> Waker {
        let (entry, waker) = self.popped.free();
        // SAFETY: a `Claimed` is made only by a won claim and is consumed here, so this is the
        // one finish of that claim; the lock is still held, so the waiter is alive.
        unsafe { entry.waiter().finish(entry.oper) };
        waker
    }

    /// Publishes that nothing completed (the packet is as the owner left it), leaving the slot
    /// for the owner to remove; returns the waker to wake after unlocking.
    pub(crate) fn retry(self) -> Waker {
        let waiter = self.entry().waiter;
        let waker = self.popped.into_waker();
        // SAFETY: as for `finish`; the waiter is alive while the lock is held (the list borrow
        // ended, but the caller's lock guard has not).
        unsafe { waiter.as_ref().finish_retry() };
        waker
    }
}
