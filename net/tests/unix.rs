//! Unix domain sockets: stream echo with exact counts, datagrams by path, error kinds.

use fibra_net::net::{UnixDatagram, UnixListener, UnixStream};
use fibra_testing::TempDir;
use std::io::{self, Read, Write};
use std::net::Shutdown;

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
