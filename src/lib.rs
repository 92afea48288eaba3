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
    yield_now, BackgroundRuntime, Builder, CancelCause, CancelToken, Cancelled, Elapsed, Fiber,
    FiberId, Handle, HoldInfo, HoldKind, JoinError, JoinHandle, LocalKey, Runtime, RuntimeBuilder,
    Scope, ScopeOptions, ScopedJoinHandle, WaitExt,
};

/// Fiber-aware locks and coordination primitives (DESIGN §9).
pub use fibra_sync as sync;

/// Bounded and rendezvous MPMC channels and timer channels (DESIGN §7).
pub use fibra_channels as chan;

pub use fibra_select::{select, select_biased, Select, SelectTimeoutError, TrySelectError};

/// Networking: TCP, UDP and Unix sockets shaped like `std::net`, blocking only the calling
/// fiber (a plain thread blocks instead); host names resolve without blocking a worker.
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         for conn in listener.incoming() {
///             let conn = conn.unwrap();
///             // One fiber per connection: echo until the peer closes.
///             fibra::spawn(move || std::io::copy(&mut &conn, &mut &conn));
///         }
///     });
///     let mut stream = TcpStream::connect(addr).unwrap();
///     stream.write_all(b"ping").unwrap();
///     let mut back = [0; 4];
///     stream.read_exact(&mut back).unwrap();
///     assert_eq!(&back, b"ping");
/// });
/// ```
pub mod net {
    #[doc(inline)]
    pub use fibra_net::net::*;
}
