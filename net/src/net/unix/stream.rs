//! `UnixStream`.

use crate::net::common::{descriptor_methods, stream_io, timeout_methods, unix_address_methods};
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
        let addr = SockAddr::unix(path.as_ref())?;
        let socket = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
        match socket.connect(&addr) {
            // A socket made here has no timeouts: its first wait need not ask the kernel.
            Ok(()) => Ok(UnixStream {
                source: Source::without_timeouts(socket.into()),
            }),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                let path = path.as_ref().to_owned();
                let stream =
                    fibra_runtime::blocking(move || std::os::unix::net::UnixStream::connect(path))?;
                UnixStream::from_std(stream)
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
