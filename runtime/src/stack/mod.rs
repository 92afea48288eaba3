//! Fiber stacks: pooled `mmap` reservations with guard regions, a process-wide admission
//! budget, and the signal handler that turns a guard hit into a clear abort.
//!
//! A pool carves each size class out of a few large reservations ("chunks"). Stacks grow down,
//! so every slot puts its guard at the low end:
//!
//! ```text
//! low                                                                      high
//! | guard | usable stack (slot 0) | guard | usable stack (slot 1) | ...       |
//! ```
//!
//! With `MADV_GUARD_INSTALL` (Linux 6.13+) a guard is a page-table marker inside the chunk's one
//! mapping; with the `mprotect` fallback every guard splits the mapping, which is what the
//! map-count budget in [`admit`] accounts for.
//!
//! The kernel work per stack (installing a guard, giving memory back) goes in batches where the
//! kernel takes them (`process_madvise` on the process itself, Linux 6.15+): one system call,
//! and one TLB shootdown across the workers, per few dozen stacks (up to a thousand). Memory
//! of stacks returned past a pool's warm bound goes back only once they have waited through
//! an aging of the pool, or when the worker goes idle (a few returned since the last aging
//! wait for the next): a burst of fibers that comes again soon reuses them as they are.

mod altstack;
mod budget;
mod chunk;
mod class;
mod decimal;
mod error;
mod guard;
mod handler;
mod layout;
mod pool;
mod registry;
mod sys;

#[cfg(test)]
mod child;

pub(crate) use altstack::AltStack;
pub(crate) use budget::{admit, StackTicket};
pub(crate) use decimal::write_decimal;
pub(crate) use error::StackError;
pub(crate) use guard::GuardMode;
pub(crate) use handler::install_overflow_handler;
pub(crate) use pool::{PoolConfig, PoolStats, PooledStack, StackPool};
#[cfg(test)]
pub(crate) use sys::page_size;

/// Checks, when a fiber is spawned, that a stack of `size` usable bytes can exist at all, so an
/// impossible size fails in the spawner rather than when the fiber first runs.
pub(crate) fn check_size(size: usize) -> Result<(), StackError> {
    layout::usable_size(size)
        .map(drop)
        .ok_or(StackError::TooLarge { size })
}
