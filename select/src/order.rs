//! The order a fair select tries its arms in: a fresh uniformly random permutation per call
//! (Fisher-Yates), from a fast per-thread — so per-worker — generator.

#[cfg(not(loom))]
pub(crate) use rng::shuffle;

/// Under loom the order is left as it is: a model must be deterministic (the models check the
/// winner's claim, not the order).
#[cfg(loom)]
pub(crate) fn shuffle<T>(_items: &mut [T]) {}

#[cfg(not(loom))]
mod rng {
    use std::cell::Cell;
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};

    thread_local! {
        /// xorshift64* state; never zero.
        static STATE: Cell<u64> = Cell::new(seed());
    }

    /// A random non-zero seed: std's per-`RandomState` random keys, hashed.
    fn seed() -> u64 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_usize(&STATE as *const _ as usize);
        hasher.finish() | 1
    }

    /// The next 64 random bits (xorshift64*).
    #[inline]
    fn next() -> u64 {
        STATE.with(|state| {
            let mut x = state.get();
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            state.set(x);
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        })
    }

    /// A uniform index below `n` (`n > 0`), by multiply-shift (bias below 2^-32 for any arm
    /// count a select has).
    #[inline]
    fn below(n: usize) -> usize {
        ((u128::from(next()) * n as u128) >> 64) as usize
    }

    /// Shuffles `items` into a uniformly random order (Fisher-Yates). Inlined: it runs on
    /// every select, and a larger engine (the wait path it inlines) would otherwise leave it
    /// behind a call.
    #[inline]
    pub(crate) fn shuffle<T>(items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, below(i + 1));
        }
    }
}

/// Arm indices, inline up to a typical arm count.
pub(crate) struct Order {
    inline: [usize; INLINE],
    heap: Vec<usize>,
    len: usize,
}

const INLINE: usize = 32;

impl Order {
    pub(crate) fn new() -> Self {
        Order {
            inline: [0; INLINE],
            heap: Vec::new(),
            len: 0,
        }
    }

    /// Refills with the indices for which `keep` is true, in ascending order.
    pub(crate) fn fill(&mut self, n: usize, keep: impl Fn(usize) -> bool) {
        self.len = 0;
        self.heap.clear();
        for i in (0..n).filter(|&i| keep(i)) {
            if self.len < INLINE {
                self.inline[self.len] = i;
            } else {
                if self.heap.is_empty() {
                    self.heap.extend_from_slice(&self.inline);
                }
                self.heap.push(i);
            }
            self.len += 1;
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [usize] {
        if self.len <= INLINE {
            &mut self.inline[..self.len]
        } else {
            &mut self.heap[..]
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn shuffle_is_a_permutation_and_covers_every_position() {
        let mut first_seen = [0u32; 5];
        for _ in 0..10_000 {
            let mut items = [0, 1, 2, 3, 4];
            shuffle(&mut items);
            let mut sorted = items;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4]);
            first_seen[items[0]] += 1;
        }
        // Each element leads 2000 times in expectation (sd 40): 1500 is 12 sd away.
        assert!(first_seen.iter().all(|&n| n > 1500), "{first_seen:?}");
    }

    #[test]
    fn order_spills_to_the_heap() {
        let mut order = Order::new();
        order.fill(100, |i| i % 2 == 0);
        assert_eq!(order.as_mut_slice().len(), 50);
        assert_eq!(order.as_mut_slice()[49], 98);
        order.fill(3, |_| true);
        assert_eq!(order.as_mut_slice(), [0, 1, 2]);
    }
}
