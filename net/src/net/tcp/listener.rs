//! `TcpListener`.

use crate::net::addr::{each_addr, ToSocketAddrs};
use crate::net::common::descriptor_methods;
use crate::net::TcpStream;
use crate::source::{IoTimeout, Source};
use std::io;
use std::net::SocketAddr;
use tokio::io::Interest;

/// A TCP socket server, listening for connections: [`std::net::TcpListener`]'s shape, where
/// [`accept`](Self::accept) parks the calling fiber (or blocks a plain thread) until a
/// connection arrives.
///
/// Accepted streams are [`TcpStream`]s. `accept` is a cancellation point; a cancelled
/// `accept` took no connection, and the listener stays usable.
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = fibra::spawn(move || {
///         let mut stream = TcpStream::connect(addr).unwrap();
///         stream.write_all(b"ping").unwrap();
///     });
///     let (mut conn, _) = listener.accept().unwrap();
///     let mut got = String::new();
///     conn.read_to_string(&mut got).unwrap();
///     assert_eq!(got, "ping");
///     client.join().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct TcpListener {
    source: Source<std::net::TcpListener>,
}

impl TcpListener {
    /// Creates a listener bound to `addr` (port 0 picks a free port), trying each address it
    /// names in turn.
    ///
    /// # Errors
    ///
    /// `AddrInUse`, `AddrNotAvailable`, `PermissionDenied`, a failed name lookup, or
    /// `InvalidInput` when `addr` names no address.
    ///
    /// ```
    /// let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// assert_ne!(listener.local_addr().unwrap().port(), 0);
    /// let taken = fibra::net::TcpListener::bind(listener.local_addr().unwrap()).unwrap_err();
    /// assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
    /// ```
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        each_addr(addr, std::net::TcpListener::bind).and_then(TcpListener::from_std)
    }

    /// Accepts a connection, waiting for one if none is pending.
    ///
    /// # Errors
    ///
    /// The OS's accept errors (for example `WouldBlock` in non-blocking mode).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let client = fibra::spawn(move || fibra::net::TcpStream::connect(addr).unwrap());
    ///     let (_conn, peer) = listener.accept().unwrap();
    ///     assert_eq!(peer, client.join().unwrap().local_addr().unwrap());
    /// });
    /// ```
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (socket, peer) = self.source.io(
            Interest::READABLE,
            |_| Ok(IoTimeout::Never),
            crate::source::never,
            |listener| {
                socket2::SockRef::from(listener).accept4(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
            },
        )?;
        let peer = peer.as_socket().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "accepted a non-IP peer address")
        })?;
        Ok((TcpStream::from_nonblocking(socket.into()), peer))
    }

    /// An endless iterator of accepted connections ([`accept`](Self::accept) in a loop,
    /// without the peer addresses).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     fibra::spawn(move || {
    ///         for _ in 0..3 {
    ///             fibra::net::TcpStream::connect(addr).unwrap();
    ///         }
    ///     });
    ///     assert_eq!(listener.incoming().take(3).filter(Result::is_ok).count(), 3);
    /// });
    /// ```
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address the listener is bound to: with port 0 given to `bind`, the port the OS
    /// picked.
    ///
    /// # Errors
    ///
    /// The OS's `getsockname` errors.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     assert!(addr.ip().is_loopback());
    ///     assert_ne!(addr.port(), 0);
    /// });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().local_addr()
    }

    /// Sets the IP time-to-live of accepted connections.
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

/// The iterator of [`TcpListener::incoming`]: it never returns `None`.
///
/// Each item is one `accept`: a connection, or the error of an accept that failed (a client
/// that reset before it was accepted, no file descriptors left). Such an error does not end
/// the iterator; a server logs it and goes on. Cancelling the accepting fiber's scope is how
/// the loop ends.
///
/// ```
/// use fibra::net::{TcpListener, TcpStream};
///
/// fibra::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = fibra::spawn(move || TcpStream::connect(addr).unwrap());
///     let mut incoming: fibra::net::Incoming<'_> = listener.incoming();
///     let accepted = incoming.next().unwrap().unwrap();
///     let client = client.join().unwrap();
///     assert_eq!(accepted.peer_addr().unwrap(), client.local_addr().unwrap());
/// });
/// ```
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}

descriptor_methods!(TcpListener, std::net::TcpListener);
