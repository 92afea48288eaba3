//! TCP: listeners and streams.

mod listener;
mod stream;

pub use listener::{Incoming, TcpListener};
pub use stream::TcpStream;
