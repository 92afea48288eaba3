//! `UnixStream`.

use crate::net::common::{descriptor_methods, stream_io, timeout_methods, unix_address_methods};
use crate::net::sys;
use crate::source::Source;
use socket2::{Domain, SockAddr, Socket, Type};
use std::io;
use std::path::Path;
use std::time::Duration;

/// The pauses between the tries of a connect to a full backlog: a listener that keeps up
/// makes room within the first few, one that has stalled costs a wake-up every `LAST_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LAST_PAUSE: Duration = Duration::from_millis(16);

/// A Unix domain stream socket: [`std::os::unix::net::UnixStream`]'s shape, with `Read` and
/// `Write` (also for `&UnixStream`) that park the calling fiber until the socket is ready.
/// Every call is a cancellation point; a cancelled `read` consumed nothing, while a cancelled
/// `write_all` may already have sent a prefix of its buffer (the writes that completed before
/// the cancellation).
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
    /// waits for room, as std's would block, in the calling fiber: the wait is a cancellation
    /// point (a deadline of the caller's scope ends it), and it tries again after a pause that
    /// grows from 1 ms to 16 ms, as nothing tells when the listener accepts.
    ///
    /// ```
    /// use fibra::net::{UnixListener, UnixStream};
    ///
    /// fibra::run(|| {
    ///     let path = std::env::temp_dir().join(format!("fibra-doc-{}.sock", std::process::id()));
    ///     let _ = std::fs::remove_file(&path);
    ///     let listener = UnixListener::bind(&path).unwrap();
    ///     let client = UnixStream::connect(&path).unwrap();
    ///     let (server, _) = listener.accept().unwrap();
    ///     assert_eq!(client.peer_addr().unwrap().as_pathname(), Some(path.as_path()));
    ///     drop((client, server));
    ///     std::fs::remove_file(&path).unwrap();
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// `NotFound` when nothing is at `path`, `ConnectionRefused` when nobody listens there.
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        UnixStream::connect_to(&SockAddr::unix(path)?)
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
        UnixStream::connect_to(&sys::unix_sockaddr(addr)?)
    }

    /// Connects a new socket to `addr`.
    fn connect_to(addr: &SockAddr) -> io::Result<UnixStream> {
        let socket = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
        let mut pause = FIRST_PAUSE;
        loop {
            match socket.connect(addr) {
                // A socket made here has no timeouts: its first wait need not ask the kernel.
                Ok(()) => {
                    return Ok(UnixStream {
                        source: Source::without_timeouts(socket.into()),
                    })
                }
                // The listener's backlog is full, and no readiness event says when it has
                // room: the socket is left unconnected, so the same one tries again. A blocking
                // connect on the pool instead could not be cancelled and would hold a thread.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    fibra_runtime::sleep(pause);
                    pause = (pause * 2).min(LAST_PAUSE);
                }
                Err(error) => return Err(error),
            }
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
