//! The packet: the slot a blocked operation's value travels through. A parked receiver's packet
//! is empty until a sender puts a value in; a parked sender's packet holds its value until a
//! receiver takes it (and still holds it when the channel closed instead).

use fibra_runtime::loom::cell::Cell;

/// One operation's value slot. Accessed by its owner while no wait-queue entry points to it,
/// and by the party that claimed the owner's waiter between the claim and `Waiter::finish`.
#[derive(Debug)]
pub(crate) struct Packet<T> {
    slot: Cell<Option<T>>,
    /// A receiver's: the number of the hand-off that put its value in (see `Chan::reinject`).
    handoff: Cell<u64>,
}

// SAFETY: a packet moves values of type `T` between threads, which is sound for `T: Send`.
// Shared access is never simultaneous: the handoff protocol (module `waiter`) gives it to
// exactly one party at a time — the owner before registering and after the waiter is done or
// aborted, the claimer in between — with acquire/release edges between the two.
unsafe impl<T: Send> Sync for Packet<T> {}

impl<T> Packet<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        Packet {
            slot: Cell::new(value),
            handoff: Cell::new(0),
        }
    }

    /// Puts `value` in, returning what was there.
    ///
    /// # Safety
    ///
    /// The caller has exclusive access to the packet (see the type's documentation).
    pub(crate) unsafe fn replace(&self, value: Option<T>) -> Option<T> {
        // SAFETY: exclusive access is the caller's contract.
        self.slot
            .with_mut(|slot| unsafe { std::mem::replace(&mut *slot, value) })
    }

    /// Puts a handed-off `value` in, with the number of its hand-off.
    ///
    /// # Safety
    ///
    /// As for [`Packet::replace`].
    pub(crate) unsafe fn hand(&self, value: T, handoff: u64) -> Option<T> {
        // SAFETY: exclusive access is the caller's contract.
        self.handoff.with_mut(|slot| unsafe { *slot = handoff });
        // SAFETY: forwarded contract.
        unsafe { self.replace(Some(value)) }
    }

    /// The number of the hand-off that put the value in (for a value a claimer handed over).
    ///
    /// # Safety
    ///
    /// As for [`Packet::replace`].
    pub(crate) unsafe fn handoff(&self) -> u64 {
        // SAFETY: exclusive access is the caller's contract.
        self.handoff.with_mut(|slot| unsafe { *slot })
    }

    /// Takes the value out.
    ///
    /// # Safety
    ///
    /// As for [`Packet::replace`].
    pub(crate) unsafe fn take(&self) -> Option<T> {
        // SAFETY: forwarded contract.
        unsafe { self.replace(None) }
    }

    /// Whether a value is in the packet.
    ///
    /// # Safety
    ///
    /// As for [`Packet::replace`].
    pub(crate) unsafe fn is_full(&self) -> bool {
        // SAFETY: exclusive access is the caller's contract.
        self.slot.with_mut(|slot| unsafe { (*slot).is_some() })
    }

    pub(crate) fn into_inner(self) -> Option<T> {
        self.slot.into_inner()
    }
}
