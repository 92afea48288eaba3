//! `UdpSocket`.

use crate::net::addr::{each_addr, ToSocketAddrs};
use crate::net::common::{descriptor_methods, option_methods, timeout_methods};
use crate::net::sys;
use crate::source::Source;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// A UDP socket: [`std::net::UdpSocket`]'s shape, where receiving parks the calling fiber (or
/// blocks a plain thread) until a datagram arrives, and sending until there is buffer space.
///
/// Every call is a cancellation point; a cancelled `recv` took no datagram.
///
/// ```
/// use fibra::net::UdpSocket;
///
/// fibra::run(|| {
///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b_addr = b.local_addr().unwrap();
///     let receiver = fibra::spawn(move || {
///         let mut buf = [0; 16];
///         let (n, from) = b.recv_from(&mut buf).unwrap();
///         (buf[..n].to_vec(), from)
///     });
///     a.send_to(b"datagram", b_addr).unwrap();
///     let (got, from) = receiver.join().unwrap();
///     assert_eq!(got, b"datagram");
///     assert_eq!(from, a.local_addr().unwrap());
/// });
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    source: Source<std::net::UdpSocket>,
}

impl UdpSocket {
    /// Creates a socket bound to `addr` (port 0 picks a free port), trying each address it
    /// names in turn.
    ///
    /// # Errors
    ///
    /// `AddrInUse`, `AddrNotAvailable`, a failed name lookup, or `InvalidInput` when `addr`
    /// names no address.
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        each_addr(addr, std::net::UdpSocket::bind).and_then(UdpSocket::from_std)
    }

    /// Sets the default peer for [`send`](Self::send) and the only one [`recv`](Self::recv)
    /// accepts datagrams from; the first address `addr` names that works.
    ///
    /// # Errors
    ///
    /// A failed name lookup, the OS's `connect` errors, or `InvalidInput` when `addr` names no
    /// address.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let a = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     a.connect(b.local_addr().unwrap()).unwrap();
    ///     b.connect(a.local_addr().unwrap()).unwrap();
    ///     a.send(b"hi").unwrap();
    ///     let mut buf = [0; 2];
    ///     assert_eq!(b.recv(&mut buf).unwrap(), 2);
    /// });
    /// ```
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        each_addr(addr, |addr| self.source.get().connect(addr))
    }

    /// Sends `buf` to `addr` (the first address it names), waiting for buffer space.
    ///
    /// # Errors
    ///
    /// The OS's `sendto` errors; `InvalidInput` when `addr` names no address; `WouldBlock`
    /// when the write timeout expired.
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        let addr = socket2::SockAddr::from(crate::net::addr::first(addr)?);
        self.write_io(crate::source::never, |socket| {
            sys::send_to(socket, buf, &addr)
        })
    }

    /// Receives one datagram, waiting for one; bytes beyond `buf`'s length are discarded.
    ///
    /// # Errors
    ///
    /// The OS's `recvfrom` errors (`ConnectionRefused` after an ICMP error on a connected
    /// socket); `WouldBlock` when the read timeout expired.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.receive_from(buf, 0)
    }

    /// Like [`recv_from`](Self::recv_from), but leaves the datagram queued.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](Self::recv_from).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let socket = fibra::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let addr = socket.local_addr().unwrap();
    ///     socket.send_to(b"twice", addr).unwrap();
    ///     let mut buf = [0; 8];
    ///     assert_eq!(socket.peek_from(&mut buf).unwrap(), (5, addr));
    ///     assert_eq!(socket.recv_from(&mut buf).unwrap(), (5, addr));
    /// });
    /// ```
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.receive_from(buf, libc::MSG_PEEK)
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
        self.read_io(crate::source::never, |socket| sys::recv(socket, buf, 0))
    }

    /// Like [`recv`](Self::recv), but leaves the datagram queued.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](Self::recv_from).
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_io(crate::source::never, |socket| {
            sys::recv(socket, buf, libc::MSG_PEEK)
        })
    }

    /// `recv_from` or `peek_from`, as `flags` says.
    fn receive_from(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<(usize, SocketAddr)> {
        let (n, from) = self.read_io(crate::source::never, |socket| {
            sys::recv_from(socket, buf, flags)
        })?;
        Ok((n, sys::ip_addr(&from)?))
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// The OS's `getsockname` errors.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    ///
    /// `NotConnected` without [`connect`](Self::connect).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.source.get().peer_addr()
    }
}

option_methods!(UdpSocket {
    /// Allows sending to broadcast addresses (`SO_BROADCAST`).
    setsockopt fn set_broadcast(&self, broadcast: bool) -> ();
    /// Whether `SO_BROADCAST` is set.
    getsockopt fn broadcast(&self) -> bool;
    /// Sets the IP time-to-live.
    setsockopt fn set_ttl(&self, ttl: u32) -> ();
    /// The IP time-to-live.
    getsockopt fn ttl(&self) -> u32;
    /// Joins the IPv4 multicast group `multiaddr` on the interface with address `interface`
    /// (`0.0.0.0`: the system picks one), as [`std::net::UdpSocket::join_multicast_v4`].
    setsockopt("`IP_ADD_MEMBERSHIP`")
    fn join_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> ();
    /// Leaves the IPv4 multicast group `multiaddr` on the interface `interface`.
    setsockopt("`IP_DROP_MEMBERSHIP`")
    fn leave_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> ();
    /// Joins the IPv6 multicast group `multiaddr` on the interface of index `interface` (0:
    /// the system picks one).
    setsockopt("`IPV6_ADD_MEMBERSHIP`")
    fn join_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> ();
    /// Leaves the IPv6 multicast group `multiaddr` on the interface of index `interface`.
    setsockopt("`IPV6_DROP_MEMBERSHIP`")
    fn leave_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> ();
    /// Whether IPv4 multicast datagrams this socket sends loop back to the local host
    /// (`IP_MULTICAST_LOOP`).
    setsockopt fn set_multicast_loop_v4(&self, on: bool) -> ();
    /// Whether `IP_MULTICAST_LOOP` is set.
    getsockopt fn multicast_loop_v4(&self) -> bool;
    /// The time-to-live of IPv4 multicast datagrams this socket sends (`IP_MULTICAST_TTL`;
    /// 1 by default: they stay on the local network).
    setsockopt fn set_multicast_ttl_v4(&self, ttl: u32) -> ();
    /// The `IP_MULTICAST_TTL` value.
    getsockopt fn multicast_ttl_v4(&self) -> u32;
    /// Whether IPv6 multicast datagrams this socket sends loop back to the local host
    /// (`IPV6_MULTICAST_LOOP`).
    setsockopt("an IPv4 socket has no IPv6 options")
    fn set_multicast_loop_v6(&self, on: bool) -> ();
    /// Whether `IPV6_MULTICAST_LOOP` is set.
    getsockopt fn multicast_loop_v6(&self) -> bool;
});

descriptor_methods!(UdpSocket, std::net::UdpSocket);
timeout_methods!(UdpSocket, std::net::UdpSocket);
