//! The transfers of the socket types, made so that they never block, whatever the socket's
//! blocking mode.
//!
//! `O_NONBLOCK` belongs to the open file description, which a socket shares with every
//! descriptor duplicated from it: its `try_clone`s, and the std socket `into_std` hands back in
//! blocking mode, as std's users expect. A call that relied on the flag would then block its
//! worker's thread. So every call here asks for a non-blocking transfer itself
//! (`MSG_DONTWAIT`) and says `WouldBlock` instead of waiting, whatever the flag says.

use socket2::{SockAddr, SockRef};
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr as UnixSocketAddr;
use std::sync::OnceLock;

/// The flags of every send: never block; and a peer that has gone says `EPIPE` rather than
/// raising `SIGPIPE`, as std's sends on TCP and UDP sockets do.
const SEND: libc::c_int = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;

/// The most buffers one vectored transfer takes. The kernel refuses a call with more
/// (`EMSGSIZE`); std's `readv` and `writev` transfer through the first that many, as the
/// vectored calls here do.
const MAX_BUFS: usize = libc::UIO_MAXIOV as usize;

/// The bytes one vectored transfer of `bufs` can move: those of the buffers it takes.
pub(crate) fn vectored_len<B: std::ops::Deref<Target = [u8]>>(bufs: &[B]) -> usize {
    bufs.iter().take(MAX_BUFS).map(|buf| buf.len()).sum()
}

/// `recv(2)` into `buf` with `flags` (`MSG_PEEK`, say).
pub(crate) fn recv(socket: impl AsFd, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    let fd = socket.as_fd().as_raw_fd();
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes throughout the call, which writes
    // at most that many (initialised) bytes into it; `socket` is borrowed, so `fd` is open.
    let received = unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags | libc::MSG_DONTWAIT,
        )
    };
    result(received)
}

/// `recvmsg(2)` into the first [`MAX_BUFS`] of `bufs`, without addresses or control messages.
pub(crate) fn recv_vectored(socket: impl AsFd, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
    let fd = socket.as_fd().as_raw_fd();
    // SAFETY: `msghdr` is plain data (pointers, lengths and flags) for which all zeroes is a
    // valid value: no name, no buffers, no control data.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = bufs.as_mut_ptr().cast();
    message.msg_iovlen = bufs.len().min(MAX_BUFS);
    // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` on Unix (std guarantees it), so
    // `msg_iov` points at `msg_iovlen` valid `iovec`s, each naming a buffer valid for writes
    // throughout the call, which writes only initialised bytes into them; there is no name
    // or control buffer. `socket` is borrowed, so `fd` is open.
    let received = unsafe { libc::recvmsg(fd, &mut message, libc::MSG_DONTWAIT) };
    result(received)
}

/// `recvfrom(2)` into `buf` with `flags`, and the sender's address.
pub(crate) fn recv_from(
    socket: impl AsFd,
    buf: &mut [u8],
    flags: libc::c_int,
) -> io::Result<(usize, SockAddr)> {
    let fd = socket.as_fd().as_raw_fd();
    // SAFETY: `try_init` passes zeroed address storage and its size in `length`; `recvfrom`
    // writes an address of the socket's family there and its size into `length`, which is
    // what `try_init` asks of the closure. `buf` is valid for writes of `buf.len()` bytes
    // throughout the call, which writes at most that many initialised bytes into it; `socket`
    // is borrowed, so `fd` is open.
    unsafe {
        SockAddr::try_init(|storage, length| {
            let received = libc::recvfrom(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags | libc::MSG_DONTWAIT,
                storage.cast(),
                length,
            );
            result(received)
        })
    }
}

/// `send(2)` of `buf`.
pub(crate) fn send(socket: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    SockRef::from(&socket).send_with_flags(buf, SEND)
}

/// `sendmsg(2)` of the first [`MAX_BUFS`] of `bufs`.
pub(crate) fn send_vectored(socket: impl AsFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    let bufs = &bufs[..bufs.len().min(MAX_BUFS)];
    SockRef::from(&socket).send_vectored_with_flags(bufs, SEND)
}

/// `sendto(2)` of `buf` to `addr`.
pub(crate) fn send_to(socket: impl AsFd, buf: &[u8], addr: &SockAddr) -> io::Result<usize> {
    SockRef::from(&socket).send_to_with_flags(buf, addr, SEND)
}

/// An IP sender's address as std gives it.
pub(crate) fn ip_addr(addr: &SockAddr) -> io::Result<std::net::SocketAddr> {
    addr.as_socket().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "received from a non-IP address",
        )
    })
}

/// A Unix sender's address as std gives it: a path, an abstract name, or unnamed.
pub(crate) fn unix_addr(addr: &SockAddr) -> io::Result<UnixSocketAddr> {
    if let Some(path) = addr.as_pathname() {
        return UnixSocketAddr::from_pathname(path);
    }
    if let Some(name) = addr.as_abstract_namespace() {
        return <UnixSocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(name);
    }
    unnamed()
}

/// The socket address of a std Unix address: its path or abstract name (`InvalidInput` for an
/// unnamed one, which names no socket).
pub(crate) fn unix_sockaddr(addr: &UnixSocketAddr) -> io::Result<SockAddr> {
    if let Some(path) = addr.as_pathname() {
        return SockAddr::unix(path);
    }
    match <UnixSocketAddr as std::os::linux::net::SocketAddrExt>::as_abstract_name(addr) {
        // A leading NUL byte makes the path an abstract name.
        Some(name) => SockAddr::unix(std::ffi::OsStr::from_bytes(&[b"\0", name].concat())),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an unnamed Unix address names no socket",
        )),
    }
}

/// An unnamed Unix address. std makes none from parts; an unbound socket's own address is
/// one, made once.
pub(crate) fn unnamed() -> io::Result<UnixSocketAddr> {
    static UNNAMED: OnceLock<UnixSocketAddr> = OnceLock::new();
    if let Some(addr) = UNNAMED.get() {
        return Ok(addr.clone());
    }
    let addr = std::os::unix::net::UnixDatagram::unbound()?.local_addr()?;
    Ok(UNNAMED.get_or_init(|| addr).clone())
}

/// Whether `socket`'s read half is shut down (by `shutdown(Read)` or `shutdown(Both)` through
/// any descriptor of the socket), which its poll reports as `POLLRDHUP`.
pub(crate) fn read_shut_down(socket: impl AsFd) -> io::Result<bool> {
    let mut entry = libc::pollfd {
        fd: socket.as_fd().as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: `entry` is one valid, initialised `pollfd` that lives across the call, and we
    // pass a count of 1; `socket` is borrowed, so the descriptor stays open meanwhile. A zero
    // timeout never blocks.
    if unsafe { libc::poll(&mut entry, 1, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(entry.revents & libc::POLLRDHUP != 0)
}

fn result(returned: isize) -> io::Result<usize> {
    usize::try_from(returned).map_err(|_| io::Error::last_os_error())
}
