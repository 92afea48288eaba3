//! What the network examples share: their one optional argument.

use std::io;

/// The optional first argument, a port number; 0 (any free port) when absent.
pub(crate) fn port_argument() -> io::Result<u16> {
    match std::env::args().nth(1) {
        None => Ok(0),
        Some(port) => port.parse().map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("not a port: {port:?}"))
        }),
    }
}
