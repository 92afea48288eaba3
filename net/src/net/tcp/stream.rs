//! `TcpStream`.

use crate::net::addr::{each_addr, ToSocketAddrs};
use crate::net::common::{descriptor_methods, stream_io, timeout_methods};
use crate::net::sys;
use crate::source::{IoTimeout, Source};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;
use tokio::io::Interest;

/// A TCP connection: [`std::net::TcpStream`]'s shape, where reads and writes park the calling
/// fiber (or block a plain thread) until the socket is ready.
///
/// `Read` and `Write` are implemented for `TcpStream` and for `&TcpStream`, so one fiber may
/// read while another writes through a shared reference or a [`try_clone`](Self::try_clone).
///
/// Each call first tries the syscall; only when the socket is not ready does the fiber wait
/// for the driver's reactor. Every call is a cancellation point and costs the fiber one
/// reduction (so a fiber whose socket is always ready still takes turns); a cancelled `read`
/// consumed nothing, while a cancelled `write_all` may already have sent a prefix of its
/// buffer (the writes that completed before the cancellation).
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
/// use std::io::{BufRead, BufReader, Write};
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     fibra::spawn(move || {
///         let (conn, _) = listener.accept().unwrap();
///         let mut line = String::new();
///         BufReader::new(&conn).read_line(&mut line).unwrap();
///         (&conn).write_all(line.to_uppercase().as_bytes()).unwrap();
///     });
///     let mut stream = TcpStream::connect(addr).unwrap();
///     stream.write_all(b"hello\n").unwrap();
///     let mut reply = String::new();
///     BufReader::new(&stream).read_line(&mut reply).unwrap();
///     assert_eq!(reply, "HELLO\n");
/// });
/// ```
#[derive(Debug)]
pub struct TcpStream {
    source: Source<std::net::TcpStream>,
}

impl TcpStream {
    /// Opens a connection to `addr`, trying each address it names in turn.
    ///
    /// # Errors
    ///
    /// `ConnectionRefused`, `HostUnreachable`, `NetworkUnreachable`, a failed name lookup, or
    /// `InvalidInput` when `addr` names no address; the last address's error when all fail.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let port = listener.local_addr().unwrap().port();
    ///     // Host names resolve off the worker; each address is tried in turn.
    ///     let stream = fibra::net::TcpStream::connect(("localhost", port)).unwrap();
    ///     assert_eq!(stream.peer_addr().unwrap().port(), port);
    ///     drop(listener);
    ///     let refused = fibra::net::TcpStream::connect(("127.0.0.1", port)).unwrap_err();
    ///     assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    /// });
    /// ```
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        each_addr(addr, |addr| TcpStream::connect_with(addr, IoTimeout::Never))
    }

    /// Opens a connection to `addr`, giving up with `TimedOut` after `timeout`.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect); `TimedOut` when the time ran out; `InvalidInput` for a
    /// zero timeout (as std).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let stream = fibra::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    ///     assert_eq!(stream.peer_addr().unwrap(), addr);
    /// });
    /// ```
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        TcpStream::connect_with(*addr, IoTimeout::After(timeout, io::ErrorKind::TimedOut))
    }

    fn connect_with(addr: SocketAddr, deadline: IoTimeout) -> io::Result<TcpStream> {
        let socket = Socket::new(
            Domain::for_address(addr),
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        let started = socket.connect(&SockAddr::from(addr));
        // A socket made here has no timeouts: its first wait need not ask the kernel.
        let stream = TcpStream {
            source: Source::without_timeouts(socket.into()),
        };
        match started {
            Ok(()) => return Ok(stream),
            Err(error) if error.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(error) => return Err(error),
        }
        stream.source.io(
            Interest::WRITABLE,
            |_| Ok(deadline),
            crate::source::never,
            // A peer address means connected (an error arriving after that is the next
            // call's, as after a blocking connect); only an unconnected socket has its
            // pending error asked for, so a loopback connect, done at once, costs one call.
            |socket| match socket.peer_addr() {
                Ok(_) => Ok(()),
                Err(error) if error.kind() == io::ErrorKind::NotConnected => {
                    match socket.take_error()? {
                        Some(error) => Err(error),
                        // Not connected yet: in progress, or a spurious wake-up.
                        None => Err(io::ErrorKind::WouldBlock.into()),
                    }
                }
                Err(error) => Err(error),
            },
        )?;
        Ok(stream)
    }

    pub(crate) fn from_nonblocking(stream: std::net::TcpStream) -> TcpStream {
        TcpStream {
            source: Source::nonblocking(stream),
        }
    }

    /// Reads into `buf` without removing the data from the socket's queue, waiting for data
    /// if there is none. `Ok(0)`: the peer closed its side.
    ///
    /// # Errors
    ///
    /// As [`read`](std::io::Read::read).
    ///
    /// ```
    /// use std::io::{Read, Write};
    ///
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let mut client = fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    ///     let (mut conn, _) = listener.accept().unwrap();
    ///     client.write_all(b"x").unwrap();
    ///     let mut buf = [0; 1];
    ///     assert_eq!(conn.peek(&mut buf).unwrap(), 1);
    ///     assert_eq!(conn.read(&mut buf).unwrap(), 1);
    /// });
    /// ```
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_io(crate::source::never, |socket| {
            sys::recv(socket, buf, libc::MSG_PEEK)
        })
    }

    /// Shuts down the read half, the write half or both. After `Shutdown::Write` the peer
    /// reads end-of-file; readers of a `Shutdown::Read` socket get `Ok(0)`.
    ///
    /// # Errors
    ///
    /// The OS's `shutdown` errors (`NotConnected`).
    ///
    /// ```
    /// use std::io::Read;
    ///
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let client = fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    ///     let (mut conn, _) = listener.accept().unwrap();
    ///     client.shutdown(std::net::Shutdown::Write).unwrap();
    ///     assert_eq!(conn.read(&mut [0; 8]).unwrap(), 0);
    /// });
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.source.get().shutdown(how)
    }

    /// The remote address.
    ///
    /// # Errors
    ///
    /// `NotConnected` and the OS's other `getpeername` errors.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().peer_addr()
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The OS's `getsockname` errors.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().local_addr()
    }

    /// Sets `TCP_NODELAY` (disables Nagle's algorithm when `true`).
    ///
    /// # Errors
    ///
    /// The OS's `setsockopt` errors.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let stream = fibra::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    ///     stream.set_nodelay(true).unwrap();
    ///     assert!(stream.nodelay().unwrap());
    /// });
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.source.get().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    ///
    /// The OS's `getsockopt` errors.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.source.get().nodelay()
    }

    /// Sets the IP time-to-live.
    ///
    /// # Errors
    ///
    /// The OS's `setsockopt` errors.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.source.get().set_ttl(ttl)
    }

    /// The IP time-to-live.
    ///
    /// # Errors
    ///
    /// The OS's `getsockopt` errors.
    pub fn ttl(&self) -> io::Result<u32> {
        self.source.get().ttl()
    }
}

descriptor_methods!(TcpStream, std::net::TcpStream);
timeout_methods!(TcpStream, std::net::TcpStream);
stream_io!(TcpStream);
