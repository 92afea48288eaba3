//! A child's piped stdin, stdout and stderr: non-blocking pipes on the reactor.

use crate::source::{short, IoTimeout, Source};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use tokio::io::Interest;

/// Reads from or writes to one pipe end, parking the fiber while it is not ready.
#[derive(Debug)]
struct Pipe {
    source: Source<File>,
}

impl Pipe {
    fn new(fd: OwnedFd) -> io::Result<Pipe> {
        Ok(Pipe {
            source: Source::new(File::from(fd))?,
        })
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.source.io(
            Interest::READABLE,
            |_| Ok(IoTimeout::Never),
            short(buf.len()),
            |mut file| file.read(buf),
        )
    }

    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.source.io(
            Interest::WRITABLE,
            |_| Ok(IoTimeout::Never),
            short(buf.len()),
            |mut file| file.write(buf),
        )
    }
}

macro_rules! pipe_end {
    ($(#[$doc:meta])* $name:ident, $tokio:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            pipe: Pipe,
        }

        impl $name {
            pub(crate) fn from_tokio(end: $tokio) -> io::Result<$name> {
                Ok($name {
                    pipe: Pipe::new(end.into_owned_fd()?)?,
                })
            }
        }

        impl AsFd for $name {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.pipe.source.as_fd()
            }
        }

        impl AsRawFd for $name {
            fn as_raw_fd(&self) -> RawFd {
                self.pipe.source.as_fd().as_raw_fd()
            }
        }
    };
}

pipe_end!(
    /// The child's standard input, when piped: `Write` parks the fiber while the pipe is full.
    /// Dropping it closes the pipe, so the child reads end-of-file.
    ChildStdin,
    tokio::process::ChildStdin
);
pipe_end!(
    /// The child's standard output, when piped: `Read` parks the fiber until output arrives;
    /// `Ok(0)` once the child closed it (usually by exiting).
    ChildStdout,
    tokio::process::ChildStdout
);
pipe_end!(
    /// The child's standard error, when piped: as [`ChildStdout`].
    ChildStderr,
    tokio::process::ChildStderr
);

impl Write for ChildStdin {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pipe.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for ChildStdout {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.pipe.read(buf)
    }
}

impl Read for ChildStderr {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.pipe.read(buf)
    }
}
