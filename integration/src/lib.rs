//! tokio interop adapters for fibra, and the cross-crate integration tests.
//!
//! [`SyncIo`] turns any tokio `AsyncRead`/`AsyncWrite` into std `Read`/`Write` inside a fiber;
//! [`IntoTokio`] and [`FromTokio`] move sockets between fibra's blocking-style types and
//! tokio's async ones. Users reach these through the facade as `fibra::io`.

#![forbid(unsafe_code)]

mod convert;
mod sync_io;

pub use convert::{FromTokio, IntoTokio};
pub use sync_io::SyncIo;
