//! fibra's core: fibers on pooled guarded stacks, the M:N scheduler, the park/wake latch,
//! spawn/join and borrowing scopes (DESIGN §2–§4).
//!
//! Code in a fiber blocks in plain function calls — [`park`], [`JoinHandle::join`], and the
//! channels and locks built on [`wait`] — and only the fiber is suspended. Users reach all of
//! this through the `fibra` facade crate.
//!
//! ```
//! let results = fibra_runtime::run(|| {
//!     let mut slots = vec![0u64; 8];
//!     fibra_runtime::scope(|s| {
//!         for (i, slot) in slots.iter_mut().enumerate() {
//!             s.spawn(move || *slot = (i as u64).pow(2));
//!         }
//!     });
//!     slots
//! });
//! assert_eq!(results, [0, 1, 4, 9, 16, 25, 36, 49]);
//! ```

mod blocking;
mod cancel;
mod config;
mod ctx;
mod fiber;
mod future;
mod holds;
mod latch;
mod local;
mod outside;
mod runtime;
mod sched;
mod shim;
mod slab;
mod spawn;
mod stack;
mod this_fiber;
mod time;
pub mod wait;

pub use blocking::blocking;
pub use cancel::{
    check_cancel, is_cancellation, is_cancelled, shield, timeout, CancelCause, CancelGroup,
    CancelToken, Cancelled, Elapsed, ScopeOptions,
};
pub use fiber::{Fiber, FiberId};
pub use fibra_driver::{HoldInfo, HoldKind};
pub use future::{block_on, WaitExt};
pub use local::LocalKey;
pub use runtime::{run, BackgroundRuntime, Handle, Runtime, RuntimeBuilder};
pub use spawn::{
    detach, parallel_map, parallel_map_limited, race, scope, scope_with, spawn, spawn_local,
    Builder, JoinError, JoinHandle, Scope, ScopedJoinHandle,
};
pub use this_fiber::{checkpoint, current, current_worker, park, yield_now};
pub use time::{park_timeout, sleep, sleep_until};
