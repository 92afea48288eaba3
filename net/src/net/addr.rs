//! Socket addresses from what std's `ToSocketAddrs` takes, with host names resolved off the
//! worker.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::{option, vec};

/// Values that name one or more socket addresses: the same types as
/// [`std::net::ToSocketAddrs`] takes (`SocketAddr`, `(IpAddr, u16)`, `"host:port"`,
/// `("host", port)`, `&[SocketAddr]`, …).
///
/// A literal address costs nothing. A host name is resolved on the blocking pool when the
/// caller is a fiber (on a plain thread, right there), so name lookup never blocks a worker.
/// Functions that take it try each address in turn, as std does, and report the last error.
///
/// This trait is sealed: its method is fibra's own.
pub trait ToSocketAddrs: sealed::Resolve {}

impl<T: sealed::Resolve + ?Sized> ToSocketAddrs for T {}

pub(crate) mod sealed {
    use super::Addrs;
    use std::io;

    /// The resolution behind [`ToSocketAddrs`](super::ToSocketAddrs).
    pub trait Resolve {
        /// Every address this names, in order.
        fn resolve(&self) -> io::Result<Addrs>;
    }
}

/// The addresses a [`ToSocketAddrs`] value names.
#[derive(Debug)]
pub struct Addrs(Inner);

#[derive(Debug)]
enum Inner {
    One(option::IntoIter<SocketAddr>),
    Many(vec::IntoIter<SocketAddr>),
}

impl Iterator for Addrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        match &mut self.0 {
            Inner::One(one) => one.next(),
            Inner::Many(many) => many.next(),
        }
    }
}

fn one(addr: SocketAddr) -> io::Result<Addrs> {
    Ok(Addrs(Inner::One(Some(addr).into_iter())))
}

fn many(addrs: Vec<SocketAddr>) -> io::Result<Addrs> {
    Ok(Addrs(Inner::Many(addrs.into_iter())))
}

/// Resolves `host` on the blocking pool (inline on a plain thread).
fn lookup(host: &str, port: u16) -> io::Result<Addrs> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return one(SocketAddr::new(ip, port));
    }
    let host = host.to_owned();
    let found = fibra_runtime::blocking(move || {
        std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)).map(Iterator::collect)
    })?;
    many(found)
}

/// Splits `"host:port"` (the port after the last colon) and resolves it.
fn lookup_joined(text: &str) -> io::Result<Addrs> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return one(addr);
    }
    let invalid = || io::Error::new(io::ErrorKind::InvalidInput, "invalid socket address");
    let (host, port) = text.rsplit_once(':').ok_or_else(invalid)?;
    let port = port.parse::<u16>().map_err(|_| invalid())?;
    lookup(host, port)
}

macro_rules! literal {
    ($($ty:ty),*) => {$(
        impl sealed::Resolve for $ty {
            fn resolve(&self) -> io::Result<Addrs> {
                one(SocketAddr::from(*self))
            }
        }
    )*};
}

literal!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16)
);

impl sealed::Resolve for (&str, u16) {
    fn resolve(&self) -> io::Result<Addrs> {
        lookup(self.0, self.1)
    }
}

impl sealed::Resolve for (String, u16) {
    fn resolve(&self) -> io::Result<Addrs> {
        lookup(&self.0, self.1)
    }
}

impl sealed::Resolve for str {
    fn resolve(&self) -> io::Result<Addrs> {
        lookup_joined(self)
    }
}

impl sealed::Resolve for String {
    fn resolve(&self) -> io::Result<Addrs> {
        lookup_joined(self)
    }
}

impl sealed::Resolve for [SocketAddr] {
    fn resolve(&self) -> io::Result<Addrs> {
        many(self.to_vec())
    }
}

impl<T: sealed::Resolve + ?Sized> sealed::Resolve for &T {
    fn resolve(&self) -> io::Result<Addrs> {
        (**self).resolve()
    }
}

/// Calls `f` with each address `addr` names until one succeeds; the last error otherwise.
pub(crate) fn each_addr<A, T>(
    addr: A,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T>
where
    A: ToSocketAddrs,
{
    let mut last = None;
    for addr in addr.resolve()? {
        match f(addr) {
            Ok(value) => return Ok(value),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any addresses",
        )
    }))
}

/// The first address `addr` names, as std's `send_to` uses.
pub(crate) fn first<A: ToSocketAddrs>(addr: A) -> io::Result<SocketAddr> {
    addr.resolve()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to"))
}
