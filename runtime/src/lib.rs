//! fibra's core: fibers on pooled guarded stacks, the M:N scheduler, the park/wake latch,
//! spawn/join and borrowing scopes.
//!
//! Code in a fiber blocks in plain function calls — [`park`], [`JoinHandle::join`], and the
//! channels and locks built on [`wait`] — and only the fiber is suspended. Users reach all of
//! this through the `fibra` facade crate.
//!
//! # Soundness
//!
//! Safe code using this crate cannot cause undefined behaviour. The `unsafe` code inside relies
//! on these rules, each guarded by the tests named:
//!
//! - **Pinning.** A fiber that has started runs only on the worker thread that started it, so
//!   `!Send` state held across a wait (an `Rc`, a thread-local borrow, a `std` mutex guard)
//!   never changes thread. Only unstarted fibers (whose closures are `Send`) move between
//!   workers. A suspended fiber is never resumed, moved or dropped elsewhere: abandoned, it is
//!   leaked with its stack and its fiber-locals. (`tests/scheduling.rs`:
//!   `a_started_fiber_never_changes_worker`.)
//! - **Stack and borrow lifetime.** A scope returns, by value or by unwinding, only after every
//!   child's packet has ended, and a child's last use of borrowed data happens before that (a
//!   release/acquire count, model-checked with loom). A child that never finishes keeps its
//!   scope from returning, and a fiber's stack stays mapped while the fiber may run.
//!   (`tests/scope.rs`; the loom model `loom_a_scope_owner_sees_every_childs_borrowed_writes`;
//!   `tests/stack_overflow.rs` for the guard pages.)
//! - **Thread-local lifetime.** A scope child may borrow a thread-local of another worker. No
//!   worker thread returns, and so destroys its thread-locals, while any worker still runs its
//!   loop: at shutdown each waits for all. A worker loop that would unwind aborts the process
//!   instead. (`tests/soundness.rs`: `a_scope_child_never_outlives_the_thread_local_it_borrows`.)
//! - **Shutdown unwinds while every loop runs.** The fibers still running at shutdown are
//!   cancelled, and unwind on their own workers, before any worker leaves its loop, so the
//!   thread-local rule above holds for them; a fiber that does not finish by the deadline is
//!   abandoned. Each worker's list of started fibers holds raw pointers only to fibers that have
//!   started and not finished, whose `Core` is kept alive by their queue or their own lent
//!   reference. (`tests/shutdown_unwind.rs`.)
//! - **Panics stay in their fiber.** User code that runs around a fiber's closure (a joiner's
//!   waker, the `Drop` of an untaken result or of a panic payload, an unstarted closure's
//!   `Drop`) is contained: its panic is logged and the worker goes on.
//!   (`tests/soundness.rs`: `panics_around_a_fibers_closure_do_not_kill_its_worker`,
//!   `shutdown_survives_a_drop_that_wakes_a_fiber_of_the_same_worker`.)
//! - **`std::thread::panicking()` belongs to one fiber.** The panic count is per thread and
//!   fibers share threads, so a fiber that is unwinding (a panic or a cancellation) never
//!   suspends: a wait inside a destructor during an unwind blocks its worker thread (other
//!   fibers of that worker wait meanwhile, and a wait on one of them would never end), and is
//!   not a cancellation point. Every other fiber sees `panicking()` false, its cancellation
//!   points unwind, and the `std` mutexes it unlocks are not poisoned.
//!   (`tests/soundness.rs`: `only_the_unwinding_fiber_sees_panicking`.)
//!
//! ```
//! let results = fibra::run(|| {
//!     let mut slots = vec![0u64; 8];
//!     fibra::scope(|s| {
//!         for (i, slot) in slots.iter_mut().enumerate() {
//!             s.spawn(move || *slot = (i as u64).pow(2));
//!         }
//!     });
//!     slots
//! });
//! assert_eq!(results, [0, 1, 4, 9, 16, 25, 36, 49]);
//! ```

mod block_on;
mod blocking;
mod cancel;
mod config;
mod diag;
mod erased;
mod fiber;
mod fiber_ctx;
mod fiber_local;
mod harness;
mod holds;
mod latch;
#[doc(hidden)]
pub mod loom;
mod metrics;
mod outside;
mod panic_hook;
mod runtime;
mod sched;
mod spawn;
mod stack;
mod this_fiber;
mod time;
pub mod wait;

pub use block_on::{block_on, block_on_leaf_until, block_on_until, WaitExt};
pub use blocking::blocking;
pub use cancel::{
    check_cancel, is_cancellation, is_cancelled, shield, CancelCause, CancelGroup, CancelToken,
    Cancelled, ScopeOptions,
};
pub use diag::{
    dump, Deadlock, Deadlocked, Dump, FiberInfo, FiberState, HoldDump, WaitInfo, WorkerInfo,
};
pub use fiber::{Fiber, FiberId};
pub use fiber_local::LocalKey;
pub use fibra_driver::{HoldInfo, HoldKind};
#[doc(hidden)]
pub use harness::__as_watchdog;
pub use metrics::{DriverMetrics, RuntimeMetrics, StackMetrics, WorkerMetrics};
pub use runtime::{run, BackgroundRuntime, Handle, Runtime, RuntimeBuilder};
#[doc(hidden)]
pub use spawn::__race_macro;
pub use spawn::{
    detach, parallel_chunks, parallel_map, parallel_map_limited, race, race_with, scope,
    scope_with, spawn, spawn_local, timeout, Builder, Elapsed, JoinError, JoinHandle, Racers,
    Scope, ScopedJoinHandle,
};
pub use this_fiber::{checkpoint, current, current_worker, park, yield_now};
pub use time::{park_timeout, sleep, sleep_until};
