//! UDP: round trips with exact counts, connected sockets, timeouts, cancellation, errors.

use fibra_net::net::UdpSocket;
use std::io;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn round_trips_under_1_2_and_4_workers() {
    const PEERS: usize = 20;
    const ROUNDS: usize = 50;
    for workers in [1, 2, 4] {
        let echoed = fibra_testing::on(workers, || {
            let server = UdpSocket::bind("127.0.0.1:0").unwrap();
            let addr = server.local_addr().unwrap();
            let echo = fibra_runtime::spawn(move || {
                let mut buf = [0; 64];
                for _ in 0..PEERS * ROUNDS {
                    let (n, from) = server.recv_from(&mut buf).unwrap();
                    server.send_to(&buf[..n], from).unwrap();
                }
                PEERS * ROUNDS
            });
            fibra_runtime::scope(|s| {
                for p in 0..PEERS {
                    s.spawn(move || {
                        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                        socket.connect(addr).unwrap();
                        for r in 0..ROUNDS {
                            let message = [(p * ROUNDS + r) as u8; 32];
                            socket.send(&message).unwrap();
                            let mut back = [0; 64];
                            let n = socket.recv(&mut back).unwrap();
                            assert_eq!(&back[..n], &message);
                        }
                    });
                }
            });
            echo.join().unwrap()
        });
        assert_eq!(echoed, PEERS * ROUNDS);
    }
}

#[test]
fn peek_leaves_the_datagram_and_a_timeout_is_would_block() {
    fibra_runtime::run(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        assert_eq!(
            b.recv_from(&mut [0; 8]).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        a.send_to(b"peeked", b.local_addr().unwrap()).unwrap();
        let mut buf = [0; 8];
        let (n, from) = b.peek_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], from), (&b"peeked"[..], a.local_addr().unwrap()));
        let (n, _) = b.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"peeked");
        assert_eq!(
            b.recv_from(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    });
}

#[test]
fn a_cancelled_recv_took_no_datagram() {
    for workers in [1, 2] {
        fibra_testing::on(workers, || {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let outcome = fibra_testing::cancel_after(Duration::from_millis(10), || {
                let _ = socket.recv_from(&mut [0; 8]);
                unreachable!("nothing was sent");
            });
            assert!(outcome.is_err());
            let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
            sender
                .send_to(b"kept", socket.local_addr().unwrap())
                .unwrap();
            let mut buf = [0; 8];
            let (n, _) = socket.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"kept");
        });
    }
}

#[test]
fn errors_are_std_kinds() {
    fibra_runtime::run(|| {
        let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
        let in_use = UdpSocket::bind(taken.local_addr().unwrap()).unwrap_err();
        assert_eq!(in_use.kind(), io::ErrorKind::AddrInUse);
        let no_address = taken.send_to(b"x", &[][..]).unwrap_err();
        assert_eq!(no_address.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            taken.peer_addr().unwrap_err().kind(),
            io::ErrorKind::NotConnected
        );
        // A connected socket learns of the closed port from the ICMP error.
        let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        taken.connect(closed_addr).unwrap();
        taken.send(b"anyone?").unwrap();
        let refused = taken.recv(&mut [0; 8]).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        taken.set_broadcast(true).unwrap();
        assert!(taken.broadcast().unwrap());
        taken.set_ttl(9).unwrap();
        assert_eq!(taken.ttl().unwrap(), 9);
    });
}

/// A receive from a connected socket's peer, as the fiber calls it.
type Receive = fn(&UdpSocket) -> io::Result<()>;

#[test]
fn a_connected_receive_parked_on_the_reactor_wakes_for_an_icmp_refusal() {
    let receives: [(&str, Receive); 4] = [
        ("recv", |socket| socket.recv(&mut [0; 8]).map(drop)),
        ("recv_from", |socket| {
            socket.recv_from(&mut [0; 8]).map(drop)
        }),
        ("peek", |socket| socket.peek(&mut [0; 8]).map(drop)),
        ("peek_from", |socket| {
            socket.peek_from(&mut [0; 8]).map(drop)
        }),
    ];
    for (name, receive) in receives {
        let outcome = fibra_testing::on(2, move || {
            let a = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
            let dead = UdpSocket::bind("127.0.0.1:0").unwrap();
            let to = dead.local_addr().unwrap();
            drop(dead);
            a.connect(to).unwrap();
            let receiver = {
                let a = a.clone();
                // The timeout only bounds a regression: the refusal ends the wait.
                fibra_runtime::spawn(move || {
                    fibra_runtime::timeout(Duration::from_secs(5), || {
                        receive(&a).map_err(|error| error.kind())
                    })
                })
            };
            // The refusal must come while the receiver waits on the reactor, not be found
            // by a retry.
            fibra_testing::until_parked(receiver.fiber());
            a.send(b"x").unwrap();
            receiver.join().unwrap().ok()
        });
        assert_eq!(
            outcome,
            Some(Err(io::ErrorKind::ConnectionRefused)),
            "{name}"
        );
    }
}

/// The multicast options take and report what std's do on the same machine (joining may be
/// refused where no interface takes multicast: then by both alike).
#[test]
fn multicast_options_are_stds() {
    fibra_runtime::Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .block_on(|| {
            use std::net::{Ipv4Addr, Ipv6Addr};
            let ours = UdpSocket::bind("0.0.0.0:0").unwrap();
            let theirs = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
            ours.set_multicast_loop_v4(false).unwrap();
            assert!(!ours.multicast_loop_v4().unwrap());
            ours.set_multicast_ttl_v4(7).unwrap();
            assert_eq!(ours.multicast_ttl_v4().unwrap(), 7);
            let group = Ipv4Addr::new(239, 255, 42, 99);
            let any = Ipv4Addr::UNSPECIFIED;
            let joined = ours.join_multicast_v4(&group, &any).map_err(|e| e.kind());
            assert_eq!(
                joined,
                theirs.join_multicast_v4(&group, &any).map_err(|e| e.kind())
            );
            assert_eq!(
                ours.leave_multicast_v4(&group, &any).map_err(|e| e.kind()),
                theirs
                    .leave_multicast_v4(&group, &any)
                    .map_err(|e| e.kind())
            );
            // IPv6 options on an IPv4 socket fail as std's do.
            let group6 = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x4299);
            assert_eq!(
                ours.join_multicast_v6(&group6, 0).map_err(|e| e.kind()),
                theirs.join_multicast_v6(&group6, 0).map_err(|e| e.kind())
            );
            assert_eq!(
                ours.leave_multicast_v6(&group6, 0).map_err(|e| e.kind()),
                theirs.leave_multicast_v6(&group6, 0).map_err(|e| e.kind())
            );
            assert_eq!(
                ours.set_multicast_loop_v6(false).map_err(|e| e.kind()),
                theirs.set_multicast_loop_v6(false).map_err(|e| e.kind())
            );
            assert_eq!(
                ours.multicast_loop_v6().map_err(|e| e.kind()),
                theirs.multicast_loop_v6().map_err(|e| e.kind())
            );
        });
}
