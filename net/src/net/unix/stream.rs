//! `UnixStream`.

use crate::net::common::{descriptor_methods, stream_io, timeout_methods, unix_address_methods};
use crate::net::sys;
use crate::source::Source;
use socket2::{Domain, SockAddr, Socket, Type};
use std::io;
use std::path::Path;

/// A Unix domain stream socket: [`std::os::unix::net::UnixStream`]'s shape, with `Read` and
/// `Write` (also for `&UnixStream`) that park the calling fiber until the socket is ready.
///
/// ```
/// use fibra::net::UnixStream;
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let (a, mut b) = UnixStream::pair().unwrap();
///     let writer = fibra::spawn(move || (&a).write_all(b"pair").unwrap());
///     let mut got = [0; 4];
///     b.read_exact(&mut got).unwrap();
///     assert_eq!(&got, b"pair");
///     writer.join().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct UnixStream {
    source: Source<std::os::unix::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`. When the listener's backlog is full the connect
    /// waits on the blocking pool, as std's would block.
    ///
    /// # Errors
    ///
    /// `NotFound` when nothing is at `path`, `ConnectionRefused` when nobody listens there.
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let path = path.as_ref().to_owned();
        UnixStream::connect_to(&SockAddr::unix(&path)?, move || {
            std::os::unix::net::UnixStream::connect(path)
        })
    }

    /// [`connect`](Self::connect) to an address: a path or (on Linux) an abstract name, as
    /// [`std::os::unix::net::UnixStream::connect_addr`].
    ///
    /// ```
    /// use fibra::net::{UnixListener, UnixStream};
    /// use std::os::linux::net::SocketAddrExt;
    /// use std::os::unix::net::SocketAddr;
    ///
    /// fibra::run(|| {
    ///     let name = format!("fibra-doc-{}", std::process::id());
    ///     let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    ///     let listener = UnixListener::bind_addr(&addr).unwrap();
    ///     let client = UnixStream::connect_addr(&addr).unwrap();
    ///     let (server, _) = listener.accept().unwrap();
    ///     assert_eq!(server.local_addr().unwrap().as_abstract_name(), Some(name.as_bytes()));
    ///     drop(client);
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect); `InvalidInput` for an unnamed address.
    pub fn connect_addr(addr: &std::os::unix::net::SocketAddr) -> io::Result<UnixStream> {
        let std_addr = addr.clone();
        UnixStream::connect_to(&sys::unix_sockaddr(addr)?, move || {
            std::os::unix::net::UnixStream::connect_addr(&std_addr)
        })
    }

    /// Connects a new socket to `addr`; `blocking` connects where the listener's backlog is
    /// full (a Unix connect then waits with no readiness to wait for).
    fn connect_to(
        addr: &SockAddr,
        blocking: impl FnOnce() -> io::Result<std::os::unix::net::UnixStream> + Send + 'static,
    ) -> io::Result<UnixStream> {
        let socket = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
        match socket.connect(addr) {
            // A socket made here has no timeouts: its first wait need not ask the kernel.
            Ok(()) => Ok(UnixStream {
                source: Source::without_timeouts(socket.into()),
            }),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                UnixStream::from_std(fibra_runtime::blocking(blocking)?)
            }
            Err(error) => Err(error),
        }
    }

    /// A connected pair of sockets.
    ///
    /// # Errors
    ///
    /// The OS's `socketpair` errors.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, UnixStream::from_std(b)?))
    }
}

descriptor_methods!(UnixStream, std::os::unix::net::UnixStream);
timeout_methods!(UnixStream, std::os::unix::net::UnixStream);
unix_address_methods!(UnixStream);
stream_io!(UnixStream);
