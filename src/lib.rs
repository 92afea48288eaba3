//! fibra: stackful fibers with colorless suspension.
//!
//! Code in a fiber calls blocking-style functions and only the fiber is suspended, never its
//! worker thread. This crate is the facade: everything is reachable from `fibra::…`.
//!
//! ```
//! let mut words = vec!["fiber", "scope", "join"];
//! let lengths = fibra::run(|| {
//!     fibra::scope(|s| {
//!         let handles: Vec<_> = words.iter_mut().map(|w| s.spawn(move || w.len())).collect();
//!         handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
//!     })
//! });
//! assert_eq!(lengths, [5, 5, 4]);
//! ```

pub use fibra_runtime::{
    block_on, blocking, checkpoint, current, current_worker, park, park_timeout, run, scope, sleep,
    sleep_until, spawn, spawn_local, wait, yield_now, BackgroundRuntime, Builder, Fiber, FiberId,
    Handle, HoldInfo, HoldKind, JoinError, JoinHandle, Runtime, RuntimeBuilder, Scope,
    ScopedJoinHandle, WaitExt,
};
