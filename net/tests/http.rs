//! The hello server driven by an `httparse` client in fibers: keep-alive, pipelining, stop.

use fibra_net::net::http::{hello_server, HELLO};
use fibra_net::net::TcpStream;
use std::io::{self, Read, Write};

/// Reads responses from `conn` into `buffer` until `count` complete ones were parsed, checking
/// each is `200` with the hello body. Returns the bytes left over.
fn read_responses(conn: &TcpStream, count: usize, buffer: &mut Vec<u8>) {
    let mut parsed = 0;
    let mut chunk = [0u8; 4096];
    while parsed < count {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head) = response.parse(buffer).unwrap() {
            assert_eq!(response.code, Some(200));
            let length: usize = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                .unwrap();
            if buffer.len() >= head + length {
                assert_eq!(&buffer[head..head + length], HELLO.as_bytes());
                buffer.drain(..head + length);
                parsed += 1;
                continue;
            }
        }
        let n = (&*conn).read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "the server closed after {parsed} of {count} responses"
        );
        buffer.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn keep_alive_clients_get_every_response_under_1_2_and_4_workers() {
    const CLIENTS: usize = 50;
    const REQUESTS: usize = 20;
    for workers in [1, 2, 4] {
        let served = fibra_testing::on(workers, || {
            let server = hello_server("127.0.0.1:0").unwrap();
            let addr = server.local_addr();
            fibra_runtime::scope(|s| {
                for _ in 0..CLIENTS {
                    s.spawn(move || {
                        let conn = TcpStream::connect(addr).unwrap();
                        let mut buffer = Vec::new();
                        for _ in 0..REQUESTS {
                            (&conn)
                                .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                                .unwrap();
                            read_responses(&conn, 1, &mut buffer);
                        }
                        assert!(buffer.is_empty());
                    });
                }
            });
            server.requests()
        });
        assert_eq!(served, (CLIENTS * REQUESTS) as u64, "{workers} workers");
    }
}

#[test]
fn pipelined_requests_split_anywhere_are_answered_in_order() {
    fibra_runtime::run(|| {
        let server = hello_server("127.0.0.1:0").unwrap();
        let conn = TcpStream::connect(server.local_addr()).unwrap();
        conn.set_nodelay(true).unwrap();
        let one = b"POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcdeGET / HTTP/1.1\r\n\r\n";
        let all: Vec<u8> = one.iter().copied().cycle().take(one.len() * 10).collect();
        // Odd-sized pieces split request lines, headers and bodies across reads.
        for piece in all.chunks(7) {
            (&conn).write_all(piece).unwrap();
            fibra_runtime::yield_now();
        }
        let mut buffer = Vec::new();
        read_responses(&conn, 20, &mut buffer);
        assert!(buffer.is_empty());
        assert_eq!(server.requests(), 20);
    });
}

#[test]
fn connection_close_and_bad_requests_end_the_connection() {
    fibra_runtime::run(|| {
        let server = hello_server("127.0.0.1:0").unwrap();
        let mut conn = TcpStream::connect(server.local_addr()).unwrap();
        conn.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        assert_eq!(reply.matches("200 OK").count(), 1);
        let mut conn = TcpStream::connect(server.local_addr()).unwrap();
        conn.write_all(b"BAD\x01 REQUEST\r\n\r\n").unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 400 Bad Request"));
        assert_eq!(server.requests(), 1);
    });
}

#[test]
fn stopping_closes_connections_and_the_listener() {
    for workers in [1, 2] {
        fibra_testing::on(workers, || {
            let server = hello_server("127.0.0.1:0").unwrap();
            let addr = server.local_addr();
            let mut idle = TcpStream::connect(addr).unwrap();
            idle.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            let mut buffer = Vec::new();
            read_responses(&idle, 1, &mut buffer);
            server.stop();
            assert_eq!(idle.read(&mut [0; 16]).unwrap(), 0);
            let refused = TcpStream::connect(addr).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        });
    }
}
