//! Unix domain sockets: stream echo with exact counts, datagrams by path, error kinds.

use fibra_net::net::{UnixDatagram, UnixListener, UnixStream};
use fibra_runtime::wait::WaitKind;
use fibra_testing::TempDir;
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn stream_echo_over_many_connections_under_1_2_and_4_workers() {
    const CONNECTIONS: usize = 50;
    const MESSAGES: usize = 40;
    for workers in [1, 2, 4] {
        let dir = TempDir::new(&format!("echo{workers}"));
        let path = dir.path().join("echo.sock");
        let total = fibra_testing::on(workers, move || {
            let listener = UnixListener::bind(&path).unwrap();
            let server = fibra_runtime::spawn(move || {
                fibra_runtime::scope(|s| {
                    let handles: Vec<_> = listener
                        .incoming()
                        .take(CONNECTIONS)
                        .map(|conn| {
                            let conn = conn.unwrap();
                            s.spawn(move || io::copy(&mut &conn, &mut &conn).unwrap())
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                })
            });
            fibra_runtime::scope(|s| {
                for c in 0..CONNECTIONS {
                    let path = &path;
                    s.spawn(move || {
                        let mut conn = UnixStream::connect(path).unwrap();
                        for m in 0..MESSAGES {
                            let message = [(c + m) as u8; 100];
                            conn.write_all(&message).unwrap();
                            let mut back = [0; 100];
                            conn.read_exact(&mut back).unwrap();
                            assert_eq!(back, message);
                        }
                        conn.shutdown(Shutdown::Write).unwrap();
                        assert_eq!(conn.read(&mut [0; 1]).unwrap(), 0);
                    });
                }
            });
            server.join().unwrap()
        });
        assert_eq!(total, (CONNECTIONS * MESSAGES * 100) as u64);
    }
}

#[test]
fn datagrams_by_path_and_by_pair() {
    let dir = TempDir::new("dgram");
    let (a_path, b_path) = (dir.path().join("a.sock"), dir.path().join("b.sock"));
    fibra_runtime::run(move || {
        let a = UnixDatagram::bind(&a_path).unwrap();
        let b = UnixDatagram::bind(&b_path).unwrap();
        let receiver = fibra_runtime::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..100 {
                let mut buf = [0; 16];
                let (n, from) = b.recv_from(&mut buf).unwrap();
                assert_eq!(from.as_pathname(), Some(a_path.as_path()));
                got.push(buf[..n].to_vec());
            }
            got
        });
        for i in 0..100u8 {
            a.send_to(&[i; 3], &b_path).unwrap();
        }
        let got = receiver.join().unwrap();
        assert_eq!(got, (0..100u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
        let (x, y) = UnixDatagram::pair().unwrap();
        x.send(b"paired").unwrap();
        let mut buf = [0; 8];
        assert_eq!(y.recv(&mut buf).unwrap(), 6);
        y.set_read_timeout(Some(std::time::Duration::from_millis(5)))
            .unwrap();
        assert_eq!(
            y.recv(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        let unbound = UnixDatagram::unbound().unwrap();
        unbound.connect(&b_path).unwrap_err();
    });
}

#[test]
fn errors_are_std_kinds() {
    let dir = TempDir::new("errors");
    let path = dir.path().join("s.sock");
    fibra_runtime::run(move || {
        let missing = UnixStream::connect(dir.path().join("missing.sock")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let listener = UnixListener::bind(&path).unwrap();
        let in_use = UnixListener::bind(&path).unwrap_err();
        assert_eq!(in_use.kind(), io::ErrorKind::AddrInUse);
        drop(listener);
        let refused = UnixStream::connect(&path).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let broken = (&a).write_all(b"nobody").unwrap_err();
        assert_eq!(broken.kind(), io::ErrorKind::BrokenPipe);
    });
}

#[test]
fn a_cancelled_accept_leaves_the_unix_listener_usable_and_clones_share_the_socket() {
    let dir = TempDir::new("cancel");
    let path = dir.path().join("c.sock");
    fibra_runtime::run(move || {
        let listener = UnixListener::bind(&path).unwrap();
        let deadline =
            fibra_runtime::ScopeOptions::new().timeout(std::time::Duration::from_millis(10));
        let outcome = fibra_runtime::scope_with(deadline, |_| {
            let _ = listener.accept();
            unreachable!("nobody connects");
        });
        assert!(outcome.is_err());
        let client = fibra_runtime::spawn(move || UnixStream::connect(path).unwrap());
        let (conn, _) = listener.accept().unwrap();
        let client = client.join().unwrap();
        // A clone reads in one fiber while the original writes in another.
        let reader = client.try_clone().unwrap();
        let echo = fibra_runtime::spawn(move || io::copy(&mut &conn, &mut &conn).unwrap());
        let got = fibra_runtime::scope(|s| {
            s.spawn(|| {
                for _ in 0..100 {
                    (&client).write_all(&[5; 1000]).unwrap();
                }
                client.shutdown(Shutdown::Write).unwrap();
            });
            let mut all = Vec::new();
            (&reader).read_to_end(&mut all).unwrap();
            all
        });
        assert_eq!(got.len(), 100_000);
        assert_eq!(echo.join().unwrap(), 100_000);
    });
}

#[test]
fn recv_from_names_an_abstract_sender_and_an_unnamed_one() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;

    let dir = TempDir::new("unix-abstract");
    let path = dir.path().join("receiver.sock");
    fibra_runtime::run(move || {
        let receiver = UnixDatagram::bind(&path).unwrap();
        let name = format!("fibra-test-abstract-{}", std::process::id());
        let abstract_addr = SocketAddr::from_abstract_name(&name).unwrap();
        let named = std::os::unix::net::UnixDatagram::bind_addr(&abstract_addr).unwrap();
        named.send_to(b"named", &path).unwrap();
        let mut buf = [0; 8];
        let (n, from) = receiver.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"named");
        assert_eq!(from.as_abstract_name(), Some(name.as_bytes()));
        let unbound = std::os::unix::net::UnixDatagram::unbound().unwrap();
        unbound.send_to(b"unnamed", &path).unwrap();
        let (n, from) = receiver.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"unnamed");
        assert!(from.is_unnamed());
    });
}

/// The `*_addr` forms take a std address, a path or an abstract name; an unnamed one names no
/// socket.
#[test]
fn addresses_by_path_and_by_abstract_name() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;
    let dir = TempDir::new("addr");
    let by_path = SocketAddr::from_pathname(dir.path().join("s.sock")).unwrap();
    let name = format!("fibra-test-addr-{}", std::process::id());
    let by_name = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    fibra_testing::on(2, move || {
        for addr in [&by_path, &by_name] {
            let listener = UnixListener::bind_addr(addr).unwrap();
            let mut client = UnixStream::connect_addr(addr).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(b"ping").unwrap();
            let mut got = [0; 4];
            server.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"ping");
        }
        let dgram_path = SocketAddr::from_pathname(dir.path().join("d.sock")).unwrap();
        let dgram_name = SocketAddr::from_abstract_name(format!("{name}-d").as_bytes()).unwrap();
        for addr in [&dgram_path, &dgram_name] {
            let receiver = UnixDatagram::bind_addr(addr).unwrap();
            let sender = UnixDatagram::unbound().unwrap();
            assert_eq!(sender.send_to_addr(b"one", addr).unwrap(), 3);
            sender.connect_addr(addr).unwrap();
            assert_eq!(sender.send(b"two!").unwrap(), 4);
            let mut buf = [0; 8];
            assert_eq!(receiver.recv(&mut buf).unwrap(), 3);
            assert_eq!(receiver.recv(&mut buf).unwrap(), 4);
        }
        let unnamed = UnixDatagram::unbound().unwrap().local_addr().unwrap();
        assert!(unnamed.is_unnamed());
        let refused = UnixStream::connect_addr(&unnamed).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
        let refused = UnixDatagram::unbound()
            .unwrap()
            .send_to_addr(b"x", &unnamed)
            .unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
    });
}

/// Sends `byte` with `fd` attached (`SCM_RIGHTS`), one message of a Unix stream: a reader's
/// `recv` stops after the bytes that carry descriptors, leaving later ones queued.
fn send_with_descriptor(sock: &std::os::unix::net::UnixStream, byte: u8, fd: RawFd) {
    let mut data = [byte];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let fd_len = std::mem::size_of::<RawFd>() as u32;
    // SAFETY: `CMSG_SPACE` only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_len) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    // SAFETY: all zeroes is a valid `msghdr` (no name, no buffers, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: `control` is 8-byte aligned and holds `CMSG_SPACE` bytes, room for one header
    // and one descriptor, which `CMSG_FIRSTHDR` and `CMSG_DATA` point into; `iov`, `data` and
    // `control` outlive the call; `sock` is borrowed, so its descriptor is open.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(fd_len) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        assert_eq!(libc::sendmsg(sock.as_raw_fd(), &msg, 0), 1);
    }
}

/// Short reads in a row with data queued behind each (every message carries a descriptor):
/// the first clears the readiness on a guess, and a wait that skips its retries tries the
/// read once. That try is short again, so the guess must carry on to the next wait: it
/// parked on the reactor with "c" queued, for ever.
#[test]
fn short_reads_in_a_row_with_data_queued_behind_each_never_park_for_good() {
    let reads = fibra_testing::on(1, || {
        let (reader, peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = UnixStream::from_std(reader).unwrap();
        let peer = Arc::new(peer);
        let mut buf = [0u8; 64];
        // Three reads whose byte comes only once the reader has parked: their retries miss,
        // so the retry hint has the next three waits skip theirs.
        for i in 0..3u8 {
            let main = fibra_runtime::current();
            let peer = peer.clone();
            let writer = fibra_runtime::spawn(move || {
                fibra_testing::until_parked(&main);
                (&*peer).write_all(&[i]).unwrap();
            });
            let n = (&reader).read(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i]);
            writer.join().unwrap();
        }
        for byte in *b"abc" {
            send_with_descriptor(&peer, byte, peer.as_raw_fd());
        }
        // The three messages' one event reaches the reactor before the reads.
        fibra_runtime::sleep(Duration::from_millis(100));
        (0..3)
            .map(|_| {
                fibra_runtime::timeout(Duration::from_secs(5), || {
                    let n = (&reader).read(&mut buf).unwrap();
                    buf[..n].to_vec()
                })
                .ok()
            })
            .collect::<Vec<_>>()
    });
    let each = |b: &[u8]| Some(b.to_vec());
    assert_eq!(reads, [each(b"a"), each(b"b"), each(b"c")]);
}

/// More buffers than one `sendmsg` takes: std's `write_vectored` writes from the first 1 024
/// (it clamps `writev`'s count), where the kernel refused the whole call (`EMSGSIZE`).
#[test]
fn write_vectored_with_more_buffers_than_one_call_takes_writes_a_prefix_as_std() {
    let ones = vec![[1u8; 1]; 2000];
    let bufs: Vec<io::IoSlice<'_>> = ones.iter().map(|b| io::IoSlice::new(b)).collect();
    let (std_a, _std_b) = std::os::unix::net::UnixStream::pair().unwrap();
    let std_written = (&std_a).write_vectored(&bufs).unwrap();
    let written = fibra_testing::on(1, move || {
        let (a, _b) = UnixStream::pair().unwrap();
        let unix = (&a).write_vectored(&bufs).map_err(|e| e.to_string());
        let listener = fibra_net::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = fibra_net::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _accepted = listener.accept().unwrap();
        let tcp = (&client).write_vectored(&bufs).map_err(|e| e.to_string());
        (unix, tcp)
    });
    assert_eq!(written, (Ok(std_written), Ok(std_written)));
}

/// A listener with backlog 1 that has not accepted, and the connections that fill its backlog
/// (which must stay open for it to stay full).
fn full_backlog(path: &std::path::Path) -> (UnixListener, Vec<Socket>) {
    let addr = SockAddr::unix(path).unwrap();
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
    socket.bind(&addr).unwrap();
    socket.listen(1).unwrap();
    let listener = UnixListener::from_std(socket.into()).unwrap();
    let mut queued = Vec::new();
    loop {
        let client = Socket::new(Domain::UNIX, Type::STREAM.nonblocking(), None).unwrap();
        match client.connect(&addr) {
            Ok(()) => queued.push(client),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (listener, queued),
            Err(e) => panic!("filling the backlog: {e}"),
        }
    }
}

/// A connect to a full backlog waits in its fiber, not on the blocking pool: a deadline
/// cancels it and leaves no thread blocked in `connect`, and once the listener accepts, a
/// waiting connect gets through.
#[test]
fn a_connect_to_a_full_backlog_is_cancellable_and_gets_through_after_an_accept() {
    let dir = TempDir::new("backlog");
    let path = dir.path().join("full.sock");
    fibra_testing::on(2, move || {
        let (listener, queued) = full_backlog(&path);
        let handle = fibra_runtime::Handle::current();
        let cancelled =
            fibra_runtime::timeout(Duration::from_millis(20), || UnixStream::connect(&path));
        assert!(cancelled.is_err(), "a connect to a full backlog returned");
        let driver = handle.metrics().driver;
        assert_eq!((driver.blocking_queued, driver.blocking_running), (0, 0));

        let waiting = {
            let path = path.clone();
            fibra_runtime::spawn(move || UnixStream::connect(path))
        };
        let wait = fibra_testing::parked_wait(waiting.fiber());
        assert_eq!(wait.kind, WaitKind::Sleep, "the connect waits in its fiber");
        let (first, _) = listener.accept().unwrap();
        let client = waiting.join().unwrap().unwrap();
        // The backlog is first in, first out: the waiting connect is the last one queued.
        for _ in 1..queued.len() {
            listener.accept().unwrap();
        }
        let (server, _) = listener.accept().unwrap();
        (&client).write_all(b"through").unwrap();
        let mut got = [0; 7];
        (&server).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"through");
        drop((first, queued));
    });
}

/// std's blocking receive on a datagram socket whose read half is shut down returns `Ok(0)` at
/// once, and one already waiting then returns so; in non-blocking mode it says `WouldBlock`.
/// The kernel's non-blocking receive says `WouldBlock` in either mode, and the socket stays
/// readable, so a receive that waits for a datagram instead must look at the shutdown itself.
#[test]
fn a_receive_on_a_datagram_socket_whose_read_half_is_shut_down_ends_as_stds() {
    fibra_testing::bounded(Duration::from_secs(60), || {
        fibra_testing::on_each_worker_count(|_| {
            let (a, _b) = UnixDatagram::pair().unwrap();
            let a = Arc::new(a);
            let waiting = {
                let a = a.clone();
                fibra_runtime::spawn(move || {
                    let (n, from) = a.recv_from(&mut [0; 8]).unwrap();
                    (n, from.is_unnamed())
                })
            };
            fibra_testing::until_parked(waiting.fiber());
            a.shutdown(Shutdown::Read).unwrap();
            assert_eq!(waiting.join().unwrap(), (0, true));
            assert_eq!(a.recv(&mut [0; 8]).unwrap(), 0);
            a.set_nonblocking(true).unwrap();
            let error = a.recv(&mut [0; 8]).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
        });
        let (a, _b) = UnixDatagram::pair().unwrap();
        a.shutdown(Shutdown::Both).unwrap();
        assert_eq!(a.recv(&mut [0; 8]).unwrap(), 0, "on a plain thread");
    });
}
