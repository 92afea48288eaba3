//! Connections over `fibra::net`: TCP now, TLS with the `rustls` client.

use std::io;
use std::sync::Arc;

use crate::connect::BoxConnect;
use crate::run::ConnectorFactory;

/// The connector every VU uses unless told otherwise.
pub(crate) fn connector() -> ConnectorFactory {
    Arc::new(|| {
        BoxConnect::from_fn(|_, _| {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no network transport yet",
            ))
        })
    })
}
