//! A wrapper that is `Sync` because it gives access to its contents only through `&mut`.

/// Holds a `T` that is only ever reached through `&mut Exclusive<T>`, so sharing `&Exclusive`
/// between threads shares nothing.
pub(crate) struct Exclusive<T>(T);

// SAFETY: no method takes `&self` and reaches the contents; with only `&Exclusive` a thread can
// do nothing with the `T`, so `&Exclusive<T>` is safe to share for any `T: Send` (the `Send`
// bound is for moving the wrapper, which moves the `T`).
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    pub(crate) fn new(value: T) -> Self {
        Exclusive(value)
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
