//! `Scope::spawn_local` and `Builder::spawn_scoped_local`: a scoped child that stays on its
//! spawner's worker.

use super::scope::{Scope, ScopedJoinHandle};
use super::{fiber_runtime, Builder, JoinableEntry, Placement};
use std::io;
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
        match Builder::new().scoped_local("fibra::Scope::spawn_local", self, f) {
            Ok(handle) => handle,
            Err(error) => panic!("fibra: cannot spawn a scoped fiber: {error}"),
        }
    }
}

impl Builder {
    /// Spawns a fiber in `scope` that runs on the caller's worker, as
    /// [`Scope::spawn_local`] does, with this builder's name and stack size.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// # Panics
    ///
    /// Outside a fiber of the scope's runtime.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// fibra::run(|| {
    ///     let shared = Rc::new(String::from("not Send"));
    ///     let length = fibra::scope(|s| {
    ///         let shared = &shared;
    ///         let handle = fibra::Builder::new()
    ///             .name("local")
    ///             .spawn_scoped_local(s, move || shared.len())
    ///             .unwrap();
    ///         handle.join().unwrap()
    ///     });
    ///     assert_eq!(length, 8);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_scoped_local<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + 'scope,
        T: 'scope,
    {
        self.scoped_local("fibra::Builder::spawn_scoped_local", scope, f)
    }

    /// A local child of `scope`, for a function named `called` in the misuse panics.
    #[track_caller]
    fn scoped_local<'scope, 'env, F, T>(
        self,
        called: &'static str,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + 'scope,
        T: 'scope,
    {
        let here = fiber_runtime(called);
        // Pinning to a worker of another runtime would run the child outside its scope's one.
        assert!(
            Arc::ptr_eq(&here, &scope.shared),
            "{called}() called from a fiber of another runtime than the scope's"
        );
        // SAFETY: the child's borrows, and its result's, are the scope's (`'scope`); see
        // `Scope::spawn_entry` for why they outlive the entry and the packet's end.
        let entry = unsafe { JoinableEntry::local_unchecked(f) };
        scope.spawn_entry(self.spec(), Placement::Here, entry)
    }
}
