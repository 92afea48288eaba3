//! `into_std` puts the socket back in blocking mode, and the mode is the socket's, shared by
//! every clone: a fiber receiving through a live clone must still park, not block its worker.

use fibra_net::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixStream};
use std::io::{self, Read, Write};
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

/// The scenario every socket type shares: `socket` is cloned and given back with `into_std`,
/// which makes it blocking; the clone then receives (`receive`) in a fiber, and `send` sends the
/// data only once that fiber has run its receive and let the main fiber run again, which it
/// cannot if the receive blocked the only worker's thread.
fn a_clone_still_parks_after_into_std<S: Send + 'static, Std>(
    socket: S,
    try_clone: impl FnOnce(&S) -> io::Result<S>,
    into_std: impl FnOnce(S) -> io::Result<Std>,
    receive: impl FnOnce(&S, &mut [u8]) -> io::Result<usize> + Send + 'static,
    send: impl FnOnce(),
) {
    let clone = try_clone(&socket).unwrap();
    let std_socket = into_std(socket).unwrap();
    let receiver = fibra_runtime::spawn(move || {
        let mut buf = [0; 8];
        let n = receive(&clone, &mut buf).unwrap();
        buf[..n].to_vec()
    });
    fibra_testing::let_others_run();
    send();
    assert_eq!(receiver.join().unwrap(), b"late");
    drop(std_socket);
}

#[test]
fn a_tcp_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        a_clone_still_parks_after_into_std(
            conn,
            TcpStream::try_clone,
            TcpStream::into_std,
            |clone, buf| (&*clone).read(buf),
            || client.write_all(b"late").unwrap(),
        );
    });
}

#[test]
fn a_unix_stream_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let (a, mut b) = UnixStream::pair().unwrap();
        a_clone_still_parks_after_into_std(
            a,
            UnixStream::try_clone,
            UnixStream::into_std,
            |clone, buf| (&*clone).read(buf),
            || b.write_all(b"late").unwrap(),
        );
    });
}

#[test]
fn a_udp_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = a.local_addr().unwrap();
        a_clone_still_parks_after_into_std(
            a,
            UdpSocket::try_clone,
            UdpSocket::into_std,
            |clone, buf| Ok(clone.recv_from(buf)?.0),
            || assert_eq!(b.send_to(b"late", to).unwrap(), 4),
        );
    });
}

#[test]
fn a_unix_datagram_clone_still_parks_after_into_std() {
    on_one_worker_or_fail(|| {
        let (a, b) = UnixDatagram::pair().unwrap();
        a_clone_still_parks_after_into_std(
            a,
            UnixDatagram::try_clone,
            UnixDatagram::into_std,
            |clone, buf| {
                let (n, from) = clone.recv_from(buf)?;
                assert!(from.is_unnamed(), "a pair's sockets are unnamed");
                Ok(n)
            },
            || assert_eq!(b.send(b"late").unwrap(), 4),
        );
    });
}
