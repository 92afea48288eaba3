//! A minimal slab: values stored under reusable keys, for the registries that need O(1)
//! insert and remove by key (outside joiners, cancel-scope members).

#[derive(Debug)]
pub(crate) struct Slab<T> {
    entries: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Slab<T> {
        Slab {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    pub(crate) fn insert(&mut self, value: T) -> usize {
        match self.free.pop() {
            Some(key) => {
                self.entries[key] = Some(value);
                key
            }
            None => {
                self.entries.push(Some(value));
                self.entries.len() - 1
            }
        }
    }

    /// Removes the value at `key`, if any (a stale key is ignored).
    pub(crate) fn remove(&mut self, key: usize) -> Option<T> {
        let value = self.entries.get_mut(key).and_then(Option::take);
        if value.is_some() {
            self.free.push(key);
        }
        value
    }

    pub(crate) fn get_mut(&mut self, key: usize) -> Option<&mut T> {
        self.entries.get_mut(key).and_then(Option::as_mut)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::Slab;

    #[test]
    fn keys_are_reused_and_stale_keys_ignored() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        let b = slab.insert("b");
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.insert("c"), a);
        assert_eq!(slab.get_mut(a), Some(&mut "c"));
        assert_eq!(slab.values().count(), 2);
        assert_eq!(slab.remove(b), Some("b"));
        assert_eq!(slab.remove(b), None);
    }
}
