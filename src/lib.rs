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
//!
//! New here? Read [the guide](guide) in order: [writing a service](guide::service),
//! [fibra and tokio](guide::tokio), [testing](guide::testing),
//! [cancellation](guide::cancellation), [not blocking the worker](guide::blocking),
//! [load testing](guide::load) and [diagnostics](guide::diagnostics).
//!
//! # Where things are
//!
//! - Starting: [`run`], [`#[fibra::main]`](macro@main), [`#[fibra::test]`](macro@test),
//!   and [`Runtime`] / [`RuntimeBuilder`] for settings or a [`BackgroundRuntime`] beside other
//!   code.
//! - Fibers: [`spawn`], [`scope`] / [`scope_with`], [`detach`], [`JoinHandle`], [`sleep`],
//!   [`yield_now`], [`blocking`] for thread-blocking calls, [`parallel_map`].
//! - Cancellation: [`timeout`], [`CancelToken`], [`ScopeOptions`], [`shield`], [`race()`];
//!   see [`guide::cancellation`].
//! - Futures: [`block_on`] and [`WaitExt::wait`] run a future in a fiber; [`io`] adapts tokio
//!   I/O.
//! - Communication: [`chan`] (channels, timer channels), [`select!`](macro@select),
//!   [`sync`] (mutexes, condition variables, barriers, …), [`process`] (Erlang-style
//!   mailboxes and supervisors).
//! - I/O: [`net`] (TCP, UDP, Unix sockets), [`fs`] (files), [`os`] (child processes).
//! - Diagnostics: [`dump`], [`Runtime::holds`], [`Deadlock`]; see [`guide::diagnostics`].
//! - Building new primitives: [`wait`].

#![forbid(unsafe_code)]

#[doc(inline)]
pub use fibra_macros::main;
#[doc(inline)]
pub use fibra_macros::test;

#[doc(hidden)]
#[path = "attributes.rs"]
pub mod __private;

#[doc(inline)]
pub use fibra_runtime::{
    block_on, block_on_until, blocking, check_cancel, checkpoint, current, current_worker, detach,
    fiber_local, is_cancellation, is_cancelled, parallel_chunks, parallel_map,
    parallel_map_limited, park, park_timeout, race, race_with, run, scope, scope_with, shield,
    sleep, sleep_until, spawn, spawn_local, timeout, wait, yield_now, BackgroundRuntime, Builder,
    CancelCause, CancelGroup, Cancelled, DriverMetrics, Elapsed, Fiber, FiberId, Handle, JoinError,
    JoinHandle, LocalKey, Racers, Runtime, RuntimeBuilder, RuntimeMetrics, Scope, ScopeOptions,
    ScopedJoinHandle, StackMetrics, WaitExt, WorkerMetrics,
};

#[doc(inline)]
pub use fibra_runtime::{HoldInfo, HoldKind};

#[doc(inline)]
pub use fibra_runtime::wait::{Deadline, TimedOut, WaitKind};

#[doc(inline)]
pub use fibra_runtime::{
    dump, Deadlock, Deadlocked, Dump, FiberInfo, FiberState, HoldDump, WaitInfo, WorkerInfo,
};

/// fibra's cancel token is tokio-util 0.7's `CancellationToken` (a re-export, so a tokio-util
/// of your own must be 0.7 for the two to be one type): one token cancels fibers and tokio
/// tasks alike.
///
/// Give it to [`scope_with`] (through [`ScopeOptions::token`]) and cancelling it unwinds every
/// fiber of the scope from its next cancellation point (any fibra wait); a tokio task holding a
/// clone can cancel it or wait for it with `cancelled().await`.
///
/// ```
/// use fibra::{CancelCause, CancelToken, ScopeOptions};
/// use std::time::Duration;
///
/// let token = CancelToken::new();
/// let runtime = fibra::Runtime::builder().workers(2).build().unwrap().into_background().unwrap();
///
/// // A tokio task (here on a tokio runtime of its own) stops the fibers.
/// let tokio_rt = tokio::runtime::Runtime::new().unwrap();
/// let stopper = token.clone();
/// tokio_rt.spawn(async move {
///     tokio::time::sleep(Duration::from_millis(10)).await;
///     stopper.cancel();
/// });
///
/// let scoped = token.clone();
/// let outcome = runtime.handle().spawn(move || {
///     fibra::scope_with(ScopeOptions::new().token(scoped), |s| {
///         s.spawn(|| loop {
///             fibra::sleep(Duration::from_millis(1)); // a cancellation point
///         });
///     })
/// });
/// // The scope reports why it ended instead of returning the body's value.
/// let result = tokio_rt.block_on(outcome).unwrap();
/// assert!(matches!(result, Err(ref c) if c.cause() == CancelCause::Token));
/// assert!(token.is_cancelled());
/// ```
#[doc(inline)]
pub use fibra_runtime::CancelToken;

#[doc(inline)]
pub use fibra_select::{select, select_biased, Select, SelectTimeoutError, TrySelectError};

#[doc(inline)]
pub use fibra_process::receive;

pub mod guide;

/// Fiber-aware locks and coordination primitives: they park the waiting fiber (or plain
/// thread), never its worker thread, and every wait is a cancellation point.
///
/// Use [`sync::Mutex`] rather than `std::sync::Mutex` whenever a guard is held across a fibra
/// wait (see [the guide](crate::guide::blocking)).
///
/// ```
/// use fibra::sync::Mutex;
///
/// let total = Mutex::new(0);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for n in 1..=4 {
///             let total = &total;
///             s.spawn(move || {
///                 let mut guard = total.lock();
///                 fibra::yield_now(); // other fibers run; they queue on the lock
///                 *guard += n;
///             });
///         }
///     });
/// });
/// assert_eq!(total.into_inner(), 10);
/// ```
pub mod sync {
    #[doc(inline)]
    pub use fibra_sync::*;
}

/// MPMC channels — bounded (capacity 0 is a rendezvous) and unbounded — timer channels and the
/// channel operations `select!` waits on.
///
/// ```
/// fibra::run(|| {
///     let (tx, rx) = fibra::chan::bounded(4);
///     let producer = fibra::spawn(move || {
///         for n in 0..10 {
///             tx.send(n).unwrap();
///         }
///         // Dropping the last writer closes the channel and ends the reader's loop.
///     });
///     let sum: i32 = rx.iter().sum();
///     producer.join().unwrap();
///     assert_eq!(sum, 45);
/// });
/// ```
pub mod chan {
    #[doc(inline)]
    pub use fibra_channels::*;
}

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
pub mod process {
    #[doc(inline)]
    pub use fibra_process::*;
}

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
