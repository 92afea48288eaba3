//! `into_std` puts the socket back in blocking mode, and the mode is the socket's, shared by
//! every clone: a fiber receiving through a live clone must still park, not block its worker.

use fibra_net::net::{TcpListener, UdpSocket, UnixDatagram, UnixStream};
use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `test` as the main fiber of a one-worker runtime on a thread of its own and fails if it
/// has not finished within a minute: a worker blocked in a syscall never finishes it, and the
/// suite must not hang on that.
fn on_one_worker_or_fail(test: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        fibra_testing::on(1, test);
        done.send(()).unwrap();
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => runner.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the worker blocked in a receive"),
    }
}

/// Receives through `receive` in a fiber and lets `send` send the data only once the fiber
/// has run its receive and let the main fiber run again, which it cannot if the receive
/// blocked the only worker's thread.
fn receive_late(receive: impl FnOnce() -> Vec<u8> + Send + 'static, send: impl FnOnce()) {
    let receiver = fibra_runtime::spawn(receive);
    fibra_testing::let_others_run();
    send();
    assert_eq!(receiver.join().unwrap(), b"late");
}

#[test]
fn a_tcp_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let clone = conn.try_clone().unwrap();
        let std_conn = conn.into_std().unwrap();
        receive_late(
            move || {
                let mut buf = [0; 8];
                let n = (&clone).read(&mut buf).unwrap();
                buf[..n].to_vec()
            },
            || client.write_all(b"late").unwrap(),
        );
        drop(std_conn);
    });
}

#[test]
fn a_unix_stream_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let (a, mut b) = UnixStream::pair().unwrap();
        let clone = a.try_clone().unwrap();
        let std_a = a.into_std().unwrap();
        receive_late(
            move || {
                let mut buf = [0; 8];
                let n = (&clone).read(&mut buf).unwrap();
                buf[..n].to_vec()
            },
            || b.write_all(b"late").unwrap(),
        );
        drop(std_a);
    });
}

#[test]
fn a_udp_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = a.local_addr().unwrap();
        let clone = a.try_clone().unwrap();
        let std_a = a.into_std().unwrap();
        receive_late(
            move || {
                let mut buf = [0; 8];
                let (n, _) = clone.recv_from(&mut buf).unwrap();
                buf[..n].to_vec()
            },
            || assert_eq!(b.send_to(b"late", to).unwrap(), 4),
        );
        drop(std_a);
    });
}

#[test]
fn a_unix_datagram_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let (a, b) = UnixDatagram::pair().unwrap();
        let clone = a.try_clone().unwrap();
        let std_a = a.into_std().unwrap();
        receive_late(
            move || {
                let mut buf = [0; 8];
                let (n, from) = clone.recv_from(&mut buf).unwrap();
                assert!(from.is_unnamed(), "a pair's sockets are unnamed");
                buf[..n].to_vec()
            },
            || assert_eq!(b.send(b"late").unwrap(), 4),
        );
        drop(std_a);
    });
}
