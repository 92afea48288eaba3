//! `UnixListener`.

use crate::net::common::descriptor_methods;
use crate::net::unix::UnixStream;
use crate::source::{IoTimeout, Source};
use std::io;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use tokio::io::Interest;

/// A Unix domain socket server: [`std::os::unix::net::UnixListener`]'s shape, where
/// [`accept`](Self::accept) parks the calling fiber (or blocks a plain thread) until a
/// connection arrives. A cancelled `accept` took no connection.
///
/// ```
/// use fibra::net::{UnixListener, UnixStream};
/// use std::io::{Read, Write};
///
/// let dir = std::env::temp_dir().join(format!("fibra-doc-unix-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("listener.sock");
/// let _ = std::fs::remove_file(&path);
/// fibra::run(|| {
///     let listener = UnixListener::bind(&path).unwrap();
///     let client = fibra::spawn({
///         let path = path.clone();
///         move || UnixStream::connect(path).unwrap().write_all(b"local").unwrap()
///     });
///     let (mut conn, _) = listener.accept().unwrap();
///     let mut got = String::new();
///     conn.read_to_string(&mut got).unwrap();
///     assert_eq!(got, "local");
///     client.join().unwrap();
/// });
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct UnixListener {
    source: Source<std::os::unix::net::UnixListener>,
}

impl UnixListener {
    /// Creates a listener bound to the socket file `path` (which must not exist yet).
    ///
    /// # Errors
    ///
    /// `AddrInUse` when `path` exists, `NotFound` for a missing directory, and the OS's
    /// other `bind` errors.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        std::os::unix::net::UnixListener::bind(path).and_then(UnixListener::from_std)
    }

    /// [`bind`](Self::bind) to an address: a path or (on Linux) an abstract name, as
    /// [`std::os::unix::net::UnixListener::bind_addr`] (see
    /// [`UnixStream::connect_addr`](crate::net::UnixStream::connect_addr)).
    ///
    /// # Errors
    ///
    /// The OS's `bind` and `listen` errors.
    pub fn bind_addr(addr: &std::os::unix::net::SocketAddr) -> io::Result<UnixListener> {
        std::os::unix::net::UnixListener::bind_addr(addr).and_then(UnixListener::from_std)
    }

    /// Accepts a connection, waiting for one if none is pending.
    ///
    /// # Errors
    ///
    /// The OS's accept errors (for example `WouldBlock` in non-blocking mode).
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, addr) = self.source.io(
            Interest::READABLE,
            |_| Ok(IoTimeout::Never),
            crate::source::never,
            |listener| listener.accept(),
        )?;
        Ok((UnixStream::from_std(stream)?, addr))
    }

    /// An endless iterator of accepted connections.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address the listener is bound to.
    ///
    /// # Errors
    ///
    /// The OS's `getsockname` errors.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().local_addr()
    }
}

descriptor_methods!(UnixListener, std::os::unix::net::UnixListener);

/// The iterator of [`UnixListener::incoming`]: it never returns `None`.
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<UnixStream>;

    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}
