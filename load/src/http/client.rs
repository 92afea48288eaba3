//! A keep-alive HTTP/1.1 client over any connector, one connection per endpoint.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use super::error::HttpError;
use super::request::Prepared;
use super::response::{is_stale, read_response, Parsed, ReadBuf, ReadFailure, Response};
use super::url::Endpoint;

/// A connection the client can bound in time: a `Read + Write` stream with per-operation
/// timeouts, like `TcpStream::set_read_timeout` and `set_write_timeout`.
pub trait Transport: Read + Write {
    /// Bounds every following read and write by `timeout` (`None`: no bound).
    fn set_io_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()>;

    /// Called between writing a request and reading its response; does nothing by default.
    fn before_response(&mut self) {}
}

/// Opens connections to endpoints.
pub trait Connect {
    /// The connection type.
    type Conn: Transport;

    /// Connects to `endpoint` within `timeout`.
    fn connect(&mut self, endpoint: &Endpoint, timeout: Duration) -> io::Result<Self::Conn>;
}

/// What one request produced.
#[derive(Debug)]
pub struct Exchange {
    /// The response.
    pub response: Response,
    /// Bytes received for it.
    pub bytes_in: u64,
    /// Bytes sent for it (including a retry on a fresh connection).
    pub bytes_out: u64,
    /// Connections opened for it (0 when a kept-alive one served it).
    pub connects: u64,
}

/// A failed request with the traffic it caused.
#[derive(Debug)]
pub struct Failure {
    /// Why it failed.
    pub error: HttpError,
    /// Bytes sent before it failed.
    pub bytes_out: u64,
    /// Connections opened for it.
    pub connects: u64,
}

/// An HTTP/1.1 client with a keep-alive connection per endpoint. A request on a kept-alive
/// connection that the server had closed is sent again once on a new connection.
pub struct Client<C: Connect> {
    connector: C,
    conns: Vec<(Endpoint, C::Conn, ReadBuf)>,
    timeout: Duration,
}

impl<C: Connect> std::fmt::Debug for Client<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connections", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl<C: Connect> Client<C> {
    /// A client whose every request (connect, send, receive) must finish within `timeout`.
    pub fn new(connector: C, timeout: Duration) -> Client<C> {
        Client {
            connector,
            conns: Vec::new(),
            timeout,
        }
    }

    /// Sends `request` and reads its response; with `keep == false` only the status is kept
    /// (the headers and the body are counted and dropped unread).
    pub fn send(&mut self, request: &Prepared, keep: bool) -> Result<Exchange, Failure> {
        self.send_at(request, keep, Instant::now())
    }

    /// [`Client::send`] for a caller that has just read the clock: the request's timeout runs
    /// from `now`.
    pub(crate) fn send_at(
        &mut self,
        request: &Prepared,
        keep: bool,
        now: Instant,
    ) -> Result<Exchange, Failure> {
        let deadline = now + self.timeout;
        // Only the first attempt began at `now`; a retry on a fresh connection reads the clock.
        let mut began = Some(now);
        let mut bytes_out = 0;
        let mut connects = 0;
        let fail = |error, bytes_out, connects| Failure {
            error,
            bytes_out,
            connects,
        };
        loop {
            let reused = self.conns.iter().position(|(e, ..)| *e == request.endpoint);
            let at = match reused {
                Some(at) => at,
                None => {
                    let conn = self
                        .connector
                        .connect(&request.endpoint, self.timeout)
                        .and_then(|mut conn| {
                            conn.set_io_timeout(Some(self.timeout))?;
                            Ok(conn)
                        })
                        .map_err(|e| fail(e.into(), bytes_out, connects))?;
                    connects += 1;
                    self.conns
                        .push((request.endpoint.clone(), conn, ReadBuf::default()));
                    self.conns.len() - 1
                }
            };
            let (_, conn, buf) = &mut self.conns[at];
            let outcome = exchange(conn, buf, request, keep, deadline, began.take());
            bytes_out += outcome.1;
            match outcome.0 {
                Ok(parsed) => {
                    if !(parsed.keep_alive && request.keep_alive) {
                        self.conns.swap_remove(at);
                    }
                    return Ok(Exchange {
                        response: parsed.response,
                        bytes_in: parsed.bytes_in,
                        bytes_out,
                        connects,
                    });
                }
                Err(failure) => {
                    self.conns.swap_remove(at);
                    match failure {
                        ReadFailure::Stale if reused.is_some() => continue,
                        ReadFailure::Stale => {
                            let closed = io::Error::new(
                                io::ErrorKind::ConnectionReset,
                                "connection closed before a response",
                            );
                            return Err(fail(closed.into(), bytes_out, connects));
                        }
                        ReadFailure::Failed(error) => return Err(fail(error, bytes_out, connects)),
                    }
                }
            }
        }
    }

    /// Closes every kept-alive connection.
    pub fn close(&mut self) {
        self.conns.clear();
    }
}

/// Writes the request and reads the response; returns the bytes written with the outcome.
/// `began` is when the request began, if this is its first attempt (see [`Timed`]).
fn exchange(
    conn: &mut impl Transport,
    buf: &mut ReadBuf,
    request: &Prepared,
    keep: bool,
    deadline: Instant,
    began: Option<Instant>,
) -> (Result<Parsed, ReadFailure>, u64) {
    let mut timed = Timed {
        conn,
        deadline,
        now: began,
        unchecked_read: began.is_some(),
    };
    if let Err(e) = timed.write_all(&request.bytes).and_then(|()| timed.flush()) {
        // A write to a connection the server closed fails like a read of one.
        let failure = if is_stale(&e) {
            ReadFailure::Stale
        } else {
            ReadFailure::Failed(e.into())
        };
        return (Err(failure), 0);
    }
    let written = request.bytes.len() as u64;
    timed.conn.before_response();
    (read_response(&mut timed, buf, request.head, keep), written)
}

/// Fails reads and writes once `deadline` has passed. Each single read or write is bounded by
/// the connection's own timeout (set once per connection, as a socket option costs a system
/// call), so a request takes at most about twice its timeout even when the server trickles.
///
/// The clock costs a read per check, so a request's first attempt skips two: its first write is
/// checked against the time the request began (`now`), and its first read is not checked,
/// since the write before it and the read itself are each bounded by the connection's timeout,
/// which keeps the bound above.
pub(crate) struct Timed<'a, T> {
    conn: &'a mut T,
    deadline: Instant,
    /// The time for the next check, instead of reading the clock.
    now: Option<Instant>,
    /// Whether the next read goes unchecked.
    unchecked_read: bool,
}

impl<'a, T> Timed<'a, T> {
    /// `conn`, every read and write of which fails with `TimedOut` from `deadline` on.
    pub(crate) fn new(conn: &'a mut T, deadline: Instant) -> Self {
        Timed {
            conn,
            deadline,
            now: None,
            unchecked_read: false,
        }
    }

    fn check(&mut self) -> io::Result<()> {
        let now = self.now.take().unwrap_or_else(Instant::now);
        if now >= self.deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                HttpError::timeout(),
            ));
        }
        Ok(())
    }
}

impl<T: Transport> Read for Timed<'_, T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !std::mem::take(&mut self.unchecked_read) {
            self.check()?;
        }
        self.conn.read(buf)
    }
}

impl<T: Transport> Write for Timed<'_, T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        self.conn.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.conn.flush()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::http::{ErrorKind, Request};
    use std::sync::{Arc, Mutex};

    /// An in-memory connection: reads a scripted reply, records what was written.
    pub(crate) struct Scripted {
        reply: io::Cursor<Vec<u8>>,
        written: Arc<Mutex<Vec<u8>>>,
        timeouts: Arc<Mutex<Vec<Option<Duration>>>>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reply.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Transport for Scripted {
        fn set_io_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
            self.timeouts.lock().unwrap().push(timeout);
            Ok(())
        }

        /// Marks the wait in the log of what was written.
        fn before_response(&mut self) {
            self.written.lock().unwrap().extend_from_slice(WAIT);
        }
    }

    const WAIT: &[u8] = b"<wait>";

    /// Hands out one scripted connection per connect, then refuses.
    #[derive(Default)]
    pub(crate) struct Script {
        pub replies: Vec<Vec<u8>>,
        pub written: Arc<Mutex<Vec<u8>>>,
        pub timeouts: Arc<Mutex<Vec<Option<Duration>>>>,
    }

    impl Connect for Script {
        type Conn = Scripted;
        fn connect(&mut self, _: &Endpoint, _: Duration) -> io::Result<Scripted> {
            if self.replies.is_empty() {
                return Err(io::ErrorKind::ConnectionRefused.into());
            }
            Ok(Scripted {
                reply: io::Cursor::new(self.replies.remove(0)),
                written: self.written.clone(),
                timeouts: self.timeouts.clone(),
            })
        }
    }

    fn get() -> Prepared {
        Request::get("http://127.0.0.1:9/".parse().unwrap()).prepare(true)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    #[test]
    fn keep_alive_reuses_one_connection() {
        let mut client = Client::new(
            Script {
                replies: vec![[OK, OK, OK].concat()],
                ..Script::default()
            },
            Duration::from_secs(5),
        );
        let connects: Vec<u64> = (0..3)
            .map(|_| client.send(&get(), true).unwrap().connects)
            .collect();
        assert_eq!(connects, [1, 0, 0]);
        let written = client.connector.written.lock().unwrap().clone();
        let request = [&get().bytes[..], WAIT].concat();
        assert_eq!(
            written,
            request.repeat(3),
            "each response waited for after its request"
        );
        let timeouts = client.connector.timeouts.lock().unwrap().clone();
        assert_eq!(
            timeouts,
            [Some(Duration::from_secs(5))],
            "set once per connection"
        );
    }

    #[test]
    fn a_connection_closed_by_the_server_is_replaced_once() {
        let mut client = Client::new(
            Script {
                replies: vec![OK.to_vec(), OK.to_vec()],
                ..Script::default()
            },
            Duration::from_secs(5),
        );
        let first = client.send(&get(), true).unwrap();
        let second = client.send(&get(), true).unwrap();
        assert_eq!((first.connects, second.connects), (1, 1));
        assert_eq!(second.response.body, b"ok");
        assert_eq!(second.bytes_out, 2 * get().bytes.len() as u64, "sent twice");
        // No third connection to be had: refused, not retried on a fresh connection.
        let third = client.send(&get(), true).unwrap_err();
        assert_eq!(third.error.kind(), ErrorKind::Refused);
    }

    #[test]
    fn a_fresh_connection_closed_at_once_is_a_reset_not_a_retry() {
        let mut client = Client::new(
            Script {
                replies: vec![Vec::new(), OK.to_vec()],
                ..Script::default()
            },
            Duration::from_secs(5),
        );
        let failure = client.send(&get(), true).unwrap_err();
        assert_eq!(
            (failure.error.kind(), failure.connects),
            (ErrorKind::Reset, 1)
        );
        assert_eq!(client.send(&get(), true).unwrap().response.status, 200);
    }

    #[test]
    fn connection_close_drops_the_connection() {
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let mut client = Client::new(
            Script {
                replies: vec![close.to_vec(), OK.to_vec()],
                ..Script::default()
            },
            Duration::from_secs(5),
        );
        assert_eq!(client.send(&get(), false).unwrap().connects, 1);
        let second = client.send(&get(), false).unwrap();
        assert_eq!(
            (second.connects, second.bytes_out),
            (1, get().bytes.len() as u64)
        );
    }

    #[test]
    fn a_request_saying_close_does_not_reuse_its_connection() {
        let mut client = Client::new(
            Script {
                replies: vec![OK.to_vec(), OK.to_vec()],
                ..Script::default()
            },
            Duration::from_secs(5),
        );
        let close = Request::get("http://127.0.0.1:9/".parse().unwrap()).prepare(false);
        let connects: Vec<u64> = (0..2)
            .map(|_| client.send(&close, true).unwrap().connects)
            .collect();
        assert_eq!(connects, [1, 1]);
        let written = client.connector.written.lock().unwrap().clone();
        assert_eq!(
            written,
            [&close.bytes[..], WAIT].concat().repeat(2),
            "no retries"
        );
    }

    #[test]
    fn a_first_attempt_checks_its_first_write_against_its_start_and_not_its_first_read() {
        let mut conn = Scripted {
            reply: io::Cursor::new(OK.to_vec()),
            written: Arc::default(),
            timeouts: Arc::default(),
        };
        let deadline = Instant::now();
        let began = deadline.checked_sub(Duration::from_nanos(1)).unwrap();
        let timed_out = |result: io::Result<usize>| result.unwrap_err().kind();
        let mut first = Timed {
            conn: &mut conn,
            deadline,
            now: Some(began),
            unchecked_read: true,
        };
        let mut byte = [0; 1];
        assert_eq!(first.write(b"x").unwrap(), 1);
        assert_eq!(first.read(&mut byte).unwrap(), 1);
        assert_eq!(timed_out(first.read(&mut byte)), io::ErrorKind::TimedOut);
        assert_eq!(timed_out(first.write(b"x")), io::ErrorKind::TimedOut);
        let mut retry = Timed {
            conn: &mut conn,
            deadline,
            now: None,
            unchecked_read: false,
        };
        assert_eq!(timed_out(retry.write(b"x")), io::ErrorKind::TimedOut);
        assert_eq!(timed_out(retry.read(&mut byte)), io::ErrorKind::TimedOut);
    }

    #[test]
    fn an_expired_deadline_is_a_timeout() {
        let mut client = Client::new(
            Script {
                replies: vec![OK.to_vec()],
                ..Script::default()
            },
            Duration::ZERO,
        );
        let failure = client.send(&get(), true).unwrap_err();
        assert_eq!(failure.error.kind(), ErrorKind::Timeout);
    }
}
