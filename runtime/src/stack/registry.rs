//! Process-wide table of chunk address ranges, read by the overflow signal handler.
//!
//! The handler may run on any thread at any moment, so it cannot take locks or allocate. Each
//! entry is a small seqlock: a writer makes `seq` odd, updates the fields and makes it even
//! again; a reader accepts fields only if it saw the same even `seq` before and after reading
//! them, so it never combines the bounds of two different chunks.

use super::layout::GUARD_SIZE;
use std::hint;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// Chunks registered at once. A pool holds about a dozen chunks per size class, so this covers
/// hundreds of workers; chunks beyond it still have working guards, but an overflow in them is
/// reported as a plain SIGSEGV.
const CAPACITY: usize = 8192;

/// How often the handler re-reads an entry that a writer is changing. The writer may be the very
/// thread the handler interrupted, so waiting for it without a bound could hang.
const READ_ATTEMPTS: usize = 64;

struct Entry {
    seq: AtomicUsize,
    start: AtomicUsize,
    /// One past the last byte; 0 while the entry is free.
    end: AtomicUsize,
    slot_size: AtomicUsize,
}

impl Entry {
    const fn free() -> Entry {
        Entry {
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            slot_size: AtomicUsize::new(0),
        }
    }

    /// Stores the fields, given that this thread made `seq` odd (`locked`).
    fn publish(&self, locked: usize, start: usize, end: usize, slot_size: usize) {
        // Orders the odd `seq` before the field stores for readers (they fence before rechecking).
        fence(Ordering::Release);
        self.start.store(start, Ordering::Relaxed);
        self.end.store(end, Ordering::Relaxed);
        self.slot_size.store(slot_size, Ordering::Relaxed);
        self.seq.store(locked.wrapping_add(1), Ordering::Release);
    }
}

static ENTRIES: [Entry; CAPACITY] = [const { Entry::free() }; CAPACITY];

/// Entries ever claimed; the handler scans no further.
static USED: AtomicUsize = AtomicUsize::new(0);

/// A chunk's entry. Dropping it leaves the chunk registered, which is right for a leaked chunk:
/// its guards stay in place.
#[derive(Debug)]
pub(super) struct Registration(usize);

/// Registers the chunk `[start, start + len)` made of slots of `slot_size` bytes, each starting
/// with a guard of [`GUARD_SIZE`] bytes. `None` when the table is full.
pub(super) fn register(start: usize, len: usize, slot_size: usize) -> Option<Registration> {
    ENTRIES.iter().enumerate().find_map(|(index, entry)| {
        let seq = entry.seq.load(Ordering::Acquire);
        let free = seq % 2 == 0 && entry.end.load(Ordering::Relaxed) == 0;
        // The CAS fails if anyone else wrote the entry since we read `seq`, so a success means
        // the entry is still free and now ours.
        if !free
            || entry
                .seq
                .compare_exchange(
                    seq,
                    seq.wrapping_add(1),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return None;
        }
        entry.publish(seq.wrapping_add(1), start, start + len, slot_size);
        USED.fetch_max(index + 1, Ordering::Release);
        Some(Registration(index))
    })
}

/// Removes a chunk's entry. Call it before unmapping the chunk, so that a fault in whatever the
/// kernel maps there next is never taken for a fiber overflow.
pub(super) fn unregister(registration: Registration) {
    let entry = &ENTRIES[registration.0];
    // Only the owner of a live entry writes it: `register` never claims an entry whose `end` is
    // set.
    let locked = entry.seq.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
    entry.publish(locked, 0, 0, 0);
}

/// If `addr` is inside a registered guard region, the usable size of that slot's stack.
///
/// Async-signal-safe: atomics only, bounded work.
pub(super) fn guard_hit(addr: usize) -> Option<usize> {
    let used = USED.load(Ordering::Acquire).min(CAPACITY);
    ENTRIES[..used].iter().find_map(|entry| {
        let (start, end, slot_size) = read(entry)?;
        let in_guard = start <= addr && addr < end && (addr - start) % slot_size < GUARD_SIZE;
        in_guard.then(|| slot_size - GUARD_SIZE)
    })
}

/// A consistent snapshot of a live entry's `(start, end, slot_size)`.
fn read(entry: &Entry) -> Option<(usize, usize, usize)> {
    for _ in 0..READ_ATTEMPTS {
        let before = entry.seq.load(Ordering::Acquire);
        if before % 2 == 0 {
            let start = entry.start.load(Ordering::Relaxed);
            let end = entry.end.load(Ordering::Relaxed);
            let slot_size = entry.slot_size.load(Ordering::Relaxed);
            // Pairs with the writer's release fence: if we read any field a writer stored after
            // making `seq` odd, the recheck below sees that odd (or a later) value.
            fence(Ordering::Acquire);
            if entry.seq.load(Ordering::Relaxed) == before {
                return (end != 0).then_some((start, end, slot_size));
            }
        }
        hint::spin_loop();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::sys;

    #[test]
    fn guard_hits_are_found_until_unregistered() {
        let slot_size = GUARD_SIZE + 4 * sys::page_size();
        let len = 3 * slot_size;
        // A real reservation, so no other test's chunk can overlap the addresses we probe.
        let start = sys::map_stack_memory(len).unwrap();
        let usable = Some(slot_size - GUARD_SIZE);

        let registration = register(start, len, slot_size).expect("registry has room");
        assert_eq!(guard_hit(start), usable);
        assert_eq!(guard_hit(start + GUARD_SIZE - 1), usable);
        assert_eq!(guard_hit(start + GUARD_SIZE), None);
        assert_eq!(guard_hit(start + slot_size - 1), None);
        assert_eq!(guard_hit(start + 2 * slot_size + 8), usable);
        assert_eq!(guard_hit(start + len - 1), None);

        unregister(registration);
        assert_eq!(guard_hit(start), None);
        assert_eq!(guard_hit(start + 2 * slot_size + 8), None);
        // SAFETY: our own reservation, never handed to anyone.
        unsafe { sys::unmap(start, len) }.unwrap();
    }

    #[test]
    fn freed_entries_are_reused() {
        let len = GUARD_SIZE * 2;
        let start = sys::map_stack_memory(len).unwrap();
        // More cycles than the table has entries: each must find a free one.
        for _ in 0..CAPACITY * 2 {
            unregister(register(start, len, len).expect("a freed entry is reused"));
        }
        // SAFETY: our own reservation, never handed to anyone.
        unsafe { sys::unmap(start, len) }.unwrap();
    }
}
