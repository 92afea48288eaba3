//! [`OnceCell`]: a value slot written once under the run-once protocol of [`OnceState`].

use crate::once::{Initializer, OnPanic, OnceState, Outcome, RunAsync};
use std::cell::UnsafeCell;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// A cell written once, by the first caller of [`get_or_init`](Self::get_or_init) (or
/// [`set`](Self::set)); concurrent callers park until it is written.
///
/// If the initializer panics (or [`get_or_try_init`](Self::get_or_try_init)'s returns an
/// error), or unwinds because its fiber was cancelled, the cell stays empty and the next caller
/// — a fiber parked on the cell meanwhile, or a later one — runs its own initializer. A blocking
/// initializer that calls back into its own cell panics instead of deadlocking (an async one
/// cannot be caught: see [`get_or_init_async`](Self::get_or_init_async)).
///
/// ```
/// use fibra::sync::OnceCell;
///
/// static CONFIG: OnceCell<String> = OnceCell::new();
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..4 {
///             s.spawn(|| assert_eq!(CONFIG.get_or_init(|| "loaded".to_string()), "loaded"));
///         }
///     });
/// });
/// assert_eq!(CONFIG.get().map(String::as_str), Some("loaded"));
/// ```
pub struct OnceCell<T> {
    state: OnceState,
    on_panic: OnPanic,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, by the one caller the run-once protocol lets in, before
// the state is published as complete; afterwards it is only read. Sharing the cell shares `&T`
// (`T: Sync`) and lets any thread write it (`T: Send`).
unsafe impl<T: Send + Sync> Sync for OnceCell<T> {}
// SAFETY: moving the cell moves the `T`.
unsafe impl<T: Send> Send for OnceCell<T> {}

impl<T> OnceCell<T> {
    const_unless_loom! {
        /// An empty cell.
        ///
        /// ```
        /// assert!(fibra::sync::OnceCell::<u8>::new().get().is_none());
        /// ```
        pub fn new() -> OnceCell<T> {
            OnceCell::with_policy(OnPanic::Retry)
        }
    }

    const_unless_loom! {
        /// An empty cell whose initializer panicking leaves `on_panic`'s state.
        pub(crate) fn with_policy(on_panic: OnPanic) -> OnceCell<T> {
            OnceCell {
                state: OnceState::new(),
                on_panic,
                value: UnsafeCell::new(MaybeUninit::uninit()),
            }
        }
    }

    /// The value, if the cell has been written. Never waits.
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// assert_eq!(cell.get(), None);
    /// cell.set(3).unwrap();
    /// assert_eq!(cell.get(), Some(&3));
    /// ```
    pub fn get(&self) -> Option<&T> {
        // SAFETY: complete means written, and never written again.
        self.state
            .is_complete()
            .then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// The value, through the exclusive borrow.
    ///
    /// ```
    /// let mut cell = fibra::sync::OnceCell::new();
    /// cell.set(1).unwrap();
    /// *cell.get_mut().unwrap() += 1;
    /// assert_eq!(cell.get(), Some(&2));
    /// ```
    pub fn get_mut(&mut self) -> Option<&mut T> {
        // SAFETY: complete means written; `&mut self` excludes every other access.
        self.state
            .is_complete()
            .then(|| unsafe { self.value.get_mut().assume_init_mut() })
    }

    /// Writes `value` unless the cell is already written (then `value` comes back); parks
    /// while another caller is initializing it.
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// assert_eq!(cell.set(1), Ok(()));
    /// assert_eq!(cell.set(2), Err(2));
    /// ```
    #[track_caller]
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.get_or_init(|| value.take().expect("the initializer runs at most once"));
        value.map_or(Ok(()), Err)
    }

    /// The value, running `init` to write it if the cell is empty; parks while another caller
    /// is initializing it.
    ///
    /// # Panics
    ///
    /// If `init` calls back into this cell (which would deadlock). If `init` panics, the
    /// panic propagates and the cell stays empty.
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// assert_eq!(*cell.get_or_init(|| 5), 5);
    /// assert_eq!(*cell.get_or_init(|| 6), 5);
    /// ```
    #[track_caller]
    pub fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        match self.get_or_try_init(|| Ok::<T, Infallible>(init())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// Like [`get_or_init`](Self::get_or_init), for an initializer that may fail: an error is
    /// returned and leaves the cell empty.
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// assert_eq!(cell.get_or_try_init(|| "no".parse::<u8>()).is_err(), true);
    /// assert_eq!(cell.get_or_try_init(|| "7".parse::<u8>()), Ok(&7));
    /// ```
    #[track_caller]
    pub fn get_or_try_init<E>(&self, init: impl FnOnce() -> Result<T, E>) -> Result<&T, E> {
        self.state.run(self.on_panic, || {
            let value = init()?;
            // SAFETY: this runs as the initializer, under the run-once protocol, which
            // publishes the state as complete only after it returns.
            unsafe { self.store(value) };
            Ok(())
        })?;
        Ok(self.get().expect("complete after a successful run"))
    }

    /// A future of the value, which runs the future `init` returns to write it if the cell is
    /// empty, or waits while another caller (a fiber in [`get_or_init`](Self::get_or_init), or
    /// a future) is initializing it. `init` is called only by the caller that initializes. The
    /// wait begins when the future is first polled.
    ///
    /// Dropping the future while its initializer runs leaves the cell empty, and a waiter runs
    /// its own initializer instead; so does a panic of `init` or its future (which propagates).
    ///
    /// A future is not its polling fiber or thread, so a call back into this cell from inside
    /// `init`'s future, blocking or async, is not detected as recursion: it waits for itself,
    /// for ever.
    ///
    /// ```
    /// use fibra::sync::OnceCell;
    ///
    /// static CONFIG: OnceCell<String> = OnceCell::new();
    /// futures::executor::block_on(async {
    ///     let config = CONFIG.get_or_init_async(|| async { "loaded".to_string() }).await;
    ///     assert_eq!(config, "loaded");
    ///     let again = CONFIG.get_or_init_async(|| async { unreachable!("set already") });
    ///     assert_eq!(again.await, "loaded");
    /// });
    /// ```
    pub fn get_or_init_async<F, Fut>(&self, init: F) -> GetOrInit<'_, T, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        GetOrInit {
            cell: self,
            run: self.init_async(init),
        }
    }

    /// Like [`get_or_init_async`](Self::get_or_init_async), for an initializer whose future may
    /// fail: an error is returned and leaves the cell empty (a waiter then runs its own).
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// futures::executor::block_on(async {
    ///     let failed = cell.get_or_try_init_async(|| async { "no".parse::<u8>() }).await;
    ///     assert!(failed.is_err());
    ///     let parsed = cell.get_or_try_init_async(|| async { "7".parse::<u8>() }).await;
    ///     assert_eq!(parsed, Ok(&7));
    /// });
    /// ```
    pub fn get_or_try_init_async<F, Fut, E>(&self, init: F) -> GetOrTryInit<'_, T, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        GetOrTryInit {
            cell: self,
            run: self.init_async(init),
        }
    }

    /// A future that runs `init` unless the cell is written, under this cell's run-once
    /// protocol; its outcome goes to [`settle`](Self::settle).
    pub(crate) fn init_async<I: Initializer>(&self, init: I) -> RunAsync<'_, I, I::Future> {
        self.state.run_async(self.on_panic, init)
    }

    /// The value once a [`RunAsync`] of this cell is ready: writes what its initializer
    /// produced (if it ran one) and publishes the outcome.
    pub(crate) fn settle<E>(&self, outcome: Outcome<'_, Result<T, E>>) -> Result<&T, E> {
        if let Some((result, claim)) = outcome {
            match result {
                Ok(value) => {
                    // SAFETY: the claim makes this caller the initializer, and the state is
                    // published as complete only by the `finish` below.
                    unsafe { self.store(value) };
                    claim.finish(true);
                }
                Err(error) => {
                    claim.finish(false);
                    return Err(error);
                }
            }
        }
        Ok(self.get().expect("complete after a run"))
    }

    /// [`settle`](Self::settle) for an initializer that cannot fail.
    pub(crate) fn settle_infallible(&self, outcome: Outcome<'_, T>) -> &T {
        match self.settle(outcome.map(|(value, claim)| (Ok::<T, Infallible>(value), claim))) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// Writes the value.
    ///
    /// # Safety
    ///
    /// Only the caller the run-once protocol lets in as the initializer may call this, once,
    /// before the state is published as complete (nobody reads the value before that).
    unsafe fn store(&self, value: T) {
        // SAFETY: the caller is the only one touching the value, per the contract above.
        unsafe { (*self.value.get()).write(value) };
    }

    /// The value, if written.
    ///
    /// ```
    /// let cell = fibra::sync::OnceCell::new();
    /// cell.set("x").unwrap();
    /// assert_eq!(cell.into_inner(), Some("x"));
    /// ```
    pub fn into_inner(mut self) -> Option<T> {
        let value = self.take_value();
        std::mem::forget(self);
        value
    }

    fn take_value(&mut self) -> Option<T> {
        // SAFETY: complete means written; `&mut self` excludes every other access, and the
        // callers never look at the value again.
        self.state
            .is_complete()
            .then(|| unsafe { self.value.get_mut().assume_init_read() })
    }
}

impl<T> Drop for OnceCell<T> {
    fn drop(&mut self) {
        drop(self.take_value());
    }
}

impl<T> Default for OnceCell<T> {
    fn default() -> Self {
        OnceCell::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OnceCell").field(&self.get()).finish()
    }
}

/// The future of [`OnceCell::get_or_init_async`].
///
/// Dropped while it initialises, it lets another caller take over; forgotten
/// (`std::mem::forget`) after its first poll, it keeps the initialisation claimed for
/// good, and every other caller waits for ever (as with tokio's `OnceCell`).
#[must_use = "futures do nothing unless polled"]
pub struct GetOrInit<'a, T, F, Fut> {
    cell: &'a OnceCell<T>,
    run: RunAsync<'a, F, Fut>,
}

impl<'a, T, F, Fut> Future for GetOrInit<'a, T, F, Fut>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T>,
{
    type Output = &'a T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'a T> {
        let outcome = ready!(Pin::new(&mut self.run).poll(cx));
        Poll::Ready(self.cell.settle_infallible(outcome))
    }
}

impl<T, F, Fut> fmt::Debug for GetOrInit<'_, T, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GetOrInit").finish_non_exhaustive()
    }
}

/// The future of [`OnceCell::get_or_try_init_async`].
///
/// Dropped while it initialises, it lets another caller take over; forgotten
/// (`std::mem::forget`) after its first poll, it keeps the initialisation claimed for
/// good, and every other caller waits for ever (as with tokio's `OnceCell`).
#[must_use = "futures do nothing unless polled"]
pub struct GetOrTryInit<'a, T, F, Fut> {
    cell: &'a OnceCell<T>,
    run: RunAsync<'a, F, Fut>,
}

impl<'a, T, F, Fut, E> Future for GetOrTryInit<'a, T, F, Fut>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<&'a T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<&'a T, E>> {
        let outcome = ready!(Pin::new(&mut self.run).poll(cx));
        Poll::Ready(self.cell.settle(outcome))
    }
}

impl<T, F, Fut> fmt::Debug for GetOrTryInit<'_, T, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GetOrTryInit").finish_non_exhaustive()
    }
}
