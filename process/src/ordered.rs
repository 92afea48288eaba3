//! A keyed collection that keeps insertion order: links and monitors are signalled in the
//! order they were made, and a process with many of them must drop one without a scan.

use std::collections::HashMap;

/// Values by `u64` key, iterated in insertion order; insert, remove and lookup in O(1)
/// (amortized: removed slots are compacted away once they are half the slots).
pub(crate) struct Ordered<T> {
    slots: Vec<Option<(u64, T)>>,
    index: HashMap<u64, usize>,
}

impl<T> Default for Ordered<T> {
    fn default() -> Ordered<T> {
        Ordered {
            slots: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<T> Ordered<T> {
    /// Adds `value` under `key` unless the key is there; whether it was added.
    pub(crate) fn insert(&mut self, key: u64, value: T) -> bool {
        if self.index.contains_key(&key) {
            return false;
        }
        self.index.insert(key, self.slots.len());
        self.slots.push(Some((key, value)));
        true
    }

    pub(crate) fn remove(&mut self, key: u64) -> Option<T> {
        let at = self.index.remove(&key)?;
        let (_, value) = self.slots[at].take().expect("an indexed slot is full");
        if self.index.len() * 2 < self.slots.len() {
            self.compact();
        }
        Some(value)
    }

    /// Everything, in insertion order, leaving this empty.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = T> {
        self.index.clear();
        std::mem::take(&mut self.slots)
            .into_iter()
            .flatten()
            .map(|(_, value)| value)
    }

    fn compact(&mut self) {
        self.slots.retain(Option::is_some);
        for (at, slot) in self.slots.iter().enumerate() {
            let (key, _) = slot.as_ref().expect("retained slots are full");
            self.index.insert(*key, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ordered;

    #[test]
    fn keeps_insertion_order_across_removals_and_compaction() {
        let mut set = Ordered::default();
        for key in 0..10u64 {
            assert!(set.insert(key, key * 10));
        }
        assert!(!set.insert(3, 0), "a key is there once");
        for key in [0, 2, 4, 6, 8, 9] {
            assert_eq!(set.remove(key), Some(key * 10));
        }
        assert_eq!(set.remove(9), None);
        assert!(set.insert(42, 420));
        assert_eq!(set.take().collect::<Vec<_>>(), [10, 30, 50, 70, 420]);
        assert_eq!(set.take().count(), 0);
    }
}
