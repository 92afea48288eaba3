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
    block_on, blocking, check_cancel, checkpoint, current, current_worker, detach, fiber_local,
    is_cancellation, is_cancelled, parallel_map, parallel_map_limited, park, park_timeout, race,
    run, scope, scope_with, shield, sleep, sleep_until, spawn, spawn_local, timeout, wait,
    yield_now, BackgroundRuntime, Builder, CancelCause, CancelGroup, CancelToken, Cancelled,
    Elapsed, Fiber, FiberId, Handle, HoldInfo, HoldKind, JoinError, JoinHandle, LocalKey, Runtime,
    RuntimeBuilder, Scope, ScopeOptions, ScopedJoinHandle, WaitExt,
};

/// Fiber-aware locks and coordination primitives.
pub use fibra_sync as sync;

/// Bounded and rendezvous MPMC channels and timer channels.
pub use fibra_channels as chan;

pub use fibra_select::{select, select_biased, Select, SelectTimeoutError, TrySelectError};

/// Erlang-style processes: typed mailboxes with selective receive, links, monitors, names,
/// `call` and supervisors.
///
/// ```
/// use fibra::process::{self, Inbox, Signal};
/// use std::time::Duration;
///
/// let status = fibra::process::run(|inbox: Inbox<&'static str>| {
///     let me = inbox.pid();
///     process::spawn(move |_: Inbox<()>| me.send("pong"));
///     fibra::receive! { inbox,
///         Signal::Msg(text) => assert_eq!(text, "pong"),
///         after Duration::from_secs(5) => panic!("no pong"),
///     }
/// });
/// assert_eq!(status, 0);
/// ```
#[doc(inline)]
pub use fibra_process as process;

pub use fibra_process::receive;
