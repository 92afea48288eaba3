//! Fiber-local storage.

use crate::fiber_ctx;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Declares fiber-local values: each fiber sees its own binding, made by
/// [`LocalKey::scope`] or, on first use, from the initialiser. A spawned fiber starts with a
/// snapshot of its parent's bindings. Values are shared between snapshots, hence `Send + Sync`.
/// A fiber's bindings go when it finishes, in the fiber (still in its cancel scope), before its
/// joiner sees its result: a value no other fiber shares is dropped there.
///
/// ```
/// fibra::fiber_local! {
///     static REQUEST_ID: u64 = 0;
/// }
///
/// fibra::run(|| {
///     REQUEST_ID.scope(7, || {
///         let child = fibra::spawn(|| REQUEST_ID.get());
///         assert_eq!(child.join().unwrap(), 7);
///     });
///     assert_eq!(REQUEST_ID.get(), 0);
/// });
/// ```
#[macro_export]
macro_rules! fiber_local {
    ($(#[$meta:meta])* $vis:vis static $name:ident: $ty:ty = $init:expr; $($rest:tt)*) => {
        $(#[$meta])*
        $vis static $name: $crate::LocalKey<$ty> = $crate::LocalKey::new({
            fn init() -> $ty {
                $init
            }
            init
        });
        $crate::fiber_local!($($rest)*);
    };
    () => {};
}

/// A fiber-local key, declared with [`fiber_local!`].
pub struct LocalKey<T: 'static> {
    init: fn() -> T,
}

impl<T: Send + Sync + 'static> LocalKey<T> {
    /// Used by [`fiber_local!`].
    #[doc(hidden)]
    pub const fn new(init: fn() -> T) -> LocalKey<T> {
        LocalKey { init }
    }

    fn id(&'static self) -> usize {
        self as *const LocalKey<T> as usize
    }

    fn current(&'static self) -> Arc<dyn Any + Send + Sync> {
        let id = self.id();
        let bound = fiber_ctx::with(|ctx| {
            ctx.locals
                .iter()
                .find(|(key, _)| *key == id)
                .map(|(_, value)| value.clone())
        });
        bound.unwrap_or_else(|| {
            let value: Arc<dyn Any + Send + Sync> = Arc::new((self.init)());
            fiber_ctx::with(|ctx| ctx.locals.push((id, value.clone())));
            value
        })
    }

    /// Runs `f` with the calling fiber's value.
    ///
    /// ```
    /// fibra::fiber_local!(static NAME: String = "anonymous".to_owned(););
    /// fibra::run(|| NAME.with(|name| assert_eq!(name, "anonymous")));
    /// ```
    pub fn with<R>(&'static self, f: impl FnOnce(&T) -> R) -> R {
        let value = self.current();
        f(value
            .downcast_ref()
            .expect("a fiber-local holds its own type"))
    }

    /// A clone of the calling fiber's value.
    ///
    /// ```
    /// fibra::fiber_local!(static DEPTH: u32 = 1;);
    /// fibra::run(|| assert_eq!(DEPTH.get(), 1));
    /// ```
    pub fn get(&'static self) -> T
    where
        T: Clone,
    {
        self.with(T::clone)
    }

    /// Binds `value` for the duration of `f` in the calling fiber (and the fibers it spawns
    /// meanwhile), then restores the previous binding, also when `f` unwinds.
    ///
    /// ```
    /// fibra::fiber_local!(static LEVEL: u8 = 0;);
    /// fibra::run(|| {
    ///     LEVEL.scope(1, || LEVEL.scope(2, || assert_eq!(LEVEL.get(), 2)));
    ///     assert_eq!(LEVEL.get(), 0);
    /// });
    /// ```
    pub fn scope<R>(&'static self, value: T, f: impl FnOnce() -> R) -> R {
        struct Restore {
            id: usize,
            previous: Option<Arc<dyn Any + Send + Sync>>,
        }
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.previous.take();
                // The scoped value may be a user type whose `Drop` reads fiber-locals or
                // spawns: it is dropped here, after the context is no longer borrowed.
                let _scoped = fiber_ctx::with(|ctx| {
                    let at = ctx.locals.iter().position(|(key, _)| *key == self.id);
                    let scoped = at.map(|at| ctx.locals.swap_remove(at).1);
                    if let Some(previous) = previous {
                        ctx.locals.push((self.id, previous));
                    }
                    scoped
                });
            }
        }
        let id = self.id();
        let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
        let previous = fiber_ctx::with(|ctx| {
            let at = ctx.locals.iter().position(|(key, _)| *key == id);
            let previous = at.map(|at| ctx.locals.swap_remove(at).1);
            ctx.locals.push((id, value));
            previous
        });
        let _restore = Restore { id, previous };
        f()
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKey { .. }")
    }
}
