//! Moving sockets between fibra's types and tokio's.

use std::io;

/// Turns a fibra socket into tokio's type for the same socket, for async code.
///
/// The conversion registers the socket with the reactor of the tokio context it runs in: in a
/// fibra fiber that is the driver's, so the tokio socket may then be used from a fiber
/// (`fibra::block_on`) or handed to async code on the same reactor.
///
/// # Panics
///
/// Outside a fibra fiber or a tokio runtime's context (tokio's own message).
///
/// ```
/// use fibra::io::IntoTokio;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// fibra::run(|| {
///     let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = fibra::net::TcpStream::connect(addr).unwrap();
///     let (server, _) = listener.accept().unwrap();
///     let mut client = client.into_tokio().unwrap();
///     let mut server = server.into_tokio().unwrap();
///     let got = fibra::block_on(async {
///         client.write_all(b"async").await.unwrap();
///         let mut buf = [0; 5];
///         server.read_exact(&mut buf).await.unwrap();
///         buf
///     });
///     assert_eq!(&got, b"async");
/// });
/// ```
pub trait IntoTokio {
    /// The tokio type.
    type Tokio;

    /// The tokio socket.
    ///
    /// # Errors
    ///
    /// When the mode change or the reactor registration fails.
    fn into_tokio(self) -> io::Result<Self::Tokio>;
}

/// Makes a fibra socket from tokio's type for the same socket (deregistering it from tokio's
/// reactor), for blocking-style use in fibers.
///
/// ```
/// use fibra::io::FromTokio;
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let (a, b) = fibra::block_on(async {
///         let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
///         let a = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
///         (a, listener.accept().await.unwrap().0)
///     });
///     let mut a = fibra::net::TcpStream::from_tokio(a).unwrap();
///     let mut b = fibra::net::TcpStream::from_tokio(b).unwrap();
///     a.write_all(b"sync").unwrap();
///     let mut buf = [0; 4];
///     b.read_exact(&mut buf).unwrap();
///     assert_eq!(&buf, b"sync");
/// });
/// ```
pub trait FromTokio<T>: Sized {
    /// The fibra socket.
    ///
    /// # Errors
    ///
    /// When the socket cannot be taken out of tokio or its mode cannot be set.
    fn from_tokio(socket: T) -> io::Result<Self>;
}

macro_rules! conversions {
    ($($fibra:ty => $tokio:ty, $std:ty;)*) => {$(
        impl IntoTokio for $fibra {
            type Tokio = $tokio;

            fn into_tokio(self) -> io::Result<$tokio> {
                let std: $std = self.into_std()?;
                std.set_nonblocking(true)?;
                <$tokio>::from_std(std)
            }
        }

        impl FromTokio<$tokio> for $fibra {
            fn from_tokio(socket: $tokio) -> io::Result<$fibra> {
                <$fibra>::from_std(socket.into_std()?)
            }
        }
    )*};
}

conversions! {
    fibra_net::net::TcpStream => tokio::net::TcpStream, std::net::TcpStream;
    fibra_net::net::TcpListener => tokio::net::TcpListener, std::net::TcpListener;
    fibra_net::net::UdpSocket => tokio::net::UdpSocket, std::net::UdpSocket;
    fibra_net::net::UnixStream => tokio::net::UnixStream, std::os::unix::net::UnixStream;
    fibra_net::net::UnixListener => tokio::net::UnixListener, std::os::unix::net::UnixListener;
    fibra_net::net::UnixDatagram => tokio::net::UnixDatagram, std::os::unix::net::UnixDatagram;
}
