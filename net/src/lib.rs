//! fibra's I/O: TCP, UDP and Unix sockets, name lookup, child processes and files with the
//! shapes of `std::net`, `std::process` and `std::fs`, blocking only the calling fiber.
//!
//! A call first makes the non-blocking syscall on the fiber's own worker; only when that would
//! block does the fiber register with the driver's reactor and park until the descriptor is
//! ready. On a plain thread the same types block the thread, so one type serves both. Any
//! synchronous library that takes `Read + Write` therefore scales like async code in fibers.
//!
//! Users reach this crate through the `fibra` facade (`fibra::net`, `fibra::os`, `fibra::fs`).

pub mod fs;
pub mod net;
pub mod os;
mod retries;
mod source;
mod thread_wait;
mod timeouts;
