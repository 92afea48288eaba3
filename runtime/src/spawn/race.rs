//! `race`, `race_with` and `race!`: the first closure to finish wins, the others are cancelled.

use super::scope::{cancel_scope_of, run_scope, Scope};
use crate::cancel::{CancelCause, CancelScope};
use std::cell::Cell;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// Runs every closure in a fiber of its own; the first to finish wins, the others are cancelled
/// and joined (their destructors have run) before `race` returns the winner's value.
///
/// Every closure here has one type (a `Vec` of boxed closures, or the items of an iterator);
/// to race closures of different types without boxing them, use [`race!`](crate::race!).
///
/// # Panics
///
/// If `fs` is empty; outside a fiber; with a closure's panic.
///
/// ```
/// let winner = fibra::run(|| {
///     let delays = [3600, 0, 3600];
///     fibra::race(delays.iter().map(|&secs| {
///         move || {
///             fibra::sleep(std::time::Duration::from_secs(secs));
///             secs
///         }
///     }))
/// });
/// assert_eq!(winner, 0);
/// ```
#[track_caller]
pub fn race<I, F, T>(fs: I) -> T
where
    I: IntoIterator<Item = F>,
    F: FnOnce() -> T + Send,
    T: Send,
{
    race_as("fibra::race", |racers| {
        for f in fs {
            racers.enter(f);
        }
    })
}

/// The general form of [`race`]: `body` enters each racer with [`Racers::enter`], and the
/// racers may be closures of different types (all returning `T`). The first racer to finish
/// wins; the others are cancelled and joined before `race_with` returns the winner's value.
/// Racers run as soon as they are entered, and may borrow from outside the race.
///
/// # Panics
///
/// If `body` enters no racer; outside a fiber; with a racer's or `body`'s panic (a `body` that
/// panics ends the race: the racers it entered are cancelled and joined first).
///
/// ```
/// use std::time::Duration;
///
/// let name = String::from("cache");
/// let winner = fibra::run(|| {
///     fibra::race_with(|racers| {
///         racers.enter(|| name.clone()); // borrows `name`
///         racers.enter(|| {
///             fibra::sleep(Duration::from_secs(3600));
///             String::from("origin")
///         });
///     })
/// });
/// assert_eq!(winner, "cache");
/// ```
#[track_caller]
pub fn race_with<'env, B, T>(body: B) -> T
where
    B: for<'scope> FnOnce(&Racers<'scope, 'env, T>),
    T: Send + 'env,
{
    race_as("fibra::race_with", body)
}

/// Races closures of different types without boxing them: `race!(a, b, …)` runs each closure
/// in a fiber of its own and evaluates to the value of the first to finish; the others are
/// cancelled and joined (their destructors have run) first. Every closure returns the same
/// type; for different results, return an enum from each. The closures may borrow from the
/// caller, and [`race`] is the form for a list of closures of one type.
///
/// # Panics
///
/// Outside a fiber; with a closure's panic.
///
/// ```
/// use std::time::Duration;
///
/// enum First {
///     Reply(u32),
///     TimedOut,
/// }
///
/// let outcome = fibra::run(|| {
///     fibra::race!(
///         || First::Reply(7),
///         || {
///             fibra::sleep(Duration::from_secs(3600));
///             First::TimedOut
///         },
///     )
/// });
/// assert!(matches!(outcome, First::Reply(7)));
/// ```
#[macro_export]
macro_rules! race {
    ($($racer:expr),+ $(,)?) => {
        $crate::__race_macro(|__fibra_racers| {
            $( __fibra_racers.enter($racer); )+
        })
    };
}

/// What [`race!`](crate::race!) expands to: [`race_with`], named `race!` in its panics.
#[doc(hidden)]
#[track_caller]
pub fn __race_macro<'env, B, T>(body: B) -> T
where
    B: for<'scope> FnOnce(&Racers<'scope, 'env, T>),
    T: Send + 'env,
{
    race_as("fibra::race!", body)
}

/// The racers of a [`race_with`]: each closure entered runs in a fiber of its own.
pub struct Racers<'scope, 'env, T: 'scope> {
    scope: &'scope Scope<'scope, 'env>,
    cancel: Arc<CancelScope>,
    winner: Arc<Mutex<Option<T>>>,
    entered: Cell<bool>,
}

impl<'scope, T: Send> Racers<'scope, '_, T> {
    /// Starts `f` as a racer; its value wins if it is the first to finish.
    ///
    /// # Panics
    ///
    /// If no stack can be had for its fiber.
    ///
    /// ```
    /// let fastest = fibra::run(|| {
    ///     fibra::race_with(|racers| {
    ///         for n in 1..=3u64 {
    ///             racers.enter(move || {
    ///                 fibra::sleep(std::time::Duration::from_secs(3600 * (n - 1)));
    ///                 n
    ///             });
    ///         }
    ///     })
    /// });
    /// assert_eq!(fastest, 1);
    /// ```
    #[track_caller]
    pub fn enter<F>(&self, f: F)
    where
        F: FnOnce() -> T + Send + 'scope,
    {
        self.entered.set(true);
        let (winner, cancel) = (self.winner.clone(), self.cancel.clone());
        self.scope.spawn(move || {
            let value = f();
            let mut winner = winner.lock().unwrap_or_else(|p| p.into_inner());
            if winner.is_none() {
                *winner = Some(value);
                cancel.cancel(CancelCause::Internal);
            }
        });
    }
}

impl<T> fmt::Debug for Racers<'_, '_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Racers").finish_non_exhaustive()
    }
}

/// A race; `called` names the public function in the panic of a call outside a fiber.
#[track_caller]
fn race_as<'env, B, T>(called: &'static str, body: B) -> T
where
    B: for<'scope> FnOnce(&Racers<'scope, 'env, T>),
    T: Send + 'env,
{
    let winner = Arc::new(Mutex::new(None));
    let mut entered = false;
    // The winner cancels the scope; a body still entering racers then unwinds, which ends it
    // as well.
    let _ = run_scope(called, None, |scope| {
        let racers = Racers {
            scope,
            cancel: cancel_scope_of(scope),
            winner: winner.clone(),
            entered: Cell::new(false),
        };
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| body(&racers))) {
            // Nobody waits for a winner of a race whose body unwound: its racers are
            // cancelled, not run to their ends, before the unwind goes on.
            racers.cancel.cancel(CancelCause::Internal);
            panic::resume_unwind(payload);
        }
        entered = racers.entered.get();
    });
    let winner = winner.lock().unwrap_or_else(|p| p.into_inner()).take();
    match winner {
        Some(winner) => winner,
        None if entered => {
            // Every racer was cancelled from outside the race, so the caller was too: it
            // unwinds here, unless it is shielded.
            crate::cancel::check_current_scope();
            panic!("{called}(): every racer was cancelled, and the caller is shielded")
        }
        None => panic!("{called}() needs at least one racer"),
    }
}
