//! `UnixDatagram`.

use crate::net::common::{descriptor_methods, timeout_methods, unix_address_methods};
use crate::net::sys;
use crate::source::Source;
use std::io;
use std::os::unix::net::SocketAddr;
use std::path::Path;

/// A Unix domain datagram socket: [`std::os::unix::net::UnixDatagram`]'s shape, where
/// receiving parks the calling fiber until a datagram arrives, and sending to a receiver whose
/// queue is full parks it until there is room. A cancelled `recv` took no datagram; a cancelled
/// send sent nothing (a datagram goes whole or not at all).
///
/// ```
/// use fibra::net::UnixDatagram;
///
/// fibra::run(|| {
///     let (a, b) = UnixDatagram::pair().unwrap();
///     let receiver = fibra::spawn(move || {
///         let mut buf = [0; 8];
///         let n = b.recv(&mut buf).unwrap();
///         buf[..n].to_vec()
///     });
///     a.send(b"one").unwrap();
///     assert_eq!(receiver.join().unwrap(), b"one");
/// });
/// ```
#[derive(Debug)]
pub struct UnixDatagram {
    source: Source<std::os::unix::net::UnixDatagram>,
}

impl UnixDatagram {
    /// Creates a socket bound to the socket file `path`.
    ///
    /// # Errors
    ///
    /// `AddrInUse` when `path` exists, and the OS's other `bind` errors.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        std::os::unix::net::UnixDatagram::bind(path).and_then(UnixDatagram::from_std)
    }

    /// [`bind`](Self::bind) to an address: a path or (on Linux) an abstract name, as
    /// [`std::os::unix::net::UnixDatagram::bind_addr`].
    ///
    /// ```
    /// use fibra::net::UnixDatagram;
    /// use std::os::linux::net::SocketAddrExt;
    /// use std::os::unix::net::SocketAddr;
    ///
    /// fibra::run(|| {
    ///     let name = format!("fibra-doc-dgram-{}", std::process::id());
    ///     let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    ///     let receiver = UnixDatagram::bind_addr(&addr).unwrap();
    ///     let sender = UnixDatagram::unbound().unwrap();
    ///     sender.send_to_addr(b"hi", &addr).unwrap();
    ///     let mut buf = [0; 8];
    ///     assert_eq!(receiver.recv(&mut buf).unwrap(), 2);
    ///     sender.connect_addr(&addr).unwrap();
    ///     sender.send(b"again").unwrap();
    ///     assert_eq!(receiver.recv(&mut buf).unwrap(), 5);
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// The OS's `bind` errors.
    pub fn bind_addr(addr: &std::os::unix::net::SocketAddr) -> io::Result<UnixDatagram> {
        std::os::unix::net::UnixDatagram::bind_addr(addr).and_then(UnixDatagram::from_std)
    }

    /// Creates a socket bound to no address.
    ///
    /// # Errors
    ///
    /// The OS's `socket` errors.
    pub fn unbound() -> io::Result<UnixDatagram> {
        std::os::unix::net::UnixDatagram::unbound().and_then(UnixDatagram::from_std)
    }

    /// A connected pair of sockets.
    ///
    /// # Errors
    ///
    /// The OS's `socketpair` errors.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = std::os::unix::net::UnixDatagram::pair()?;
        Ok((UnixDatagram::from_std(a)?, UnixDatagram::from_std(b)?))
    }

    /// Sets the default peer for [`send`](Self::send) and the only one
    /// [`recv`](Self::recv) accepts datagrams from.
    ///
    /// # Errors
    ///
    /// `NotFound` or `ConnectionRefused` when nobody is bound at `path`.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.source.get().connect(path)
    }

    /// [`connect`](Self::connect) to an address: a path or (on Linux) an abstract name (see
    /// [`bind_addr`](Self::bind_addr)).
    ///
    /// # Errors
    ///
    /// The OS's `connect` errors.
    pub fn connect_addr(&self, addr: &std::os::unix::net::SocketAddr) -> io::Result<()> {
        self.source.get().connect_addr(addr)
    }

    /// Sends `buf` to the socket at `path`, waiting for buffer space.
    ///
    /// # Errors
    ///
    /// The OS's `sendto` errors; `WouldBlock` when the write timeout expired.
    pub fn send_to<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        self.send_to_sockaddr(buf, &socket2::SockAddr::unix(path)?)
    }

    /// [`send_to`](Self::send_to) an address: a path or (on Linux) an abstract name (see
    /// [`bind_addr`](Self::bind_addr)).
    ///
    /// # Errors
    ///
    /// As [`send_to`](Self::send_to); `InvalidInput` for an unnamed address.
    pub fn send_to_addr(
        &self,
        buf: &[u8],
        addr: &std::os::unix::net::SocketAddr,
    ) -> io::Result<usize> {
        self.send_to_sockaddr(buf, &sys::unix_sockaddr(addr)?)
    }

    fn send_to_sockaddr(&self, buf: &[u8], addr: &socket2::SockAddr) -> io::Result<usize> {
        self.write_io(crate::source::never, |socket| {
            sys::send_to(socket, buf, addr)
        })
    }

    /// Receives one datagram, waiting for one. Once the read half is
    /// [shut down](Self::shutdown) and nothing is queued, it returns `Ok(0)` (from an unnamed
    /// address) at once, as std's does.
    ///
    /// # Errors
    ///
    /// The OS's `recvfrom` errors; `WouldBlock` when the read timeout expired.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match self.receive(|socket| sys::recv_from(socket, buf, 0))? {
            Some((n, from)) => Ok((n, sys::unix_addr(&from)?)),
            // The kernel names no sender then, which std gives as an unnamed address.
            None => Ok((0, sys::unnamed()?)),
        }
    }

    /// Sends `buf` to the connected peer.
    ///
    /// # Errors
    ///
    /// `NotConnected` without [`connect`](Self::connect); as [`send_to`](Self::send_to).
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.write_io(crate::source::never, |socket| sys::send(socket, buf))
    }

    /// Receives one datagram from the connected peer.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](Self::recv_from).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self
            .receive(|socket| sys::recv(socket, buf, 0))?
            .unwrap_or(0))
    }

    /// Runs the receive `op` until it does not say `WouldBlock`; `None` when there is no
    /// datagram and the read half is shut down, where std's blocking receive returns at once
    /// with nothing. The kernel's non-blocking receive says `WouldBlock` then (as std's does in
    /// non-blocking mode) while the socket stays readable, so a wait would retry for ever.
    fn receive<R>(
        &self,
        mut op: impl FnMut(&std::os::unix::net::UnixDatagram) -> io::Result<R>,
    ) -> io::Result<Option<R>> {
        self.read_io(crate::source::never, |socket| match op(socket) {
            Err(error)
                if error.kind() == io::ErrorKind::WouldBlock
                    && !self.source.is_nonblocking()
                    && sys::read_shut_down(socket)? =>
            {
                Ok(None)
            }
            result => result.map(Some),
        })
    }
}

descriptor_methods!(UnixDatagram, std::os::unix::net::UnixDatagram);
timeout_methods!(UnixDatagram, std::os::unix::net::UnixDatagram);
unix_address_methods!(UnixDatagram);
