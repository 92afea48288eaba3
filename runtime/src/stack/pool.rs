//! The per-worker stack pool and the stacks it hands out.

use super::budget;
use super::class::SizeClass;
use super::error::StackError;
use super::guard::{Guard, GuardMode};
use super::layout::{self, GUARD_SIZE};
use super::sys::page_size;
use corosensei::stack::{Stack, StackPointer, STACK_ALIGNMENT};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a [`StackPool`] keeps and guards its stacks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolConfig {
    /// Returned stacks kept resident per size class. Beyond that, a returned stack's slot is
    /// kept cold for reuse, and its memory given back to the kernel (`MADV_FREE`, reclaimed
    /// under memory pressure) once it has waited through an aging ([`StackPool::age`]), or
    /// when the pool's worker goes idle ([`StackPool::discard_batches`]).
    pub(crate) max_warm: usize,
    /// How guard regions are made.
    pub(crate) guard: GuardMode,
}

/// A pool's stacks, for metrics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PoolStats {
    /// Returned stacks kept with their memory.
    pub(crate) warm: u64,
    /// Stacks handed out and not given back.
    pub(crate) in_use: u64,
    /// Usable bytes of the warm and the handed-out stacks.
    pub(crate) committed_bytes: u64,
}

/// A per-worker pool of fiber stacks.
///
/// Stacks go back to the pool they came from: a started fiber never leaves its worker.
pub(crate) struct StackPool {
    /// Tells this pool's stacks from other pools', whose slot indices mean nothing here.
    id: usize,
    guard: Guard,
    max_warm: usize,
    classes: Vec<SizeClass>,
    /// The usable size of each of `classes`: a handful, so a linear scan beats hashing.
    usable_of: Vec<usize>,
}

impl StackPool {
    /// An empty pool; it reserves memory only when stacks are taken.
    pub(crate) fn new(config: PoolConfig) -> StackPool {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        assert!(
            GUARD_SIZE % page_size() == 0 && page_size() % STACK_ALIGNMENT == 0,
            "page size {} does not fit the stack layout",
            page_size()
        );
        let guard = Guard::resolve(config.guard);
        if guard.costs_mappings() {
            budget::note_mapping_guards();
        }
        StackPool {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            guard,
            max_warm: config.max_warm,
            classes: Vec::new(),
            usable_of: Vec::new(),
        }
    }

    /// A stack with at least `size` usable bytes (rounded up to whole pages, and to at least
    /// 16 KiB), with a guard region directly below it.
    pub(crate) fn take(&mut self, size: usize) -> Result<PooledStack, StackError> {
        let usable = layout::usable_size(size).ok_or(StackError::TooLarge { size })?;
        let class = match self.usable_of.iter().position(|&u| u == usable) {
            Some(class) => class,
            None => {
                self.classes.push(SizeClass::new(usable));
                self.usable_of.push(usable);
                self.classes.len() - 1
            }
        };
        let slot = self.classes[class].take(self.guard)?;
        let (limit, base) = self.classes[class].bounds(slot);
        Ok(PooledStack {
            base: StackPointer::new(base).expect("stack top is not null"),
            limit: StackPointer::new(limit).expect("mapped memory is not at address 0"),
            pool: self.id,
            class,
            chunk: slot.chunk,
        })
    }

    /// What the pool holds now: a pass over its few size classes.
    pub(crate) fn stats(&self) -> PoolStats {
        self.classes
            .iter()
            .fold(PoolStats::default(), |stats, class| {
                let (warm, out, usable) = class.counts();
                PoolStats {
                    warm: stats.warm + warm as u64,
                    in_use: stats.in_use + out as u64,
                    committed_bytes: stats.committed_bytes + ((warm + out) * usable) as u64,
                }
            })
    }

    /// Takes back a stack whose coroutine has finished (from corosensei's
    /// `Coroutine::into_stack`).
    ///
    /// # Panics
    ///
    /// If `stack` came from another pool.
    pub(crate) fn give(&mut self, stack: PooledStack) {
        assert_eq!(
            stack.pool, self.id,
            "stack given back to a pool it is not from"
        );
        let class = &mut self.classes[stack.class];
        let slot = class.slot_at(stack.chunk, stack.limit.get());
        class.give(slot, self.guard, self.max_warm);
    }

    /// Gives back the memory of the cold stacks that were already waiting at the last call,
    /// and marks those waiting now to go at the next. Called at a steady pace, it returns
    /// memory a burst of fibers no longer uses within two periods, in one system call per
    /// period, while a burst that comes again within one reuses it.
    pub(crate) fn age(&mut self) {
        self.classes.iter_mut().for_each(SizeClass::age);
    }

    /// Gives back the memory of the cold stacks that still have it, in the size classes
    /// where a batch of them waits or some already waited through an aging (a few returned
    /// since the last aging wait for the next). Whether any memory was given back.
    pub(crate) fn discard_batches(&mut self) -> bool {
        self.classes
            .iter_mut()
            .fold(false, |discarded, class| class.discard_batch() | discarded)
    }
}

impl Drop for StackPool {
    fn drop(&mut self) {
        for class in self.classes.drain(..) {
            class.release(self.guard);
        }
    }
}

/// A stack lent out by a [`StackPool`]: `[limit, limit + guard)` is the guard region,
/// `[limit + guard, base)` the usable stack.
///
/// It is only addresses: dropping it unmaps nothing (the slot then stays out of the pool for
/// good, and its chunk is never unmapped).
#[derive(Debug)]
pub(crate) struct PooledStack {
    base: StackPointer,
    limit: StackPointer,
    pool: usize,
    class: usize,
    chunk: usize,
}

impl PooledStack {
    /// Bytes available to the fiber, excluding the guard.
    #[cfg(test)]
    pub(crate) fn usable_size(&self) -> usize {
        self.base.get() - self.limit.get() - GUARD_SIZE
    }
}

/// corosensei runs coroutines directly on pooled stacks.
///
/// # Safety
///
/// Every `PooledStack` meets the trait's contract: a guard below, at least `MIN_STACK_SIZE`
/// usable bytes, aligned bounds, and memory that stays valid while the stack exists.
// SAFETY: `[limit, limit + GUARD_SIZE)` is a guard region installed before the stack was handed
// out, and above it lie at least `MIN_USABLE` (≥ `MIN_STACK_SIZE`) usable bytes; both addresses
// are page aligned, hence `STACK_ALIGNMENT` aligned. The memory stays mapped and exclusively
// this stack's while the `PooledStack` exists: the pool hands each slot to one `PooledStack` at
// a time, never touches a slot that is out, and never unmaps a chunk with a slot out.
unsafe impl Stack for PooledStack {
    fn base(&self) -> StackPointer {
        self.base
    }

    fn limit(&self) -> StackPointer {
        self.limit
    }
}

#[cfg(test)]
mod tests;
