//! [`Lazy`]: a poisoning [`OnceCell`] plus the initializer to run.

use crate::once::OnPanic;
use crate::once_cell::OnceCell;
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::Deref;

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
        this.cell.get_or_init(|| {
            // SAFETY: only the caller running the initializer gets here, one at a time (the
            // run-once protocol; a recursive access panics before reaching this), so this is
            // the only reference to `init` while it lives.
            let init = unsafe { &mut *this.init.get() };
            let run = init
                .as_ref()
                .expect("a Lazy drops its initializer only once its value is written");
            let value = run();
            *init = None;
            value
        })
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
