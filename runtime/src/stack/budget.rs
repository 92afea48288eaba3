//! Process-wide admission of fiber stacks: a spawn that cannot get a stack fails in the spawner
//! with a clear error, instead of an `mmap` or `mprotect` failing later on a worker.
//!
//! The budget counts live tickets plus the warm stacks that `mprotect`-guarded pools keep (each
//! still costs its mappings). Cold stacks cost nothing: their `mprotect` guards are lifted.

use super::error::StackError;
use super::guard::madvise_supported;
use super::layout::GUARD_SIZE;
use std::fs;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Mappings one `mprotect`-guarded stack adds: its guard splits the chunk's mapping in two.
const MAPS_PER_STACK: usize = 2;
/// Mappings always left to the rest of the program (threads, allocator arenas, files).
const MIN_HEADROOM: usize = 1024;
/// The kernel's default `vm.max_map_count`, assumed when `/proc` cannot be read.
const DEFAULT_MAX_MAP_COUNT: usize = 65530;
/// Live stacks allowed when guards cost no mapping: half of the 47-bit user address space at
/// the default 1 MiB stack size. Memory runs out long before; the bound only turns an absurd
/// spawn count into an error rather than an exhausted address space.
const ADDRESS_SPACE_STACKS: usize = (1 << 46) / ((1 << 20) + GUARD_SIZE);

/// How many stacks may be live at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Limit {
    /// Bounded by `vm.max_map_count`.
    Maps {
        /// The kernel's `vm.max_map_count`.
        max_map_count: usize,
        /// Stacks that fit.
        stacks: usize,
    },
    /// Bounded by address space only.
    AddressSpace {
        /// Stacks that fit.
        stacks: usize,
    },
}

impl Limit {
    fn stacks(self) -> usize {
        match self {
            Limit::Maps { stacks, .. } | Limit::AddressSpace { stacks } => stacks,
        }
    }

    fn error(self) -> StackError {
        match self {
            Limit::Maps {
                max_map_count,
                stacks,
            } => StackError::MapCount {
                limit: max_map_count,
                stacks,
            },
            Limit::AddressSpace { stacks } => StackError::AddressSpace { stacks },
        }
    }
}

/// A count of live stacks, checked against a limit on every increment.
pub(super) struct Budget {
    live: AtomicUsize,
}

impl Budget {
    /// A budget with nothing live.
    pub(super) const fn new() -> Budget {
        Budget {
            live: AtomicUsize::new(0),
        }
    }

    /// Counts one more live stack, unless that would exceed `limit`.
    pub(super) fn charge(&self, limit: Limit) -> Result<(), StackError> {
        self.live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |live| {
                (live < limit.stacks()).then_some(live + 1)
            })
            .map(drop)
            .map_err(|_| limit.error())
    }

    /// Counts one live stack fewer.
    pub(super) fn refund(&self) {
        let before = self.live.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(before > 0, "stack budget refunded more than charged");
    }
}

static GLOBAL: Budget = Budget::new();
static MAPPING_GUARDS: AtomicBool = AtomicBool::new(false);
static MAP_LIMIT: OnceLock<Limit> = OnceLock::new();

/// Records that some pool guards with `mprotect`, so the map count bounds admission from now on.
pub(super) fn note_mapping_guards() {
    MAPPING_GUARDS.store(true, Ordering::Relaxed);
}

/// Charges one stack to the process-wide budget.
pub(super) fn charge() -> Result<(), StackError> {
    GLOBAL.charge(limit())
}

/// Refunds one stack charged with [`charge`].
pub(super) fn refund() {
    GLOBAL.refund();
}

fn limit() -> Limit {
    if MAPPING_GUARDS.load(Ordering::Relaxed) || !madvise_supported() {
        *MAP_LIMIT.get_or_init(read_map_limit)
    } else {
        Limit::AddressSpace {
            stacks: ADDRESS_SPACE_STACKS,
        }
    }
}

fn read_map_limit() -> Limit {
    let max_map_count = fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_MAP_COUNT);
    let mapped = fs::read("/proc/self/maps")
        .map(|maps| maps.iter().filter(|&&byte| byte == b'\n').count())
        .unwrap_or(0);
    Limit::Maps {
        max_map_count,
        stacks: map_stacks(max_map_count, mapped),
    }
}

/// Stacks that fit under `max_map_count` when `mapped` mappings exist already, keeping a
/// sixteenth of the limit (at least [`MIN_HEADROOM`]) for everything else.
fn map_stacks(max_map_count: usize, mapped: usize) -> usize {
    let headroom = (max_map_count / 16).max(MIN_HEADROOM);
    max_map_count
        .saturating_sub(mapped)
        .saturating_sub(headroom)
        / MAPS_PER_STACK
}

/// Admits one more fiber stack, process-wide. The spawner calls this before the fiber exists,
/// so an impossible spawn fails there instead of on a worker. Dropping the ticket (when the fiber
/// has finished) releases it.
pub(crate) fn admit() -> Result<StackTicket, StackError> {
    charge().map(|()| StackTicket(()))
}

/// One admitted fiber stack; dropping it gives the admission back.
#[derive(Debug)]
pub(crate) struct StackTicket(());

impl Drop for StackTicket {
    fn drop(&mut self) {
        refund();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_map_limit_with_advice() {
        let budget = Budget::new();
        let limit = Limit::Maps {
            max_map_count: 65530,
            stacks: 2,
        };
        budget.charge(limit).unwrap();
        budget.charge(limit).unwrap();
        let error = budget.charge(limit).unwrap_err();
        assert!(
            matches!(
                error,
                StackError::MapCount {
                    limit: 65530,
                    stacks: 2
                }
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("vm.max_map_count=65530"), "{message}");
        assert!(
            message.contains("`sysctl -w vm.max_map_count=131060`"),
            "{message}"
        );

        budget.refund();
        budget.charge(limit).unwrap();
        assert!(budget.charge(limit).is_err());
    }

    #[test]
    fn refuses_past_the_address_space_limit() {
        let budget = Budget::new();
        let limit = Limit::AddressSpace { stacks: 1 };
        budget.charge(limit).unwrap();
        assert!(matches!(
            budget.charge(limit),
            Err(StackError::AddressSpace { stacks: 1 })
        ));
    }

    #[test]
    fn map_limit_keeps_headroom() {
        assert_eq!(map_stacks(65530, 30), (65530 - 30 - 65530 / 16) / 2);
        assert_eq!(map_stacks(4000, 100), (4000 - 100 - 1024) / 2);
        assert_eq!(map_stacks(1000, 100), 0);
    }

    #[test]
    fn admission_hands_out_a_send_ticket() {
        fn assert_send<T: Send>(_: &T) {}
        let ticket = admit().expect("one stack is always admitted");
        assert_send(&ticket);
        drop(ticket);
    }
}
