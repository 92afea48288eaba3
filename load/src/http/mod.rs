//! The HTTP/1.1 client: request encoding, response parsing, keep-alive connections.

mod client;
mod error;
mod request;
mod response;
mod url;

pub(crate) use client::Timed;
pub use client::{Client, Connect, Exchange, Failure, Transport};
pub use error::{ErrorKind, HttpError};
pub use request::{Prepared, Request};
pub use response::Response;
pub use url::{Endpoint, Scheme, Url};
