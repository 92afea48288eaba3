//! Running file system calls on the blocking pool.

/// Runs `f` on the blocking pool (inline on a plain thread), parking the calling fiber.
pub(crate) fn on_pool<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    #[cfg(test)]
    trips::count();
    fibra_runtime::blocking(f)
}

/// Pool round trips made by the calling thread, so unit tests can check the chunking.
#[cfg(test)]
pub(crate) mod trips {
    use std::cell::Cell;

    thread_local! {
        static TRIPS: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn count() {
        TRIPS.with(|trips| trips.set(trips.get() + 1));
    }

    pub(crate) fn so_far() -> usize {
        TRIPS.with(Cell::get)
    }
}
