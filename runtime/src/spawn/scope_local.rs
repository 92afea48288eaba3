//! `Scope::spawn_local`: a scoped child that stays on its spawner's worker.

use super::scope::{Scope, ScopedJoinHandle};
use super::{entry_local, fiber_runtime, Builder, Pinned, Placement};
use std::sync::Arc;

impl<'scope> Scope<'scope, '_> {
    /// Spawns a child fiber that runs on the caller's worker, as [`spawn_local`](crate::spawn_local)
    /// does: neither the closure nor its value need be `Send`, and it may borrow from outside
    /// the scope (an `Rc`, a `RefCell`) like [`Scope::spawn`]'s children.
    ///
    /// # Panics
    ///
    /// Outside a fiber of the scope's runtime (the scope may have been handed to another
    /// thread), or when no stack can be had for the fiber.
    ///
    /// ```
    /// use std::cell::RefCell;
    ///
    /// fibra::run(|| {
    ///     let log = RefCell::new(Vec::new()); // not `Sync`: only local children may borrow it
    ///     fibra::scope(|s| {
    ///         for n in 0..3 {
    ///             let log = &log;
    ///             s.spawn_local(move || log.borrow_mut().push(n));
    ///         }
    ///     });
    ///     let mut log = log.into_inner();
    ///     log.sort();
    ///     assert_eq!(log, [0, 1, 2]);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_local<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + 'scope,
        T: 'scope,
    {
        let here = fiber_runtime("fibra::Scope::spawn_local");
        // Pinning to a worker of another runtime would run the child outside its scope's one.
        assert!(
            Arc::ptr_eq(&here, &self.shared),
            "fibra::Scope::spawn_local() called from a fiber of another runtime than the scope's"
        );
        let spawned = self.spawn_entry(Builder::new().spec(), Placement::Here, |packet| {
            Pinned::new(entry_local(f, packet)).into_entry()
        });
        match spawned {
            Ok(handle) => handle,
            Err(error) => panic!("fibra: cannot spawn a scoped fiber: {error}"),
        }
    }
}
