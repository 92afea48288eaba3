//! One reservation: a single mapping cut into equal slots, known to the overflow registry.

use super::error::StackError;
use super::layout::GUARD_SIZE;
use super::registry::{self, Registration};
use super::sys;

/// A mapping of `slots` slots of `slot_size` bytes, each a guard followed by a usable stack.
///
/// Dropping a `Chunk` leaks its mapping (and keeps it registered); [`Chunk::unmap`] is the only
/// way to give it back, because a stack that is still out may hold pinned data.
#[derive(Debug)]
pub(super) struct Chunk {
    base: usize,
    slot_size: usize,
    slots: usize,
    /// Slots handed out at least once. Guards go in lazily so that a chunk costs nothing until
    /// its slots are used.
    carved: usize,
    /// Slots whose guard is in: `carved` and a few never-used ones after them, prepared in one
    /// batch with the next slot to be carved.
    prepared: usize,
    /// Slots currently out of the pool.
    outstanding: usize,
    registration: Option<Registration>,
}

impl Chunk {
    /// Reserves a chunk of `slots` slots of `slot_size` bytes.
    pub(super) fn map(slot_size: usize, slots: usize) -> Result<Chunk, StackError> {
        let len = slot_size
            .checked_mul(slots)
            .ok_or(StackError::TooLarge { size: slot_size })?;
        let base = sys::map_stack_memory(len).map_err(StackError::Mmap)?;
        Ok(Chunk {
            base,
            slot_size,
            slots,
            carved: 0,
            prepared: 0,
            outstanding: 0,
            registration: registry::register(base, len, slot_size),
        })
    }

    /// Address of slot `slot`, which is also the start of its guard and the stack's limit.
    pub(super) fn slot_addr(&self, slot: usize) -> usize {
        debug_assert!(slot < self.slots);
        self.base + slot * self.slot_size
    }

    /// The slot whose guard starts at `limit`.
    pub(super) fn slot_at(&self, limit: usize) -> usize {
        let slot = (limit - self.base) / self.slot_size;
        debug_assert!(slot < self.carved && self.slot_addr(slot) == limit);
        slot
    }

    /// The usable range `(start, len)` above the guard of `slot`.
    pub(super) fn usable(&self, slot: usize) -> (usize, usize) {
        (
            self.slot_addr(slot) + GUARD_SIZE,
            self.slot_size - GUARD_SIZE,
        )
    }

    /// The next never-used slot, if any is left.
    pub(super) fn fresh_slot(&self) -> Option<usize> {
        (self.carved < self.slots).then_some(self.carved)
    }

    /// The never-used slots from [`Chunk::fresh_slot`] on that still need their guard: none
    /// if the next one was prepared already, else up to `up_to` of them.
    pub(super) fn unprepared(&self, up_to: usize) -> std::ops::Range<usize> {
        let start = self.prepared.max(self.carved);
        if start > self.carved {
            return start..start;
        }
        start..(start + up_to).min(self.slots)
    }

    /// Slots handed out from this chunk so far.
    pub(super) fn carved(&self) -> usize {
        self.carved
    }

    /// Records that the slots up to `end` have their guards.
    pub(super) fn prepare(&mut self, end: usize) {
        self.prepared = self.prepared.max(end);
    }

    /// Records that the slot from [`Chunk::fresh_slot`], prepared, is handed out.
    pub(super) fn carve(&mut self) {
        debug_assert!(self.carved < self.prepared);
        self.carved += 1;
        self.outstanding += 1;
    }

    /// Records that a slot left the pool.
    pub(super) fn lend(&mut self) {
        self.outstanding += 1;
    }

    /// Records that a slot came back to the pool.
    pub(super) fn settle(&mut self) {
        self.outstanding -= 1;
    }

    /// Whether no slot of this chunk is out of the pool.
    pub(super) fn is_idle(&self) -> bool {
        self.outstanding == 0
    }

    /// Unregisters and unmaps the chunk.
    ///
    /// # Safety
    ///
    /// No slot may be in use: [`Chunk::is_idle`] must hold and no stack from it may be referenced.
    pub(super) unsafe fn unmap(self) {
        // Unregister first: once unmapped, the range may be reused by an unrelated mapping.
        if let Some(registration) = self.registration {
            registry::unregister(registration);
        }
        // SAFETY: the caller guarantees no slot is in use, and the whole range is our mapping.
        let unmapped = unsafe { sys::unmap(self.base, self.slot_size * self.slots) };
        debug_assert!(unmapped.is_ok(), "unmapping a stack chunk: {unmapped:?}");
    }

    /// Leaves the chunk mapped for good (a stack still out may be borrowed from) but frees its
    /// registry entry: only stacks of fibers that never run again are out when a pool goes
    /// away, so no overflow can happen in it any more.
    pub(super) fn leak(self) {
        if let Some(registration) = self.registration {
            registry::unregister(registration);
        }
    }

    /// The chunk's address range `(start, len)`.
    #[cfg(test)]
    pub(super) fn range(&self) -> (usize, usize) {
        (self.base, self.slot_size * self.slots)
    }

    /// Slots whose guard is in.
    #[cfg(test)]
    pub(super) fn prepared(&self) -> usize {
        self.prepared
    }

    /// Number of slots in the chunk.
    #[cfg(test)]
    pub(super) fn slots(&self) -> usize {
        self.slots
    }
}
