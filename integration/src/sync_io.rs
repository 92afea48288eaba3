//! `SyncIo`: tokio's async I/O traits as std's blocking ones, for fibers.

use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Wraps a tokio [`AsyncRead`](tokio::io::AsyncRead) and/or [`AsyncWrite`](tokio::io::AsyncWrite)
/// so that it is a std [`Read`](std::io::Read) / [`Write`](std::io::Write)
/// in a fiber: each call polls the inner object in place and parks only the fiber while it is
/// pending (a plain thread would block). So synchronous code — parsers, TLS over `Read +
/// Write`, `io::copy` — runs over tokio streams, pipes and duplexes unchanged.
///
/// Every wait is a cancellation point; a cancelled `read` consumed nothing (a pending poll
/// took no data).
///
/// ```
/// use fibra::io::SyncIo;
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let (a, b) = tokio::io::duplex(64);
///     let mut a = SyncIo::new(a);
///     let writer = fibra::spawn(move || a.write_all(&[9; 1000]).unwrap());
///     let mut got = Vec::new();
///     let mut b = SyncIo::new(b);
///     b.read_exact(&mut [0; 1000][..]).unwrap();
///     writer.join().unwrap();
///     assert_eq!(b.read_to_end(&mut got).unwrap(), 0);
/// });
/// ```
#[derive(Debug, Default)]
pub struct SyncIo<T> {
    inner: T,
}

impl<T> SyncIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> SyncIo<T> {
        SyncIo { inner }
    }

    /// The wrapped object.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// The wrapped object, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the object.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncWrite + Unpin> SyncIo<T> {
    /// Shuts down the write side (tokio's `poll_shutdown`): a TCP stream sends its FIN, a
    /// duplex lets the other end read end-of-file.
    ///
    /// # Errors
    ///
    /// The inner object's shutdown errors.
    pub fn shutdown(&mut self) -> io::Result<()> {
        let inner = &mut self.inner;
        fibra_runtime::block_on(poll_fn(|cx| Pin::new(&mut *inner).poll_shutdown(cx)))
    }
}

impl<T: AsyncRead + Unpin> Read for SyncIo<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let inner = &mut self.inner;
        fibra_runtime::block_on(poll_fn(|cx| {
            let mut buf = ReadBuf::new(buf);
            Pin::new(&mut *inner)
                .poll_read(cx, &mut buf)
                .map_ok(|()| buf.filled().len())
        }))
    }
}

impl<T: AsyncWrite + Unpin> Write for SyncIo<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let inner = &mut self.inner;
        fibra_runtime::block_on(poll_fn(|cx| Pin::new(&mut *inner).poll_write(cx, buf)))
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let inner = &mut self.inner;
        fibra_runtime::block_on(poll_fn(|cx| {
            Pin::new(&mut *inner).poll_write_vectored(cx, bufs)
        }))
    }

    fn flush(&mut self) -> io::Result<()> {
        let inner = &mut self.inner;
        fibra_runtime::block_on(poll_fn(|cx| Pin::new(&mut *inner).poll_flush(cx)))
    }
}
