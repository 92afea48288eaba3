//! The table of a runtime's fibers, for dumps and deadlock checks: sharded by fiber id, so
//! spawns on different workers (consecutive ids) take different shard locks, each on cache
//! lines of its own so that two workers inserting into neighbouring shards do not contend.

use crate::fiber::Core;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

const SHARDS: usize = 32;

/// 2^64 divided by the golden ratio: multiplying by it scrambles the bits of small integers.
pub(super) const SCRAMBLE: u64 = 0x9E37_79B9_7F4A_7C15;

type Shard = HashMap<u64, Weak<Core>, BuildHasherDefault<ShardHasher>>;

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

/// Places a shard's fibers in its map in id order: fibers are mostly added and removed in
/// spawn order, so each goes beside the last one added (a cache line recently used) and is
/// removed from beside the last one removed, where scattered places would each miss the cache
/// once the map holds many. The map finds a slot by the hash's low bits and tells keys apart
/// by its top seven: the id's rank within the shard, and scrambled bits on top.
#[derive(Default)]
struct ShardHasher(u64);

impl Hasher for ShardHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _: &[u8]) {
        unreachable!("the table's keys are fiber ids")
    }

    fn write_u64(&mut self, id: u64) {
        const TOP_SEVEN: u64 = 0x7f << 57;
        let rank = id / SHARDS as u64;
        self.0 = (rank & !TOP_SEVEN) | (id.wrapping_mul(SCRAMBLE) & TOP_SEVEN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(id: u64) -> u64 {
        let mut hasher = ShardHasher::default();
        hasher.write_u64(id);
        hasher.finish()
    }

    #[test]
    fn a_shards_ids_hash_to_consecutive_slots_told_apart_by_their_top_bits() {
        let shard = 5;
        let ids: Vec<u64> = (0..64).map(|rank| rank * SHARDS as u64 + shard).collect();
        let slots: Vec<u64> = ids.iter().map(|&id| hash(id) & 0xffff).collect();
        assert_eq!(slots, (0..64).collect::<Vec<_>>());
        let tops: std::collections::HashSet<u64> = ids.iter().map(|&id| hash(id) >> 57).collect();
        assert!(tops.len() > 32, "only {} distinct top bits", tops.len());
    }

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
