//! The methods every socket type shares, written once.

/// `from_std`, `into_std`, `try_clone`, `set_nonblocking`, `take_error`, `AsFd` and
/// `AsRawFd` for a type whose `source` field wraps `$std`.
macro_rules! descriptor_methods {
    ($ty:ident, $std:ty) => {
        impl $ty {
            #[doc = concat!("Takes over a [`", stringify!($std), "`] (switching it to non-blocking mode).")]
            ///
            /// # Errors
            ///
            /// When the mode cannot be changed.
            pub fn from_std(io: $std) -> std::io::Result<$ty> {
                Ok($ty {
                    source: $crate::source::Source::new(io)?,
                })
            }

            #[doc = concat!("Gives back the [`", stringify!($std), "`], in blocking mode unless [`set_nonblocking`](Self::set_nonblocking) asked otherwise.")]
            ///
            /// The mode belongs to the socket, not to one handle: it is also the mode of every
            /// [`try_clone`](Self::try_clone) of this handle. A clone's sends and receives ask
            /// the kernel not to block whatever the mode, so a fiber using it still parks and
            /// its worker runs on; a listener's `accept` cannot, so a clone of a listener that
            /// went back to blocking mode blocks its worker's thread in `accept` until a
            /// connection comes.
            ///
            /// # Errors
            ///
            /// When the mode cannot be changed.
            pub fn into_std(self) -> std::io::Result<$std> {
                self.source.into_inner()
            }

            /// A second handle to the same socket (a duplicated descriptor), usable from
            /// another fiber at the same time. Timeouts are the socket's, so they are shared;
            /// non-blocking mode is copied. The OS's blocking mode is the socket's too:
            /// [`into_std`](Self::into_std) on one handle changes it for all (see there).
            ///
            /// # Errors
            ///
            /// When the descriptor cannot be duplicated.
            pub fn try_clone(&self) -> std::io::Result<$ty> {
                Ok($ty {
                    source: self.source.clone_with(self.source.get().try_clone()?),
                })
            }

            /// In non-blocking mode, calls that would wait return `WouldBlock` instead.
            ///
            /// # Errors
            ///
            /// None today; the `Result` is std's shape.
            pub fn set_nonblocking(&self, nonblocking: bool) -> std::io::Result<()> {
                self.source.set_nonblocking(nonblocking);
                Ok(())
            }

            /// Takes the socket's pending error (`SO_ERROR`), if any.
            ///
            /// # Errors
            ///
            /// The OS's `getsockopt` errors.
            pub fn take_error(&self) -> std::io::Result<Option<std::io::Error>> {
                self.source.get().take_error()
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.source)
            }
        }

        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&self.source))
            }
        }
    };
}

/// std's socket timeouts for a type whose `source` wraps a std socket that has them.
macro_rules! timeout_methods {
    ($ty:ident, $std:ty) => {
        impl $ty {
            /// Bounds how long a read waits; past it the read fails with `WouldBlock` (std's
            /// kind on Unix). `None` waits without bound.
            ///
            /// The timeout is remembered beside the socket and shared by its clones, so a
            /// wait does not ask the kernel for it; one set on the descriptor by other means
            /// (a raw `setsockopt`) after the socket's first wait is not seen.
            ///
            /// # Errors
            ///
            /// `InvalidInput` for `Some(Duration::ZERO)`, as std.
            ///
            /// ```
            /// // Shown on a `TcpStream`; every socket type with timeouts behaves the same.
            /// use fibra::net::{TcpListener, TcpStream};
            /// use std::io::{ErrorKind, Read};
            /// use std::time::Duration;
            ///
            /// fibra::run(|| {
            ///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            ///     let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            ///     let (_quiet_peer, _) = listener.accept().unwrap();
            ///     client.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
            ///     let error = client.read(&mut [0; 16]).unwrap_err();
            ///     assert_eq!(error.kind(), ErrorKind::WouldBlock);
            ///     assert!(client.read_timeout().unwrap().is_some());
            /// });
            /// ```
            pub fn set_read_timeout(
                &self,
                timeout: Option<std::time::Duration>,
            ) -> std::io::Result<()> {
                self.source.get().set_read_timeout(timeout)?;
                self.source.timeouts().set_read(timeout);
                Ok(())
            }

            /// Bounds how long a write waits; past it the write fails with `WouldBlock`.
            /// `None` waits without bound.
            ///
            /// The timeout is remembered beside the socket and shared by its clones, so a
            /// wait does not ask the kernel for it; one set on the descriptor by other means
            /// (a raw `setsockopt`) after the socket's first wait is not seen.
            ///
            /// # Errors
            ///
            /// `InvalidInput` for `Some(Duration::ZERO)`, as std.
            ///
            /// ```
            /// // Shown on a `TcpStream`; every socket type with timeouts behaves the same.
            /// use fibra::net::{TcpListener, TcpStream};
            /// use std::io::{ErrorKind, Write};
            /// use std::time::Duration;
            ///
            /// fibra::run(|| {
            ///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            ///     let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            ///     let (_peer_that_never_reads, _) = listener.accept().unwrap();
            ///     client.set_write_timeout(Some(Duration::from_millis(10))).unwrap();
            ///     // Once the socket buffers are full, a write waits 10 ms and gives up.
            ///     let chunk = [0; 64 * 1024];
            ///     let error = loop {
            ///         if let Err(error) = client.write(&chunk) {
            ///             break error;
            ///         }
            ///     };
            ///     assert_eq!(error.kind(), ErrorKind::WouldBlock);
            /// });
            /// ```
            pub fn set_write_timeout(
                &self,
                timeout: Option<std::time::Duration>,
            ) -> std::io::Result<()> {
                self.source.get().set_write_timeout(timeout)?;
                self.source.timeouts().set_write(timeout);
                Ok(())
            }

            /// The read timeout, as the OS reports it: the OS may round the value given to
            /// [`set_read_timeout`](Self::set_read_timeout) up to its clock tick, while
            /// waits use the value as given (it is kept beside the socket).
            ///
            /// # Errors
            ///
            /// The OS's `getsockopt` errors.
            pub fn read_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
                self.source.get().read_timeout()
            }

            /// The write timeout, as the OS reports it: the OS may round the value given to
            /// [`set_write_timeout`](Self::set_write_timeout) up to its clock tick, while
            /// waits use the value as given (it is kept beside the socket).
            ///
            /// # Errors
            ///
            /// The OS's `getsockopt` errors.
            pub fn write_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
                self.source.get().write_timeout()
            }

            /// Runs `op` until it does not say `WouldBlock`, waiting for readability with the
            /// socket's read timeout; `drained` as for `Source::io`.
            fn read_io<R>(
                &self,
                drained: impl Fn(&R) -> bool,
                op: impl FnMut(&$std) -> std::io::Result<R>,
            ) -> std::io::Result<R> {
                self.source.io(
                    tokio::io::Interest::READABLE,
                    |io| {
                        let timeout = self.source.timeouts().read(|| io.read_timeout());
                        timeout.map($crate::source::IoTimeout::socket)
                    },
                    drained,
                    op,
                )
            }

            /// Runs `op` until it does not say `WouldBlock`, waiting for writability with the
            /// socket's write timeout; `drained` as for `Source::io`.
            fn write_io<R>(
                &self,
                drained: impl Fn(&R) -> bool,
                op: impl FnMut(&$std) -> std::io::Result<R>,
            ) -> std::io::Result<R> {
                self.source.io(
                    tokio::io::Interest::WRITABLE,
                    |io| {
                        let timeout = self.source.timeouts().write(|| io.write_timeout());
                        timeout.map($crate::source::IoTimeout::socket)
                    },
                    drained,
                    op,
                )
            }
        }
    };
}

/// `Read` and `Write` for `&$ty` and `$ty` of a stream socket type with `read_io`/`write_io`.
macro_rules! stream_io {
    ($ty:ident) => {
        impl std::io::Read for &$ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let drained = $crate::source::short(buf.len());
                self.read_io(drained, |io| $crate::net::sys::recv(io, buf, 0))
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                let drained = $crate::source::short($crate::net::sys::vectored_len(bufs));
                self.read_io(drained, |io| $crate::net::sys::recv_vectored(io, bufs))
            }
        }

        impl std::io::Write for &$ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let drained = $crate::source::short(buf.len());
                self.write_io(drained, |io| $crate::net::sys::send(io, buf))
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                let drained = $crate::source::short($crate::net::sys::vectored_len(bufs));
                self.write_io(drained, |io| $crate::net::sys::send_vectored(io, bufs))
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        impl std::io::Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::io::Read::read(&mut &*self, buf)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                std::io::Read::read_vectored(&mut &*self, bufs)
            }
        }

        impl std::io::Write for $ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::io::Write::write(&mut &*self, buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                std::io::Write::write_vectored(&mut &*self, bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
    };
}

/// `shutdown`, `local_addr` and `peer_addr` of a Unix socket type whose `source` wraps the std
/// type of the same name.
macro_rules! unix_address_methods {
    ($ty:ident) => {
        impl $ty {
            /// Shuts down the read half, the write half or both.
            ///
            /// # Errors
            ///
            /// The OS's `shutdown` errors.
            pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
                self.source.get().shutdown(how)
            }

            /// The local address.
            ///
            /// # Errors
            ///
            /// The OS's `getsockname` errors.
            pub fn local_addr(&self) -> std::io::Result<std::os::unix::net::SocketAddr> {
                self.source.get().local_addr()
            }

            /// The connected peer's address.
            ///
            /// # Errors
            ///
            /// The OS's `getpeername` errors: `NotConnected` when not connected.
            pub fn peer_addr(&self) -> std::io::Result<std::os::unix::net::SocketAddr> {
                self.source.get().peer_addr()
            }
        }
    };
}

/// Socket options passed straight to the std socket that `source` wraps, each written as its
/// summary and `setsockopt` or `getsockopt` (with what to add about its errors, if anything)
/// before its signature; the macro writes the body and the `# Errors` section.
macro_rules! option_methods {
    ($ty:ident {
        $(
            $(#[doc = $doc:literal])+
            $call:ident $(($detail:literal))? fn $name:ident(&self $(, $arg:ident: $arg_ty:ty)*) -> $ret:ty;
        )*
    }) => {
        impl $ty {
            $(
                $(#[doc = $doc])+
                ///
                /// # Errors
                ///
                #[doc = concat!("The OS's `", stringify!($call), "` errors", $(" (", $detail, ")",)? ".")]
                pub fn $name(&self $(, $arg: $arg_ty)*) -> std::io::Result<$ret> {
                    self.source.get().$name($($arg),*)
                }
            )*
        }
    };
}

pub(crate) use {
    descriptor_methods, option_methods, stream_io, timeout_methods, unix_address_methods,
};
