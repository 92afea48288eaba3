//! Unix domain sockets: listeners, streams and datagrams.

mod datagram;
mod listener;
mod stream;

pub use datagram::UnixDatagram;
pub use listener::{Incoming, UnixListener};
pub use stream::UnixStream;
