//! `parallel_map`: a structured map over scopes.

use super::scope::scope_as;
use std::sync::Mutex;

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
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every item was mapped")
        })
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
