//! A demo and benchmark target, not an HTTP library: a small HTTP/1.1 "hello" server that
//! answers every request with the same body — one fiber per connection, keep-alive and
//! pipelining, on `httparse`. It is the embedded target of load tests and the body of the
//! `http_hello` example.

use crate::net::{TcpListener, TcpStream, ToSocketAddrs};
use fibra_runtime::{CancelToken, Handle, JoinHandle, ScopeOptions};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The body of every successful response.
pub const HELLO: &str = "Hello, world!";

const OK_KEEP_ALIVE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, world!";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, world!";
const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const TOO_LARGE: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const NOT_IMPLEMENTED: &[u8] =
    b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Requests larger than this (request line and headers) get `431` and the connection closes.
const MAX_HEAD: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;

/// A running hello server: every request (any method and path) gets `200 OK` with the body
/// [`HELLO`] (`HEAD` gets the same headers and no body). Connections are kept alive (HTTP/1.1
/// default, or HTTP/1.0 with `Connection: keep-alive`) and pipelined requests are answered in
/// order. Request bodies with `Content-Length` are read and ignored; chunked request bodies get
/// `501`, malformed requests `400`, both closing the connection.
///
/// Dropping the server (or [`stop`](Self::stop)) cancels the accept loop and every connection
/// fiber and waits for them.
///
/// ```
/// use std::io::{Read, Write};
///
/// fibra::run(|| {
///     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
///     let mut conn = fibra::net::TcpStream::connect(server.local_addr()).unwrap();
///     conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
///     let mut reply = String::new();
///     conn.read_to_string(&mut reply).unwrap();
///     assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"));
///     assert!(reply.ends_with("\r\n\r\nHello, world!"));
///     assert_eq!(server.requests(), 1);
/// });
/// ```
#[derive(Debug)]
pub struct HelloServer {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    stop: CancelToken,
    server: Option<JoinHandle<()>>,
}

/// Binds `addr` and serves it from fibers of the calling fiber's runtime (see
/// [`HelloServer`]): a demo and benchmark target that answers every request with [`HELLO`].
///
/// # Errors
///
/// As [`TcpListener::bind`].
///
/// # Panics
///
/// Outside a fibra runtime; use [`HelloServer::serve`] with a [`Handle`] from elsewhere.
///
/// ```
/// fibra::run(|| {
///     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
///     println!("serving on http://{}", server.local_addr());
///     server.stop();
/// });
/// ```
pub fn hello_server<A: ToSocketAddrs>(addr: A) -> io::Result<HelloServer> {
    let listener = TcpListener::bind(addr)?;
    Ok(HelloServer::serve(&Handle::current(), listener))
}

impl HelloServer {
    /// Serves `listener` from fibers spawned on `handle`'s runtime.
    ///
    /// ```
    /// let runtime = fibra::Runtime::new().unwrap().into_background().unwrap();
    /// let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let server = fibra::net::http::HelloServer::serve(&runtime.handle(), listener);
    /// assert!(server.local_addr().ip().is_loopback());
    /// server.stop();
    /// ```
    pub fn serve(handle: &Handle, listener: TcpListener) -> HelloServer {
        let addr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let requests = Arc::new(AtomicU64::new(0));
        let stop = CancelToken::new();
        let server = {
            let (requests, stop) = (requests.clone(), stop.clone());
            handle.spawn(move || accept_loop(listener, &requests, stop))
        };
        HelloServer {
            addr,
            requests,
            stop,
            server: Some(server),
        }
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests have been answered with `200 OK` so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection and waits until all its fibers are gone.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for HelloServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(server) = self.server.take() {
            // An error means the runtime went away first, which also ended the server.
            let _ = server.join();
        }
    }
}

fn accept_loop(listener: TcpListener, requests: &AtomicU64, stop: CancelToken) {
    // Cancelling the token unwinds the accept and every connection fiber of the scope.
    let _ = fibra_runtime::scope_with(ScopeOptions::new().token(stop), |s| loop {
        match listener.accept() {
            Ok((conn, _)) => {
                s.spawn(move || {
                    if let Err(error) = serve_connection(&conn, requests) {
                        tracing::debug!(%error, "hello server: connection ended");
                    }
                });
            }
            Err(error) => {
                // Out of descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "hello server: accept failed");
                fibra_runtime::sleep(Duration::from_millis(10));
            }
        }
    });
}

/// Answers the requests of one connection until the peer closes or a response closes it.
fn serve_connection(conn: &TcpStream, requests: &AtomicU64) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut input = vec![0u8; 8 * 1024];
    let mut filled = 0;
    let mut body_left = 0usize;
    let mut output = Vec::with_capacity(OK_KEEP_ALIVE.len());
    loop {
        let n = (&*conn).read(&mut input[filled..])?;
        if n == 0 {
            return Ok(());
        }
        // Skip what is left of a body that did not fit in the previous reads.
        let skipped = body_left.min(n);
        body_left -= skipped;
        input.copy_within(filled + skipped..filled + n, filled);
        filled += n - skipped;
        if body_left > 0 {
            continue;
        }
        let answered = answer(&input[..filled], &mut output);
        requests.fetch_add(answered.ok, Ordering::Relaxed);
        if !output.is_empty() {
            (&*conn).write_all(&output)?;
            output.clear();
        }
        if answered.close {
            return Ok(());
        }
        input.copy_within(answered.consumed..filled, 0);
        filled -= answered.consumed;
        body_left = answered.body_left;
        if filled == input.len() {
            if input.len() >= MAX_HEAD {
                (&*conn).write_all(TOO_LARGE)?;
                return Ok(());
            }
            input.resize(input.len() * 2, 0);
        }
    }
}

/// What [`answer`] did with a buffer of input.
#[derive(Debug, PartialEq, Eq)]
struct Answered {
    /// Input bytes used up (complete requests, and the part of a body that was there).
    consumed: usize,
    /// Bytes of the last request's body still to come, to be skipped.
    body_left: usize,
    /// `200 OK` responses written.
    ok: u64,
    /// Whether the connection must close after the output is sent.
    close: bool,
}

/// Answers every complete request at the start of `input`, appending the responses to
/// `output` in order.
fn answer(input: &[u8], output: &mut Vec<u8>) -> Answered {
    let mut answered = Answered {
        consumed: 0,
        body_left: 0,
        ok: 0,
        close: false,
    };
    while answered.consumed < input.len() {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        let head = match request.parse(&input[answered.consumed..]) {
            Ok(httparse::Status::Complete(head)) => head,
            Ok(httparse::Status::Partial) => break,
            Err(_) => {
                output.extend_from_slice(BAD_REQUEST);
                answered.close = true;
                break;
            }
        };
        let framing = match Framing::of(&request) {
            Ok(framing) => framing,
            Err(response) => {
                output.extend_from_slice(response);
                answered.close = true;
                break;
            }
        };
        let available = input.len() - answered.consumed - head;
        let body = framing.body.min(available);
        answered.consumed += head + body;
        answered.body_left = framing.body - body;
        answered.ok += 1;
        let response = if framing.keep_alive {
            OK_KEEP_ALIVE
        } else {
            OK_CLOSE
        };
        // A response to HEAD has the headers of the GET response and no body.
        let sent = if request.method == Some("HEAD") {
            &response[..response.len() - HELLO.len()]
        } else {
            response
        };
        output.extend_from_slice(sent);
        if !framing.keep_alive {
            answered.close = true;
            break;
        }
        if answered.body_left > 0 {
            break;
        }
    }
    answered
}

/// How a request is framed and whether its connection stays open.
struct Framing {
    body: usize,
    keep_alive: bool,
}

impl Framing {
    fn of(request: &httparse::Request<'_, '_>) -> Result<Framing, &'static [u8]> {
        let mut framing = Framing {
            body: 0,
            keep_alive: request.version == Some(1),
        };
        for header in request.headers.iter() {
            if header.name.eq_ignore_ascii_case("content-length") {
                framing.body = std::str::from_utf8(header.value)
                    .ok()
                    .and_then(|value| value.trim().parse().ok())
                    .ok_or(BAD_REQUEST)?;
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(NOT_IMPLEMENTED);
            } else if header.name.eq_ignore_ascii_case("connection") {
                let value = header.value;
                if has_token(value, "close") {
                    framing.keep_alive = false;
                } else if has_token(value, "keep-alive") {
                    framing.keep_alive = true;
                }
            }
        }
        Ok(framing)
    }
}

fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> (Answered, String) {
        let mut output = Vec::new();
        let answered = answer(input, &mut output);
        (answered, String::from_utf8(output).unwrap())
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_and_a_partial_one_waits() {
        let input = b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nGET /c HT";
        let (answered, output) = run(input);
        assert_eq!(answered.ok, 2);
        assert_eq!(answered.consumed, 38);
        assert!(!answered.close);
        assert_eq!(output.matches("200 OK").count(), 2);
        assert_eq!(output.len(), 2 * OK_KEEP_ALIVE.len());
    }

    #[test]
    fn head_gets_the_headers_without_the_body() {
        let (answered, output) = run(b"HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        assert_eq!(answered.ok, 2);
        let (head, get) = output.split_at(OK_KEEP_ALIVE.len() - HELLO.len());
        assert!(head.ends_with("Content-Length: 13\r\n\r\n"));
        assert_eq!(get.as_bytes(), OK_KEEP_ALIVE);
    }

    #[test]
    fn content_length_is_right() {
        let head = std::str::from_utf8(OK_KEEP_ALIVE).unwrap();
        let (headers, body) = head.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, HELLO);
        assert!(headers.contains(&format!("Content-Length: {}", HELLO.len())));
        assert!(std::str::from_utf8(OK_CLOSE).unwrap().ends_with(HELLO));
    }

    #[test]
    fn bodies_are_skipped_even_across_reads() {
        let (answered, _) =
            run(b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyGET / HTTP/1.1\r\n\r\n");
        assert_eq!((answered.ok, answered.body_left), (2, 0));
        let (answered, _) = run(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
        assert_eq!(answered.ok, 1);
        assert_eq!(answered.body_left, 7);
        assert_eq!(answered.consumed, 42);
    }

    #[test]
    fn close_and_http_1_0_end_the_connection() {
        let (answered, output) =
            run(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n");
        assert_eq!((answered.ok, answered.close), (1, true));
        assert!(output.contains("Connection: close"));
        let (answered, _) = run(b"GET / HTTP/1.0\r\n\r\n");
        assert!(answered.close);
        let (answered, _) = run(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(!answered.close);
    }

    #[test]
    fn bad_and_chunked_requests_get_an_error_and_close() {
        let (answered, output) = run(b"\x01\x02 nonsense\r\n\r\n");
        assert_eq!((answered.ok, answered.close), (0, true));
        assert!(output.starts_with("HTTP/1.1 400"));
        let (answered, output) =
            run(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
        assert_eq!((answered.ok, answered.close), (0, true));
        assert!(output.starts_with("HTTP/1.1 501"));
        let (_, output) = run(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n");
        assert!(output.starts_with("HTTP/1.1 400"));
    }
}
