//! Structured helpers over scopes: `parallel_map`, `race`.

use super::scope::{cancel_scope_of, run_scope, scope};
use crate::cancel::CancelCause;
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
    parallel_map_limited(items, usize::MAX, f)
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
    assert!(
        limit > 0,
        "fibra::parallel_map_limited() needs a limit of at least 1"
    );
    let items: Vec<I::Item> = items.into_iter().collect();
    let slots: Vec<Mutex<Option<T>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let f = &f;
    if limit >= items.len() {
        scope(|s| {
            for (item, slot) in items.into_iter().zip(&slots) {
                s.spawn(move || *lock(slot) = Some(f(item)));
            }
        });
    } else {
        // `limit` fibers pull the next item until none is left.
        let next = Mutex::new(items.into_iter().enumerate());
        scope(|s| {
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

/// Runs every closure in a fiber of its own; the first to finish wins, the others are cancelled
/// and joined (their destructors have run) before `race` returns the winner's value.
///
/// # Panics
///
/// If `fs` is empty; with a closure's panic.
///
/// ```
/// use std::time::Duration;
///
/// let winner = fibra::run(|| {
///     let slow: Box<dyn FnOnce() -> &'static str + Send> =
///         Box::new(|| { fibra::sleep(Duration::from_secs(3600)); "slow" });
///     let fast: Box<dyn FnOnce() -> &'static str + Send> = Box::new(|| "fast");
///     fibra::race(vec![slow, fast])
/// });
/// assert_eq!(winner, "fast");
/// ```
#[track_caller]
pub fn race<I, F, T>(fs: I) -> T
where
    I: IntoIterator<Item = F>,
    F: FnOnce() -> T + Send,
    T: Send,
{
    let winner = Mutex::new(None);
    // The winner cancels the scope; a body still in `fs` then unwinds, which ends it as well.
    let _ = run_scope(None, |s| {
        let cancel = cancel_scope_of(s);
        let mut any = false;
        for f in fs {
            any = true;
            let (winner, cancel) = (&winner, cancel.clone());
            s.spawn(move || {
                let value = f();
                let mut winner = lock(winner);
                if winner.is_none() {
                    *winner = Some(value);
                    cancel.cancel(CancelCause::Internal);
                }
            });
        }
        assert!(any, "fibra::race() needs at least one closure");
    });
    winner
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .expect("a race ends with a winner")
}
