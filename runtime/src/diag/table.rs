//! The table of a runtime's fibers, for dumps and deadlock checks: sharded by fiber id, so
//! spawns on different workers (consecutive ids) take different shard locks, each on cache
//! lines of its own so that two workers inserting into neighbouring shards do not contend.

use crate::fiber::Core;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

const SHARDS: usize = 32;

type Shard = HashMap<u64, Weak<Core>, BuildHasherDefault<IdHasher>>;

/// See the module docs. Holds weak references: a fiber is in the table while its `Core` lives.
pub(crate) struct FiberTable {
    shards: Box<[Padded]>,
}

/// A shard alone on its cache lines (two of them: adjacent-line prefetching pairs lines).
#[derive(Default)]
#[repr(align(128))]
struct Padded(Mutex<Shard>);

impl FiberTable {
    pub(crate) fn new() -> FiberTable {
        FiberTable {
            shards: (0..SHARDS).map(|_| Padded::default()).collect(),
        }
    }

    fn shard(&self, id: u64) -> MutexGuard<'_, Shard> {
        // Only map operations run under the lock: a poisoned one holds a consistent map.
        self.shards[id as usize % SHARDS]
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn insert(&self, core: &Arc<Core>) {
        self.shard(core.id.as_u64())
            .insert(core.id.as_u64(), Arc::downgrade(core));
    }

    pub(crate) fn remove(&self, id: u64) {
        self.shard(id).remove(&id);
    }

    pub(crate) fn get(&self, id: u64) -> Option<Arc<Core>> {
        self.shard(id).get(&id).and_then(Weak::upgrade)
    }

    /// Every fiber whose `Core` is alive, by id; one shard locked at a time.
    pub(crate) fn snapshot(&self) -> Vec<Arc<Core>> {
        let mut fibers: Vec<Arc<Core>> = (0..SHARDS)
            .flat_map(|index| {
                let shard = self.shard(index as u64);
                shard.values().filter_map(Weak::upgrade).collect::<Vec<_>>()
            })
            .collect();
        fibers.sort_by_key(|core| core.id);
        fibers
    }
}

/// Fiber ids are distinct small integers: spread them with one multiplication. (Also the
/// hasher of the resources a pass of cycle checks marks: addresses and fiber ids.)
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8 | u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_shards_share_no_cache_line() {
        let table = FiberTable::new();
        let first = std::ptr::from_ref(&table.shards[0].0) as usize;
        let second = std::ptr::from_ref(&table.shards[1].0) as usize;
        assert!(
            second - first >= 128,
            "shards {} bytes apart",
            second - first
        );
        assert_eq!(first % 128, 0, "a shard starts a pair of lines");
    }
}
