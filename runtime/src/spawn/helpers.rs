//! `parallel_map` and `parallel_chunks`: structured maps over scopes.

use super::scope::scope_as;
use std::sync::Mutex;

/// Chunks per worker in [`parallel_chunks`]: enough for idle workers to steal when chunks take
/// unequal time, few enough that a chunk's fiber costs little beside its items.
const CHUNKS_PER_WORKER: usize = 4;

/// Maps `f` over `items`, one fiber per item, and returns the results in input order. The first
/// panic cancels the other fibers and is re-raised once all have ended.
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

/// [`parallel_map`] with at most `limit` items in flight at once.
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
                    let Some((index, item)) = lock(next).next() else {
                        break;
                    };
                    *lock(&slots[index]) = Some(f(item));
                });
            }
        });
    }
    filled(slots).collect()
}

/// Maps `f` over `items` in a few fibers, each mapping one contiguous chunk of the items in
/// turn (about four chunks per worker), and returns the results in input order: for cheap,
/// CPU-bound `f`, where a fiber per item ([`parallel_map`]) costs more than the item. An item
/// that blocks parks its chunk's fiber and holds up the rest of that chunk only; the other
/// chunks go on. The first panic cancels the other fibers and is re-raised once all have
/// ended.
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
    I::Item: Send,
    F: Fn(I::Item) -> T + Sync,
    T: Send,
{
    const CALLED: &str = "fibra::parallel_chunks";
    let workers = super::current_handle(CALLED).workers();
    let chunks = split(items.into_iter(), workers * CHUNKS_PER_WORKER);
    let len = chunks.iter().map(Vec::len).sum();
    let slots: Vec<Mutex<Option<Vec<T>>>> = chunks.iter().map(|_| Mutex::new(None)).collect();
    let f = &f;
    scope_as(CALLED, |s| {
        for (chunk, slot) in chunks.into_iter().zip(&slots) {
            s.spawn(move || *lock(slot) = Some(chunk.into_iter().map(f).collect()));
        }
    });
    let mut results = Vec::with_capacity(len);
    for chunk in filled(slots) {
        results.extend(chunk);
    }
    results
}

/// `items` in `chunks` contiguous chunks of (nearly) equal length, in order; taken from the
/// iterator directly when its length is known, collected first otherwise.
fn split<I: Iterator>(items: I, chunks: usize) -> Vec<Vec<I::Item>> {
    match items.size_hint() {
        (low, Some(high)) if low == high => split_known(items, low, chunks),
        _ => {
            let items: Vec<I::Item> = items.collect();
            let len = items.len();
            split_known(items.into_iter(), len, chunks)
        }
    }
}

fn split_known<I: Iterator>(mut items: I, len: usize, chunks: usize) -> Vec<Vec<I::Item>> {
    let chunk_len = len.div_ceil(chunks).max(1);
    let mut split = Vec::with_capacity(len.div_ceil(chunk_len));
    loop {
        let chunk: Vec<I::Item> = items.by_ref().take(chunk_len).collect();
        if chunk.is_empty() {
            return split;
        }
        split.push(chunk);
    }
}

/// The values of slots that every fiber of a finished scope has filled, in order.
fn filled<T>(slots: Vec<Mutex<Option<T>>>) -> impl Iterator<Item = T> {
    slots.into_iter().map(|slot| {
        slot.into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .expect("every item was mapped")
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
