//! Cells whose accesses loom checks.

/// An `UnsafeCell` with loom's closure-shaped access, so loom can check every access.
#[derive(Debug)]
pub struct Cell<T> {
    #[cfg(loom)]
    inner: loom::cell::UnsafeCell<T>,
    #[cfg(not(loom))]
    inner: std::cell::UnsafeCell<T>,
}

impl<T> Cell<T> {
    /// A cell holding `value`.
    pub fn new(value: T) -> Self {
        Cell {
            #[cfg(loom)]
            inner: loom::cell::UnsafeCell::new(value),
            #[cfg(not(loom))]
            inner: std::cell::UnsafeCell::new(value),
        }
    }

    /// Runs `f` with a pointer to the contents. Dereferencing it is sound only while the
    /// caller has exclusive access for as long as `f` uses it.
    #[cfg(loom)]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        self.inner.with_mut(f)
    }

    /// Runs `f` with a pointer to the contents. Dereferencing it is sound only while the
    /// caller has exclusive access for as long as `f` uses it.
    #[cfg(not(loom))]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.inner.get())
    }

    /// The contents.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}
