//! Networking: TCP, UDP and Unix sockets with the method set of `std::net` and
//! `std::os::unix::net`, and name lookup that never blocks a worker.
//!
//! Reads, writes, accepts and connects park the calling fiber until the socket is ready (a
//! plain thread blocks instead). Every call is a cancellation point.
//!
//! A fiber whose call finds the socket not ready first retries it a few times, yielding in
//! between, while few other fibers are ready on its worker: a peer a few microseconds away
//! (a fiber on another worker, a process on another core) is answered without the round
//! trip through the I/O driver thread that a wait for readiness costs. A socket whose
//! retries keep finding nothing (an idle connection) retries less and less often, down to
//! once in 64 waits, until a retry finds it ready again.
//!
//! ```
//! use fibra::net::{TcpListener, TcpStream};
//! use std::io::{Read, Write};
//!
//! fibra::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     fibra::spawn(move || {
//!         let (conn, _) = listener.accept().unwrap();
//!         std::io::copy(&mut &conn, &mut &conn).unwrap();
//!     });
//!     let mut stream = TcpStream::connect(addr).unwrap();
//!     stream.write_all(b"echo").unwrap();
//!     stream.shutdown(std::net::Shutdown::Write).unwrap();
//!     let mut back = String::new();
//!     stream.read_to_string(&mut back).unwrap();
//!     assert_eq!(back, "echo");
//! });
//! ```

mod addr;
mod common;
pub mod http;
mod sys;
mod tcp;
mod udp;
pub mod unix;

pub use addr::{Addrs, ToSocketAddrs};
pub use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, SocketAddrV4, SocketAddrV6};
pub use tcp::{Incoming, TcpListener, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixListener, UnixStream};
