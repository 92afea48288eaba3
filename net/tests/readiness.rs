//! The reactor's readiness as a stream uses it: a registered stream is tried only when the
//! reactor may have something new, a short transfer clears readiness, and no clear ever hides
//! data or space that arrived meanwhile.
//!
//! This test binary defines `recv` itself, counting the calls on one descriptor and passing
//! every call on to the kernel: std's `TcpStream::read` calls `recv`, and a symbol defined in
//! the executable takes the place of libc's for the whole binary.

use fibra_net::net::{TcpListener, TcpStream, UnixStream};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// The descriptor whose `recv` calls are counted (-1: none).
static WATCHED: AtomicI32 = AtomicI32::new(-1);
/// `recv` calls on `WATCHED` since it was set.
static RECVS: AtomicUsize = AtomicUsize::new(0);

/// libc's `recv`, counted on [`WATCHED`].
///
/// # Safety
///
/// As `recv(2)`: `buf` is valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn recv(
    fd: libc::c_int,
    buf: *mut libc::c_void,
    len: libc::size_t,
    flags: libc::c_int,
) -> libc::ssize_t {
    if fd == WATCHED.load(Ordering::SeqCst) {
        RECVS.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: `recv` is `recvfrom` without an address; the caller vouches for `buf` and `len`
    // as `recv(2)` requires, and null address pointers ask for no address. The raw syscall
    // sets `errno` and returns -1 on failure, as libc's `recv` does.
    unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            buf,
            len,
            flags,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        ) as libc::ssize_t
    }
}

/// A connected TCP pair: (client, accepted).
fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (accepted, _) = listener.accept().unwrap();
    client.set_nodelay(true).unwrap();
    accepted.set_nodelay(true).unwrap();
    (client, accepted)
}

#[test]
fn a_registered_stream_makes_one_recv_per_message() {
    const ROUNDS: usize = 200;
    for workers in fibra_testing::WORKER_COUNTS {
        let recvs = fibra_testing::on(workers, || {
            let (mut client, server) = tcp_pair();
            WATCHED.store(server.as_raw_fd(), Ordering::SeqCst);
            RECVS.store(0, Ordering::SeqCst);
            let echo = fibra_runtime::spawn(move || {
                let mut buf = [0; 1024];
                loop {
                    let n = (&server).read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    (&server).write_all(&buf[..n]).unwrap();
                }
                WATCHED.store(-1, Ordering::SeqCst);
                RECVS.load(Ordering::SeqCst)
            });
            // Its first read has said `WouldBlock` and registered the stream.
            fibra_testing::until_parked(echo.fiber());
            for round in 0..ROUNDS {
                let message = [round as u8; 8];
                client.write_all(&message).unwrap();
                let mut back = [0; 8];
                client.read_exact(&mut back).unwrap();
                assert_eq!(back, message);
            }
            drop(client);
            echo.join().unwrap()
        });
        // The first `WouldBlock`, one `recv` per message (each a short read: the next read
        // waits for the reactor without asking the kernel), and the end of the stream.
        assert_eq!(recvs, 1 + ROUNDS + 1, "{workers} workers");
    }
}

/// The `i`th byte of the stream the writers send.
fn byte(i: usize) -> u8 {
    (i % 251) as u8
}

/// Reads until `total` bytes have come, with a buffer larger than any chunk (every read is
/// short), checking each byte.
fn read_all(mut reader: impl Read, total: usize) {
    let mut buf = [0; 4096];
    let mut seen = 0;
    while seen < total {
        let n = reader.read(&mut buf).unwrap();
        assert_ne!(n, 0, "end of stream after {seen} of {total} bytes");
        for (offset, &got) in buf[..n].iter().enumerate() {
            assert_eq!(got, byte(seen + offset), "byte {}", seen + offset);
        }
        seen += n;
    }
}

/// Short reads, with more data coming both while the reader is parked and while it runs.
fn short_reads_then_more_data<S>(pair: fn() -> (S, S))
where
    S: Send + 'static,
    for<'a> &'a S: Read + Write,
{
    const CHUNKS: usize = 400;
    fibra_testing::on_each_worker_count(|_| {
        let (writer, reader) = pair();
        let sizes = |chunk: usize| 1 + chunk % 97;
        let total: usize = (0..CHUNKS).map(sizes).sum();
        let reading = fibra_runtime::spawn(move || read_all(&reader, total));
        let mut sent = 0;
        for chunk in 0..CHUNKS {
            // Every other pair of chunks: once the reader has parked after a short read
            // cleared its readiness; otherwise while it may be reading.
            if chunk % 4 == 0 {
                fibra_testing::until_parked(reading.fiber());
            }
            let data: Vec<u8> = (sent..sent + sizes(chunk)).map(byte).collect();
            (&writer).write_all(&data).unwrap();
            sent += data.len();
        }
        reading.join().unwrap();
    });
}

#[test]
fn short_tcp_reads_followed_by_more_data_never_hang() {
    short_reads_then_more_data(tcp_pair);
}

#[test]
fn short_unix_reads_followed_by_more_data_never_hang() {
    short_reads_then_more_data(|| UnixStream::pair().unwrap());
}

/// A writer that filled the send buffer (a short write clears its readiness) is woken when
/// the reader makes room, however often that happens.
#[test]
fn a_writer_parked_after_a_short_write_is_woken_by_room() {
    const TOTAL: usize = 8 << 20;
    fibra_testing::on_each_worker_count(|_| {
        let (writer, reader) = tcp_pair();
        let writing = fibra_runtime::spawn(move || {
            let data: Vec<u8> = (0..TOTAL).map(byte).collect();
            (&writer).write_all(&data).unwrap();
        });
        // The reader starts only once the writer has filled the buffer and parked.
        fibra_testing::until_parked(writing.fiber());
        read_all(&reader, TOTAL);
        writing.join().unwrap();
    });
}
