//! The reactor's readiness as a stream uses it: a registered stream is tried only when the
//! reactor may have something new (or while a blocked call retries before it waits, or once
//! when a wait that skips its retries follows a short transfer), a short transfer clears
//! readiness, and no clear ever hides data or space that arrived meanwhile.
//!
//! This test binary defines `recv` itself, counting the calls on one descriptor and passing
//! every call on to the kernel: std's `TcpStream::read` calls `recv`, and a symbol defined in
//! the executable takes the place of libc's for the whole binary.

use fibra_net::net::{TcpListener, TcpStream, UnixStream};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The descriptor whose `recv` calls are counted (-1: none).
static WATCHED: AtomicI32 = AtomicI32::new(-1);
/// `recv` calls on `WATCHED` since it was set.
static RECVS: AtomicUsize = AtomicUsize::new(0);
/// Held by a test that watches a descriptor (the tests of this binary run at once).
static WATCHING: Mutex<()> = Mutex::new(());

/// Waits until no other test watches a descriptor; the guard keeps the others waiting.
fn watching() -> MutexGuard<'static, ()> {
    WATCHING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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

/// How many of `waits` waits in a row run their retries when every retry misses, by the
/// schedule the retry hint keeps: after `n` missed runs in a row, the next `2^n - 1` waits
/// (at most 63) skip them.
fn retry_runs(waits: usize) -> usize {
    let (mut runs, mut wait, mut missed) = (0, 0, 0);
    while wait < waits {
        runs += 1;
        missed = (missed + 1).min(6);
        wait += 1 << missed;
    }
    runs
}

#[test]
fn a_registered_stream_whose_retries_miss_makes_one_recv_per_message_and_skipped_wait() {
    const ROUNDS: usize = 200;
    let _watching = watching();
    let recvs = fibra_testing::on(1, || {
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
        // Nothing is sent while the echo's read retries: each message waits until the read
        // has given up retrying and parked on the reactor, so every retry misses.
        for round in 0..ROUNDS {
            fibra_testing::until_parked(echo.fiber());
            let message = [round as u8; 8];
            client.write_all(&message).unwrap();
            let mut back = [0; 8];
            client.read_exact(&mut back).unwrap();
            assert_eq!(back, message);
        }
        fibra_testing::until_parked(echo.fiber());
        drop(client);
        echo.join().unwrap()
    });
    // The first `WouldBlock`, the retry runs (the wait before each message and the one before
    // the end), one `recv` per message (each a short read: the next read goes to its wait
    // without asking the kernel first), one per wait that skips its retries (a short read's
    // clear is a guess, which such a wait checks once before it trusts the reactor), and the
    // end of the stream.
    let (waits, runs) = (ROUNDS + 1, retry_runs(ROUNDS + 1));
    let retries = fibra_runtime::wait::RETRY_TURNS as usize * runs;
    assert_eq!(recvs, 1 + retries + (waits - runs) + ROUNDS + 1);
}

#[test]
fn a_read_whose_data_comes_during_its_retries_does_not_wait_for_the_reactor() {
    let _watching = watching();
    let (recvs, echo_parked) = fibra_testing::on(1, || {
        let (mut client, server) = tcp_pair();
        WATCHED.store(server.as_raw_fd(), Ordering::SeqCst);
        RECVS.store(0, Ordering::SeqCst);
        let parks = || fibra_runtime::Handle::current().metrics().workers[0].parks;
        let reader = fibra_runtime::spawn(move || {
            let mut buf = [0; 8];
            let n = (&server).read(&mut buf).unwrap();
            WATCHED.store(-1, Ordering::SeqCst);
            (n, RECVS.load(Ordering::SeqCst))
        });
        let before = parks();
        // The reader starts, finds nothing and yields to retry; this fiber then sends.
        fibra_runtime::yield_now();
        client.write_all(b"ping").unwrap();
        // Joining parks this fiber once; a reader that had waited for the reactor would
        // have parked too.
        let (n, recvs) = reader.join().unwrap();
        assert_eq!(n, 4);
        (recvs, parks() - before - 1)
    });
    assert_eq!(recvs, 2, "one `WouldBlock`, then the retry that read");
    assert_eq!(echo_parked, 0, "the reader never parked");
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
