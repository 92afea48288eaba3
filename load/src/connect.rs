//! The connectors a VU's client can use, behind one boxed type.

use std::io;
use std::time::Duration;

use crate::http::{Connect, Endpoint, Transport};

/// A connection of any transport.
pub(crate) type Conn = Box<dyn Transport>;

impl Transport for Conn {
    fn set_io_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        (**self).set_io_timeout(timeout)
    }

    fn before_response(&mut self) {
        (**self).before_response();
    }
}

type ConnectFn = dyn FnMut(&Endpoint, Duration) -> io::Result<Conn>;

/// A connector of any kind, yielding boxed connections.
pub(crate) struct BoxConnect(Box<ConnectFn>);

impl BoxConnect {
    pub(crate) fn from_fn(
        f: impl FnMut(&Endpoint, Duration) -> io::Result<Conn> + 'static,
    ) -> BoxConnect {
        BoxConnect(Box::new(f))
    }
}

impl Connect for BoxConnect {
    type Conn = Conn;

    fn connect(&mut self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Conn> {
        (self.0)(endpoint, timeout)
    }
}
