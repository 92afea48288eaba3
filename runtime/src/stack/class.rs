//! One size class of a pool: its chunks and its warm and cold free lists.

use super::budget;
use super::chunk::Chunk;
use super::error::StackError;
use super::guard::Guard;
use super::layout::{Growth, GUARD_SIZE};
use super::sys;

/// The fewest cold stacks a pool gives back at once when its worker goes idle, unless some of
/// them already waited through an aging: one system call (and one TLB shootdown) for a batch
/// rather than one per stack for every time the worker idles.
pub(super) const DISCARD_BATCH: usize = 64;

/// Most never-used slots whose guards go in together, where guards cost no mapping: one
/// system call for the batch rather than one per stack.
pub(super) const PREPARE_BATCH: usize = 64;

/// A slot of a class: chunk index and slot index within that chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SlotRef {
    pub(super) chunk: usize,
    pub(super) slot: usize,
}

/// All stacks of one usable size in one pool.
pub(super) struct SizeClass {
    slot_size: usize,
    chunks: Vec<Chunk>,
    /// Returned stacks whose touched pages are still resident. Used LIFO: the most recently
    /// returned stack is the one most likely still in cache.
    warm: Vec<SlotRef>,
    /// Returned stacks past the warm bound; reused before fresh slots so that chunks fill up
    /// (and can be unmapped as a whole) rather than spread out. The last `undiscarded` still
    /// have their memory, and the most recently returned are reused first, like warm ones.
    /// Their memory goes back to the kernel when they have waited through an aging
    /// ([`age`](Self::age)), or when the worker goes idle with a batch of them or with some
    /// that already waited through an aging ([`discard_batch`](Self::discard_batch)): a burst
    /// of fibers that ends and starts again soon reuses its stacks without a system call or a
    /// page fault.
    cold: Vec<SlotRef>,
    undiscarded: usize,
    /// How many of the `undiscarded` (the oldest) already waited at the last aging.
    aged: usize,
    /// Slots out of the pool.
    out: usize,
    growth: Growth,
}

impl SizeClass {
    /// An empty class of stacks with `usable` bytes.
    pub(super) fn new(usable: usize) -> SizeClass {
        let slot_size = usable + GUARD_SIZE;
        SizeClass {
            slot_size,
            chunks: Vec::new(),
            warm: Vec::new(),
            cold: Vec::new(),
            undiscarded: 0,
            aged: 0,
            out: 0,
            growth: Growth::new(slot_size),
        }
    }

    /// Hands out a slot: warm first, then cold, then a fresh one.
    pub(super) fn take(&mut self, guard: Guard) -> Result<SlotRef, StackError> {
        let slot = self.take_slot(guard)?;
        self.out += 1;
        Ok(slot)
    }

    /// Stacks kept with their memory (warm, or awaiting their discard), stacks out, and the
    /// usable bytes of each stack.
    pub(super) fn counts(&self) -> (usize, usize, usize) {
        (
            self.warm.len() + self.undiscarded,
            self.out,
            self.slot_size - GUARD_SIZE,
        )
    }

    fn take_slot(&mut self, guard: Guard) -> Result<SlotRef, StackError> {
        if let Some(slot) = self.warm.pop() {
            if guard.costs_mappings() {
                // The stack's ticket covers its mappings from now on.
                budget::refund();
            }
            self.chunks[slot.chunk].lend();
            return Ok(slot);
        }
        if let Some(&slot) = self.cold.last() {
            let addr = self.chunks[slot.chunk].slot_addr(slot.slot);
            // SAFETY: the slot is in the pool, so nothing references it, and its guard range is
            // one that `give` lifted with the same mechanism.
            unsafe { guard.reinstall(addr, GUARD_SIZE) }.map_err(StackError::Guard)?;
            self.cold.pop();
            self.undiscarded = self.undiscarded.saturating_sub(1);
            self.aged = self.aged.min(self.undiscarded);
            self.chunks[slot.chunk].lend();
            return Ok(slot);
        }
        self.carve(guard)
    }

    fn carve(&mut self, guard: Guard) -> Result<SlotRef, StackError> {
        let fresh = self.chunks.last().and_then(Chunk::fresh_slot);
        let (chunk, slot) = match fresh {
            Some(slot) => (self.chunks.len() - 1, slot),
            None => {
                self.grow()?;
                (self.chunks.len() - 1, 0)
            }
        };
        let chunk_ref = &mut self.chunks[chunk];
        // Batches grow with the chunk's use, so a small program prepares few slots it never
        // uses; `mprotect` guards each cost mappings, so they go in one at a time, when needed.
        let batch = if guard.costs_mappings() {
            1
        } else {
            chunk_ref.carved().clamp(1, PREPARE_BATCH)
        };
        let unprepared = chunk_ref.unprepared(batch);
        if !unprepared.is_empty() {
            let guards: Vec<(usize, usize)> = unprepared
                .clone()
                .map(|slot| (chunk_ref.slot_addr(slot), GUARD_SIZE))
                .collect();
            // SAFETY: never-used slots of our own chunk: nothing references them.
            unsafe { guard.install_all(&guards) }.map_err(StackError::Guard)?;
            chunk_ref.prepare(unprepared.end);
        }
        chunk_ref.carve();
        Ok(SlotRef { chunk, slot })
    }

    fn grow(&mut self) -> Result<(), StackError> {
        let slots = self.growth.next_slots();
        // A big reservation can fail under an address-space limit (`ulimit -v`) where a single
        // slot still fits.
        let chunk = Chunk::map(self.slot_size, slots).or_else(|error| {
            if slots > 1 {
                Chunk::map(self.slot_size, 1)
            } else {
                Err(error)
            }
        })?;
        self.chunks.push(chunk);
        Ok(())
    }

    /// Takes back `slot`, whose stack nothing uses any more. It stays warm while fewer than
    /// `max_warm` stacks are; otherwise it goes cold, its memory kept until it has aged.
    pub(super) fn give(&mut self, slot: SlotRef, guard: Guard, max_warm: usize) {
        let chunk = &mut self.chunks[slot.chunk];
        chunk.settle();
        self.out -= 1;
        // A warm mprotect-guarded stack keeps its two mappings, so it needs budget of its own.
        if self.warm.len() < max_warm && (!guard.costs_mappings() || budget::charge().is_ok()) {
            self.warm.push(slot);
            return;
        }
        // SAFETY: this slot's guard, installed by `take` with the same mechanism.
        let lifted = unsafe { guard.lift_for_cold(chunk.slot_addr(slot.slot), GUARD_SIZE) };
        // Failing to lift only means the cold slot keeps its guard; reinstalling is idempotent.
        debug_assert!(lifted.is_ok(), "lifting a cold stack's guard: {lifted:?}");
        self.cold.push(slot);
        self.undiscarded += 1;
    }

    /// Gives back the memory of the cold stacks that already waited at the last aging, in one
    /// system call, and marks the rest to go at the next.
    pub(super) fn age(&mut self) {
        self.discard_oldest(self.aged);
        self.aged = self.undiscarded;
    }

    /// Gives the memory of every cold stack that still has it back to the kernel.
    fn discard_waiting(&mut self) {
        self.discard_oldest(self.undiscarded);
    }

    /// [`discard_waiting`](Self::discard_waiting), if at least [`DISCARD_BATCH`] stacks wait
    /// or some of them already waited through an aging; whether it did.
    pub(super) fn discard_batch(&mut self) -> bool {
        let due = self.undiscarded >= DISCARD_BATCH || self.aged > 0;
        if due {
            self.discard_waiting();
        }
        due
    }

    /// Gives back the memory of the `count` cold stacks that have waited longest.
    fn discard_oldest(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        let first = self.cold.len() - self.undiscarded;
        let ranges: Vec<(usize, usize)> = self.cold[first..first + count]
            .iter()
            .map(|slot| self.chunks[slot.chunk].usable(slot.slot))
            .collect();
        // SAFETY: every range is the usable stack of a slot back in the pool: it came back
        // from a finished coroutine, so no frame and no reference into it remains.
        let discarded = unsafe { sys::discard(&ranges) };
        debug_assert!(discarded.is_ok(), "discarding cold stacks: {discarded:?}");
        self.undiscarded -= count;
        self.aged = self.aged.saturating_sub(count);
    }

    /// The slot of this class whose stack's limit is `limit` in chunk `chunk`.
    pub(super) fn slot_at(&self, chunk: usize, limit: usize) -> SlotRef {
        SlotRef {
            chunk,
            slot: self.chunks[chunk].slot_at(limit),
        }
    }

    /// The `(limit, base)` addresses of `slot`'s stack: bottom of its guard and top of its
    /// usable memory.
    pub(super) fn bounds(&self, slot: SlotRef) -> (usize, usize) {
        let limit = self.chunks[slot.chunk].slot_addr(slot.slot);
        (limit, limit + self.slot_size)
    }

    /// Unmaps every chunk whose slots are all back and leaks the others: a stack still out may
    /// hold pinned data that something references. A leaked chunk keeps only the memory of its
    /// stacks that are out: its warm stacks give theirs back to the kernel.
    pub(super) fn release(mut self, guard: Guard) {
        self.discard_waiting();
        for slot in &self.warm {
            if guard.costs_mappings() {
                budget::refund();
            }
            let chunk = &self.chunks[slot.chunk];
            if !chunk.is_idle() {
                let (start, len) = chunk.usable(slot.slot);
                // SAFETY: a warm slot is back in the pool: no frame and no reference into it
                // remains, so dropping its pages only zeroes memory nobody reads.
                let discarded = unsafe { sys::advise(start, len, libc::MADV_DONTNEED) };
                debug_assert!(discarded.is_ok(), "discarding a warm stack: {discarded:?}");
            }
        }
        for chunk in self.chunks {
            if chunk.is_idle() {
                // SAFETY: every slot is back in the pool, which is going away with it.
                unsafe { chunk.unmap() };
            } else {
                chunk.leak();
            }
        }
    }

    /// The class's chunks.
    #[cfg(test)]
    pub(super) fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }
}
