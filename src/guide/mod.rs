//! The fibra guide: one chapter per page, every example a doctest (the few that are only
//! compiled say so).
//!
//! These modules hold no items, only documentation. Read them in order for a first tour, or
//! jump to the chapter you need:
//!
//! 1. [`service`]: a TCP server with a fiber per connection, timeouts and a graceful stop.
//! 2. [`tokio`]: calling fibra from tokio and tokio from fibra.
//! 3. [`testing`]: testing code that runs on fibra.
//! 4. [`cancellation`]: scopes, cancel tokens, `shield`, and what joins report.
//! 5. [`blocking`]: do not block the worker — what to use instead of thread-blocking calls.
//! 6. [`load`]: load testing a service with `fibra-load`.
//! 7. [`diagnostics`]: finding out why a program hangs — dumps, holds and deadlocks.
//!
//! The one idea behind all of them: code in a fiber is ordinary blocking-style Rust. A call
//! such as [`sleep`](crate::sleep), [`chan::Reader::recv`](crate::chan::Reader::recv),
//! [`sync::Mutex::lock`](crate::sync::Mutex::lock) or a read on a
//! [`net::TcpStream`](crate::net::TcpStream) suspends only the calling fiber; its worker thread
//! goes on running the other fibers. Outside a runtime the same calls block the thread, so a
//! library written against them works in both places.

pub mod blocking;
pub mod cancellation;
pub mod diagnostics;
pub mod load;
pub mod service;
pub mod testing;
pub mod tokio;
