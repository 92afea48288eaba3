//! [`Lazy`]: a poisoning [`OnceCell`] plus the initializer to run.

use crate::once::{Initializer, OnPanic, RunAsync};
use crate::once_cell::OnceCell;
use std::cell::UnsafeCell;
use std::fmt;
use std::future::{self, Future, Ready};
use std::ops::Deref;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// A value computed on first access; concurrent first accesses park until it is ready.
///
/// If the initializer panics the `Lazy` is poisoned: every later access panics. An initializer
/// that unwinds because its fiber was cancelled (a timeout around the first access, a
/// cancelled scope) does not poison it: the value stays uncomputed and the next access runs
/// the initializer again. That is why the initializer is `Fn`, where std's `LazyLock` takes an
/// `FnOnce`; it is dropped once it has produced the value.
///
/// ```
/// use fibra::sync::Lazy;
///
/// static SQUARES: Lazy<Vec<u64>> = Lazy::new(|| (0..10).map(|i| i * i).collect());
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..3 {
///             s.spawn(|| assert_eq!(SQUARES[9], 81));
///         }
///     });
/// });
/// ```
///
/// A timeout around the first access cancels the initializer without poisoning the value:
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
///
/// static SLOW_ONCE: AtomicBool = AtomicBool::new(true);
/// static CONFIG: fibra::sync::Lazy<&str> = fibra::sync::Lazy::new(|| {
///     if SLOW_ONCE.swap(false, Ordering::SeqCst) {
///         fibra::sleep(Duration::from_secs(3600));
///     }
///     "loaded"
/// });
/// fibra::run(|| {
///     assert!(fibra::timeout(Duration::from_millis(1), || *CONFIG).is_err());
///     assert_eq!(*CONFIG, "loaded"); // runs the initializer again
/// });
/// ```
pub struct Lazy<T, F = fn() -> T> {
    cell: OnceCell<T>,
    /// Used by the one caller at a time that runs it; dropped once it has produced the value.
    init: UnsafeCell<Option<F>>,
}

// SAFETY: `init` is reached only by the caller the cell's run-once protocol lets in, one at a
// time, and may run and be dropped on any thread (`F: Send`); the rest is the cell's.
unsafe impl<T: Send + Sync, F: Send> Sync for Lazy<T, F> {}

const LAZY: OnPanic = OnPanic::Poison { what: "Lazy" };

impl<T, F> Lazy<T, F> {
    const_unless_loom! {
        /// A value that `init` computes on first access.
        ///
        /// ```
        /// let lazy = fibra::sync::Lazy::new(|| 2 + 2);
        /// assert_eq!(*lazy, 4);
        /// ```
        pub fn new(init: F) -> Lazy<T, F> {
            Lazy {
                cell: OnceCell::with_policy(LAZY),
                init: UnsafeCell::new(Some(init)),
            }
        }
    }
}

impl<T, F: Fn() -> T> Lazy<T, F> {
    /// The value, computing it first if needed.
    ///
    /// # Panics
    ///
    /// If the initializer panicked before (the `Lazy` is poisoned), or panics now.
    ///
    /// ```
    /// let lazy = fibra::sync::Lazy::new(|| "ready");
    /// assert_eq!(*fibra::sync::Lazy::force(&lazy), "ready");
    /// ```
    ///
    /// ```should_panic
    /// let lazy: fibra::sync::Lazy<u8> = fibra::sync::Lazy::new(|| panic!("boom"));
    /// let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| *lazy));
    /// let _ = *lazy; // poisoned
    /// ```
    #[track_caller]
    pub fn force(this: &Lazy<T, F>) -> &T {
        // SAFETY: `get_or_init` runs this as the initializer.
        this.cell.get_or_init(|| unsafe { this.run_init() })
    }

    /// A future of the value: whoever polls first while it is uncomputed runs the
    /// initializer, inside that poll; the others wait (as fibers in [`force`](Self::force) do)
    /// until it is done. The wait begins when the future is first polled.
    ///
    /// The initializer is synchronous, so nothing can drop the future while it runs; a
    /// cancelled fiber polling it leaves the value uncomputed, as with `force`.
    ///
    /// # Panics
    ///
    /// When polled, if the initializer panicked before (the `Lazy` is poisoned), or panics
    /// now.
    ///
    /// ```
    /// use fibra::sync::Lazy;
    ///
    /// static TABLE: Lazy<Vec<u32>> = Lazy::new(|| (1..=3).collect());
    /// futures::executor::block_on(async {
    ///     assert_eq!(Lazy::force_async(&TABLE).await, &[1, 2, 3]);
    /// });
    /// ```
    pub fn force_async(this: &Lazy<T, F>) -> LazyForce<'_, T, F> {
        LazyForce {
            lazy: this,
            run: this.cell.init_async(LazyInit(this)),
        }
    }

    /// Runs the initializer, and drops it once it has produced the value.
    ///
    /// # Safety
    ///
    /// Only the caller the run-once protocol lets in as the initializer may call this: one at
    /// a time, and never again once it has returned.
    unsafe fn run_init(&self) -> T {
        // SAFETY: the caller runs the initializer, so this is the only reference to `init`
        // while it lives (a recursive access panics before reaching this).
        let init = unsafe { &mut *self.init.get() };
        let run = init
            .as_ref()
            .expect("a Lazy drops its initializer only once its value is written");
        let value = run();
        *init = None;
        value
    }
}

/// A [`Lazy`]'s initializer, run synchronously when its future starts.
struct LazyInit<'a, T, F>(&'a Lazy<T, F>);

impl<T, F: Fn() -> T> Initializer for LazyInit<'_, T, F> {
    type Future = Ready<T>;

    fn start(self) -> Ready<T> {
        // SAFETY: the run-once protocol starts an initializer only for the caller it lets in.
        future::ready(unsafe { self.0.run_init() })
    }
}

/// The future of [`Lazy::force_async`].
///
/// Dropped while it initialises, it lets another caller take over; forgotten
/// (`std::mem::forget`) after its first poll, it keeps the initialisation claimed for
/// good, and every other caller waits for ever (as with tokio's `OnceCell`).
#[must_use = "futures do nothing unless polled"]
pub struct LazyForce<'a, T, F> {
    lazy: &'a Lazy<T, F>,
    run: RunAsync<'a, LazyInit<'a, T, F>, Ready<T>>,
}

impl<'a, T, F: Fn() -> T> Future for LazyForce<'a, T, F> {
    type Output = &'a T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'a T> {
        let outcome = ready!(Pin::new(&mut self.run).poll(cx));
        Poll::Ready(self.lazy.cell.settle_infallible(outcome))
    }
}

impl<T, F> fmt::Debug for LazyForce<'_, T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyForce").finish_non_exhaustive()
    }
}

impl<T, F: Fn() -> T> Deref for Lazy<T, F> {
    type Target = T;

    #[track_caller]
    fn deref(&self) -> &T {
        Lazy::force(self)
    }
}

impl<T: fmt::Debug, F> fmt::Debug for Lazy<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lazy").field(&self.cell.get()).finish()
    }
}
