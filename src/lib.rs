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

/// Child processes shaped like `std::process`: `wait` parks the fiber (no thread per child)
/// and piped stdio is `Read`/`Write` that parks the fiber.
///
/// ```
/// use fibra::os::{Command, Stdio};
/// use std::io::Read;
///
/// fibra::run(|| {
///     let mut child = Command::new("echo").arg("hello").stdout(Stdio::piped()).spawn().unwrap();
///     let mut out = String::new();
///     child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
///     assert_eq!(out, "hello\n");
///     assert!(child.wait().unwrap().success());
/// });
/// ```
pub mod os {
    #[doc(inline)]
    pub use fibra_net::os::*;
}

/// Files and directories shaped like `std::fs`, on the blocking pool; a [`fs::File`] moves
/// data in [`fs::CHUNK`]-sized pieces so small reads and writes do not each cost a pool trip.
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
///
/// let path = std::env::temp_dir().join(format!("fibra-facade-fs-{}", std::process::id()));
/// fibra::run(|| {
///     let mut file = fibra::fs::File::create(&path).unwrap();
///     for n in 0..1000 {
///         writeln!(file, "{n}").unwrap();
///     }
///     drop(file);
///     let lines = BufReader::new(fibra::fs::File::open(&path).unwrap()).lines().count();
///     assert_eq!(lines, 1000);
///     fibra::fs::remove_file(&path).unwrap();
/// });
/// ```
pub mod fs {
    #[doc(inline)]
    pub use fibra_net::fs::*;
}

/// tokio interop for I/O: [`io::SyncIo`] makes any tokio `AsyncRead`/`AsyncWrite` a std
/// `Read`/`Write` inside a fiber; [`io::IntoTokio`] and [`io::FromTokio`] convert sockets.
///
/// ```
/// use fibra::io::SyncIo;
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let (a, b) = tokio::io::duplex(16);
///     let writer = fibra::spawn(move || SyncIo::new(a).write_all(b"through tokio's duplex"));
///     let mut text = String::new();
///     SyncIo::new(b).read_to_string(&mut text).unwrap();
///     writer.join().unwrap().unwrap();
///     assert_eq!(text, "through tokio's duplex");
/// });
/// ```
pub mod io {
    #[doc(inline)]
    pub use fibra_integration::{FromTokio, IntoTokio, SyncIo};
}
