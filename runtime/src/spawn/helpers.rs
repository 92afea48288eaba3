//! `parallel_map` and `parallel_chunks`: structured maps over scopes.

use super::scope::scope_as;
use super::turns::Turns;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::Mutex;

/// Fibers per worker in [`parallel_chunks`]: more than one, so that an item that blocks leaves
/// others running on its worker, few enough that the fibers cost little beside the items.
const FIBERS_PER_WORKER: usize = 4;
/// Blocks per fiber, on average, in [`parallel_chunks`]: enough that fibers that start late
/// (on a worker slow to wake) or get slow items take fewer, and the others the rest; few
/// enough that taking a block (a turn at the shared iterator, whose state then moves between
/// the workers) costs little beside mapping it.
const BLOCKS_PER_FIBER: usize = 16;
/// The most bytes of items a block holds in [`parallel_chunks`]: a fiber buffers its block.
const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// Maps `f` over `items`, one fiber per item, and returns the results in input order. The first
/// panic cancels the other fibers and is re-raised once all have ended.
///
/// Every item gets its own fiber, so every item that blocks (on I/O, a lock, a sleep) waits
/// concurrently with all the others. For cheap, CPU-bound `f` a fiber per item costs far more
/// than the item: use [`parallel_chunks`], which maps the items in blocks over a few fibers
/// (a million trivial items: hundreds of times faster), or [`parallel_map_limited`] to bound
/// the fibers in flight.
///
/// ```
/// let squares = fibra::run(|| fibra::parallel_map(0..10u64, |x| x * x));
/// assert_eq!(squares, [0, 1, 4, 9, 16, 25, 36, 49, 64, 81]);
/// ```
#[track_caller]
pub fn parallel_map<I, F, T>(items: I, f: F) -> Vec<T>
where
    I: IntoIterator,
    I::Item: Send,
    F: Fn(I::Item) -> T + Sync,
    T: Send,
{
    map_limited("fibra::parallel_map", items, usize::MAX, f)
}

/// [`parallel_map`] with at most `limit` items in flight at once: `limit` fibers take the items
/// one after another. The first panic cancels the other fibers (each stops before its next
/// item, or at a cancellation point of one) and is re-raised once all have ended.
///
/// # Panics
///
/// If `limit` is zero; and as `parallel_map`.
///
/// ```
/// let lengths = fibra::run(|| {
///     fibra::parallel_map_limited(["a", "bb", "ccc"], 2, |s| s.len())
/// });
/// assert_eq!(lengths, [1, 2, 3]);
/// ```
#[track_caller]
pub fn parallel_map_limited<I, F, T>(items: I, limit: usize, f: F) -> Vec<T>
where
    I: IntoIterator,
    I::Item: Send,
    F: Fn(I::Item) -> T + Sync,
    T: Send,
{
    map_limited("fibra::parallel_map_limited", items, limit, f)
}

/// `parallel_map_limited`, for a helper named `called` in its misuse panics.
#[track_caller]
fn map_limited<I, F, T>(called: &'static str, items: I, limit: usize, f: F) -> Vec<T>
where
    I: IntoIterator,
    I::Item: Send,
    F: Fn(I::Item) -> T + Sync,
    T: Send,
{
    assert!(limit > 0, "{called}() needs a limit of at least 1");
    let items: Vec<I::Item> = items.into_iter().collect();
    let slots: Vec<Mutex<Option<T>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let f = &f;
    if limit >= items.len() {
        scope_as(called, |s| {
            for (item, slot) in items.into_iter().zip(&slots) {
                s.spawn(move || *lock(slot) = Some(f(item)));
            }
        });
    } else {
        // `limit` fibers pull the next item until none is left.
        let next = Mutex::new(items.into_iter().enumerate());
        scope_as(called, |s| {
            for _ in 0..limit {
                let (next, slots) = (&next, &slots);
                s.spawn(move || loop {
                    // A fiber that a panic (or the caller's scope) cancelled takes no more
                    // items, whether or not `f` has a cancellation point.
                    crate::cancel::check_current();
                    let Some((index, item)) = lock(next).next() else {
                        break;
                    };
                    *lock(&slots[index]) = Some(f(item));
                });
            }
        });
    }
    filled(called, slots)
}

/// Maps `f` over `items` in a few fibers (four per worker) that take the items in blocks, in
/// turn, and returns the results in input order: for cheap, CPU-bound `f`, where a fiber per
/// item ([`parallel_map`]) costs more than the item. Each result is written straight into its
/// place in the returned vector.
///
/// The iterator is shared by the fibers (hence `Send`): each takes the next block of items
/// from it, maps them, and comes back for another, so a fiber that starts late or gets slow
/// items takes fewer blocks. A block is about a sixteenth of a fiber's share of the items, at
/// most 64 KiB of them. An item that blocks parks its fiber and holds up the rest of its block
/// only; the other fibers go on with the other blocks. An iterator whose length is not known
/// exactly (see [`Iterator::size_hint`]) is collected first.
///
/// The first panic cancels the other fibers (each stops before its next block, or at a
/// cancellation point of an item) and is re-raised once all have ended; the results made
/// until then are dropped.
///
/// ```
/// let sums = fibra::run(|| fibra::parallel_chunks(0..1000u64, |x| x % 7));
/// assert_eq!(sums.len(), 1000);
/// assert_eq!(sums[10], 3);
/// assert_eq!(sums.iter().sum::<u64>(), (0..1000u64).map(|x| x % 7).sum());
/// ```
#[track_caller]
pub fn parallel_chunks<I, F, T>(items: I, f: F) -> Vec<T>
where
    I: IntoIterator,
    I::IntoIter: Send,
    I::Item: Send,
    F: Fn(I::Item) -> T + Sync,
    T: Send,
{
    const CALLED: &str = "fibra::parallel_chunks";
    let workers = super::current_handle(CALLED).workers();
    let items = items.into_iter();
    match items.size_hint() {
        (low, Some(high)) if low == high => map_blocks(CALLED, items, low, workers, &f),
        _ => {
            let items: Vec<I::Item> = items.collect();
            let len = items.len();
            map_blocks(CALLED, items.into_iter(), len, workers, &f)
        }
    }
}

/// `parallel_chunks` over `items`, whose length `len` is expected (an iterator that yields
/// more has the rest mapped by the caller once the fibers are done).
#[track_caller]
fn map_blocks<It, F, T>(
    called: &'static str,
    items: It,
    len: usize,
    workers: usize,
    f: &F,
) -> Vec<T>
where
    It: Iterator + Send,
    It::Item: Send,
    F: Fn(It::Item) -> T + Sync,
    T: Send,
{
    let fibers = workers.max(1) * FIBERS_PER_WORKER;
    let max_block = (MAX_BLOCK_BYTES / std::mem::size_of::<It::Item>().max(1)).max(1);
    let block = len.div_ceil(fibers * BLOCKS_PER_FIBER).clamp(1, max_block);
    let fibers = fibers.min(len.div_ceil(block));
    let source = Turns::new(Source {
        items,
        next: 0,
        len,
    });
    let mut results = Vec::with_capacity(len);
    let slots = Slots::new(&mut results);
    scope_as(called, |s| {
        for _ in 0..fibers {
            let (source, slots) = (&source, &slots);
            s.spawn(move || map_taken(source, slots, block, f));
        }
    });
    let source = source.into_inner();
    if !slots.keep_all(source.next) {
        unmapped(called);
    }
    // SAFETY: `keep_all` found every slot below `source.next` (the items taken, at most the
    // capacity `len`) written, and gave up dropping them: they are the vector's now.
    unsafe { results.set_len(source.next) };
    results.extend(source.items.map(f));
    results
}

/// The items of a `parallel_chunks`, taken block by block.
struct Source<It> {
    items: It,
    /// The index of the next item.
    next: usize,
    /// How many items the fibers take at most: the capacity of the results.
    len: usize,
}

/// The loop of one `parallel_chunks` fiber: take a block of items, map it into its slots,
/// until no item is left.
fn map_taken<It, F, T>(source: &Turns<Source<It>>, slots: &Slots<'_, T>, block: usize, f: &F)
where
    It: Iterator,
    F: Fn(It::Item) -> T,
{
    let mut buffer = Vec::with_capacity(block);
    loop {
        crate::cancel::check_current();
        // In turns rather than under a lock: the iterator's `next` may park the fiber.
        let start = source.with(|source| {
            let start = source.next;
            let wanted = block.min(source.len - start);
            buffer.extend(source.items.by_ref().take(wanted));
            source.next += buffer.len();
            start
        });
        if buffer.is_empty() {
            return;
        }
        // SAFETY: `start..start + buffer.len()` was just taken from `source`, which hands out
        // every index below its `len` (the capacity of the slots) once.
        unsafe { slots.fill(start, buffer.drain(..), f) };
    }
}

/// The spare capacity of a results vector, filled by several fibers in disjoint blocks.
struct Slots<'a, T> {
    base: *mut T,
    /// The ranges written so far, recorded by each block as it ends (or unwinds).
    written: Mutex<Vec<Range<usize>>>,
    _results: PhantomData<&'a mut Vec<T>>,
}

// SAFETY: fibers share `Slots` to move results of type `T: Send` into disjoint ranges (see
// `fill`); the record of the ranges is behind a lock.
unsafe impl<T: Send> Sync for Slots<'_, T> {}

impl<'a, T> Slots<'a, T> {
    /// The spare capacity of `results`, which must be empty.
    fn new(results: &'a mut Vec<T>) -> Slots<'a, T> {
        debug_assert!(results.is_empty());
        Slots {
            base: results.as_mut_ptr(),
            written: Mutex::new(Vec::new()),
            _results: PhantomData,
        }
    }

    /// Writes the results of `f` over `items` from slot `start` on, for at most `items.len()`
    /// of them.
    ///
    /// # Safety
    ///
    /// The `items.len()` slots from `start` are within the capacity, and no other block writes
    /// any of them.
    unsafe fn fill<I>(
        &self,
        start: usize,
        items: impl ExactSizeIterator<Item = I>,
        f: impl Fn(I) -> T,
    ) {
        // SAFETY: the caller's range, in the capacity and written by no other block; as a
        // `&mut` slice the compiler knows the items are not read from it, and vectorizes.
        let slots = unsafe {
            std::slice::from_raw_parts_mut(
                self.base.add(start).cast::<MaybeUninit<T>>(),
                items.len(),
            )
        };
        let mut block = Written {
            slots: self,
            range: start..start,
        };
        for (slot, item) in slots.iter_mut().zip(items) {
            slot.write(f(item));
            block.range.end += 1;
        }
    }

    /// Whether the slots below `taken` are all written; if so, they are the caller's, and no
    /// longer dropped with `self`.
    fn keep_all(self, taken: usize) -> bool {
        let mut written = lock(&self.written);
        // The ranges are disjoint and below `taken`: they cover it when their lengths add up.
        if written.iter().map(ExactSizeIterator::len).sum::<usize>() != taken {
            return false;
        }
        written.clear();
        true
    }
}

impl<T> Drop for Slots<'_, T> {
    fn drop(&mut self) {
        let written = self.written.get_mut().unwrap_or_else(|p| p.into_inner());
        for range in written.drain(..) {
            // SAFETY: `range` was written by one block and belongs to no vector; draining it
            // from the record drops it once.
            unsafe {
                std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                    self.base.add(range.start),
                    range.len(),
                ));
            }
        }
    }
}

/// The slots one block has written: recorded when the block ends, by unwinding too.
struct Written<'s, 'a, T> {
    slots: &'s Slots<'a, T>,
    range: Range<usize>,
}

impl<T> Drop for Written<'_, '_, T> {
    fn drop(&mut self) {
        if !self.range.is_empty() {
            lock(&self.slots.written).push(self.range.clone());
        }
    }
}

/// The values of the slots of a finished scope, in order; unwinds as [`unmapped`] if one is
/// empty.
fn filled<T>(called: &str, slots: Vec<Mutex<Option<T>>>) -> Vec<T> {
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| unmapped(called))
        })
        .collect()
}

/// An item has no result though the map's scope ended without a panic (which it would have
/// re-raised): an item's fiber was cancelled, so the caller's scope is, and the caller unwinds
/// with that cancellation (unless it is shielded) rather than with a panic of its own.
fn unmapped(called: &str) -> ! {
    crate::cancel::check_current_scope();
    panic!("{called}: an item's fiber was cancelled, so the map has no result for it");
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
