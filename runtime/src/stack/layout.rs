//! Slot geometry: how a requested size becomes a size class, and how chunks of a class grow.

use super::sys::page_size;
use corosensei::stack::{MIN_STACK_SIZE, STACK_ALIGNMENT};

/// Bytes of guard region below every stack. More than a page so that a frame which skips a few
/// pages without probing (C code built without stack-clash protection) still lands in it; the
/// extra pages cost address space only.
pub(super) const GUARD_SIZE: usize = 64 * 1024;

/// Smallest usable stack handed out; smaller requests are rounded up to it. Below this, the
/// frames of corosensei, panic unwinding and ordinary std calls overflow almost at once.
pub(super) const MIN_USABLE: usize = 16 * 1024;

/// Slots in a class's first chunk: small programs reserve little.
const FIRST_CHUNK_SLOTS: usize = 16;
/// Slots in a chunk once growth has doubled up to it: big programs need few mappings.
const MAX_CHUNK_SLOTS: usize = 16 * 1024;
/// Bytes one chunk may reserve, so huge stack sizes don't take terabytes of address space at once.
const MAX_CHUNK_BYTES: usize = 32 << 30;

const _: () = assert!(MIN_USABLE >= MIN_STACK_SIZE);
const _: () = assert!(GUARD_SIZE % STACK_ALIGNMENT == 0);

/// Usable bytes for a request of `size`: at least [`MIN_USABLE`], rounded up to whole pages.
/// `None` when the slot (with its guard) would not fit in a `usize`.
pub(super) fn usable_size(size: usize) -> Option<usize> {
    let page = page_size();
    let usable = size.max(MIN_USABLE).checked_add(page - 1)? & !(page - 1);
    usable.checked_add(GUARD_SIZE).map(|_| usable)
}

/// Chunk sizes of one size class: geometric growth up to a cap.
#[derive(Debug)]
pub(super) struct Growth {
    next: usize,
    cap: usize,
}

impl Growth {
    /// The schedule for slots of `slot_size` bytes.
    pub(super) fn new(slot_size: usize) -> Growth {
        let cap = (MAX_CHUNK_BYTES / slot_size).clamp(1, MAX_CHUNK_SLOTS);
        Growth {
            next: FIRST_CHUNK_SLOTS.min(cap),
            cap,
        }
    }

    /// Slots for the next chunk; every chunk after it gets twice as many, up to the cap.
    pub(super) fn next_slots(&mut self) -> usize {
        let slots = self.next;
        self.next = (slots * 2).min(self.cap);
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_pages_and_the_minimum() {
        let page = page_size();
        assert_eq!(usable_size(0), Some(MIN_USABLE));
        assert_eq!(usable_size(1), Some(MIN_USABLE));
        assert_eq!(usable_size(MIN_USABLE + 1), Some(MIN_USABLE + page));
        assert_eq!(usable_size(1 << 20), Some(1 << 20));
        assert_eq!(usable_size(usize::MAX), None);
        assert_eq!(usable_size(usize::MAX - GUARD_SIZE), None);
    }

    #[test]
    fn chunks_double_up_to_the_slot_cap() {
        let mut growth = Growth::new((1 << 20) + GUARD_SIZE);
        let slots: Vec<usize> = (0..13).map(|_| growth.next_slots()).collect();
        assert_eq!(
            slots,
            [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 16384, 16384]
        );
    }

    #[test]
    fn huge_slots_are_capped_by_bytes() {
        let mut eight_mib = Growth::new((8 << 20) + GUARD_SIZE);
        let last = (0..20).map(|_| eight_mib.next_slots()).last();
        assert_eq!(last, Some(MAX_CHUNK_BYTES / ((8 << 20) + GUARD_SIZE)));

        let mut huge = Growth::new(64 << 30);
        assert_eq!((huge.next_slots(), huge.next_slots()), (1, 1));
    }
}
