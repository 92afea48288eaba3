//! `SyncIo` over tokio streams and socket conversions between fibra and tokio.

use fibra_integration::{FromTokio, IntoTokio, SyncIo};
use fibra_net::net::{TcpListener, TcpStream, UdpSocket, UnixStream};
use fibra_runtime::Runtime;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

#[test]
fn sync_io_moves_a_megabyte_through_a_small_duplex_under_1_2_and_4_workers() {
    const BYTES: usize = 1 << 20;
    for workers in [1, 2, 4] {
        let got = fibra_testing::on(workers, || {
            // 4 KiB of capacity: the writer parks on a full duplex again and again.
            let (a, b) = tokio::io::duplex(4096);
            let writer = fibra_runtime::spawn(move || {
                let mut a = SyncIo::new(a);
                for i in 0..BYTES / 1024 {
                    a.write_all(&[(i % 256) as u8; 1024]).unwrap();
                }
                a.flush().unwrap();
                a.shutdown().unwrap();
            });
            let mut all = Vec::new();
            SyncIo::new(b).read_to_end(&mut all).unwrap();
            writer.join().unwrap();
            all
        });
        assert_eq!(got.len(), BYTES);
        assert!(got
            .chunks(1024)
            .enumerate()
            .all(|(i, chunk)| chunk.iter().all(|&b| b == (i % 256) as u8)));
    }
}

#[test]
fn a_line_protocol_runs_over_sync_io() {
    fibra_runtime::run(|| {
        let (a, b) = tokio::io::duplex(64);
        let server = fibra_runtime::spawn(move || {
            let mut b = BufReader::new(SyncIo::new(b));
            let mut line = String::new();
            let mut lines = 0;
            while b.read_line(&mut line).unwrap() > 0 {
                lines += 1;
                let reply = line.to_uppercase();
                b.get_mut().write_all(reply.as_bytes()).unwrap();
                line.clear();
            }
            lines
        });
        let mut a = BufReader::new(SyncIo::new(a));
        for n in 0..100 {
            a.get_mut()
                .write_all(format!("line {n}\n").as_bytes())
                .unwrap();
            let mut reply = String::new();
            a.read_line(&mut reply).unwrap();
            assert_eq!(reply, format!("LINE {n}\n"));
        }
        a.get_mut().shutdown().unwrap();
        assert_eq!(server.join().unwrap(), 100);
    });
}

#[test]
fn a_cancelled_sync_io_read_consumed_nothing() {
    fibra_runtime::run(|| {
        let (a, b) = tokio::io::duplex(64);
        let mut b = SyncIo::new(b);
        let outcome = fibra_testing::cancel_after(Duration::from_millis(10), || {
            let _ = b.read(&mut [0; 8]);
            unreachable!("nothing was written");
        });
        assert!(outcome.is_err());
        let mut a = SyncIo::new(a);
        a.write_all(b"kept").unwrap();
        let mut buf = [0; 4];
        b.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"kept");
    });
}

#[test]
fn a_fibra_stream_converted_to_tokio_is_served_by_a_tokio_task() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .workers(2)
        .tokio_handle(tokio.handle().clone())
        .build()
        .unwrap();
    let handle = tokio.handle().clone();
    let echoed = runtime.block_on(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let conn = conn.into_tokio().unwrap();
        let task = handle.spawn(async move {
            let (mut read, mut write) = conn.into_split();
            tokio::io::copy(&mut read, &mut write).await.unwrap()
        });
        for n in 0..100u32 {
            client.write_all(&n.to_le_bytes()).unwrap();
            let mut back = [0; 4];
            client.read_exact(&mut back).unwrap();
            assert_eq!(u32::from_le_bytes(back), n);
        }
        client.shutdown(std::net::Shutdown::Write).unwrap();
        fibra_runtime::block_on(task).unwrap()
    });
    assert_eq!(echoed, 400);
}

#[test]
fn sockets_round_trip_through_tokio_types() {
    fibra_runtime::run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let listener = TcpListener::from_tokio(listener.into_tokio().unwrap()).unwrap();
        assert_eq!(listener.local_addr().unwrap(), addr);
        let client = TcpStream::connect(addr).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let mut client = TcpStream::from_tokio(client.into_tokio().unwrap()).unwrap();
        client.write_all(b"after").unwrap();
        let mut buf = [0; 5];
        (&conn).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"after");

        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_addr = udp.local_addr().unwrap();
        let udp = UdpSocket::from_tokio(udp.into_tokio().unwrap()).unwrap();
        udp.send_to(b"self", udp_addr).unwrap();
        assert_eq!(udp.recv_from(&mut [0; 8]).unwrap(), (4, udp_addr));

        let (a, b) = UnixStream::pair().unwrap();
        let a = UnixStream::from_tokio(a.into_tokio().unwrap()).unwrap();
        (&a).write_all(b"unix").unwrap();
        let mut buf = [0; 4];
        (&b).read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"unix");
    });
}
