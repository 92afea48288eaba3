//! Reading HTTP/1.1 responses with `httparse`: `Content-Length`, chunked and close-delimited
//! bodies.

use std::io::{self, Read};
use std::mem::MaybeUninit;

use super::error::HttpError;

/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The most headers a response may have.
const MAX_HEADERS: usize = 64;

/// A response: status, headers and (unless discarded) the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers in the order received.
    pub headers: Vec<(String, String)>,
    /// The decoded body (chunked framing removed); empty when the caller discarded it.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response as read off a connection.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub response: Response,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
    /// Bytes read for this response (head, framing and body).
    pub bytes_in: u64,
}

/// Why reading a response failed.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The connection was closed before any byte of a response: a keep-alive connection the
    /// server had closed; the request may be retried on a new connection.
    Stale,
    /// Anything else.
    Failed(HttpError),
}

impl From<HttpError> for ReadFailure {
    fn from(error: HttpError) -> ReadFailure {
        ReadFailure::Failed(error)
    }
}

impl From<io::Error> for ReadFailure {
    fn from(error: io::Error) -> ReadFailure {
        ReadFailure::Failed(error.into())
    }
}

/// A read buffer that keeps what a response left over.
#[derive(Debug, Default)]
pub(crate) struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.end);
    }

    /// Reads more bytes; returns how many (0 at end of stream).
    fn fill(&mut self, conn: &mut impl Read) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                // Small at first: a VU's buffer is most of its memory besides its stack.
                let grown = (self.buf.len() * 2).max(2 * 1024);
                self.buf.resize(grown, 0);
            }
        }
        loop {
            match conn.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Fills until at least one more byte is buffered; end of stream is an unexpected EOF.
    fn fill_some(&mut self, conn: &mut impl Read) -> io::Result<usize> {
        match self.fill(conn)? {
            0 => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed in the middle of a response",
            )),
            n => Ok(n),
        }
    }
}

enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Reads one response. `head` says the request was `HEAD` (no body follows); with
/// `keep == false` only the status is kept: the headers and the body are counted and dropped,
/// which spares an allocation per header.
pub(crate) fn read_response(
    conn: &mut impl Read,
    buf: &mut ReadBuf,
    head: bool,
    keep: bool,
) -> Result<Parsed, ReadFailure> {
    let mut bytes_in = 0u64;
    let mut first = true;
    let (mut response, framing, mut keep_alive) = loop {
        // Left uninitialized: the parser writes the headers it finds, so a parse does not
        // first fill all `MAX_HEADERS` of them.
        let mut headers = [const { MaybeUninit::uninit() }; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut []);
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut parsed,
            buf.data(),
            &mut headers,
        ) {
            Ok(httparse::Status::Complete(length)) => {
                let status = parsed.code.unwrap_or(0);
                let (framing, keep_alive) = framing_of(&parsed, head)?;
                let headers = if keep {
                    parsed
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let response = Response {
                    status,
                    headers,
                    body: Vec::new(),
                };
                buf.consume(length);
                bytes_in += length as u64;
                // An interim response (100 Continue): the real one follows.
                if (100..200).contains(&status) && status != 101 {
                    continue;
                }
                break (response, framing, keep_alive);
            }
            Ok(httparse::Status::Partial) => {
                if buf.data().len() >= MAX_HEAD {
                    return Err(HttpError::bad_response("response head too large").into());
                }
                let empty = first && buf.data().is_empty();
                first = false;
                match buf.fill(conn) {
                    Ok(0) if empty => return Err(ReadFailure::Stale),
                    Err(e) if empty && is_stale(&e) => return Err(ReadFailure::Stale),
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "connection closed in the middle of a response head",
                        )
                        .into())
                    }
                    Ok(_) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(HttpError::bad_response(format!("invalid response: {e}")).into()),
        }
    };
    let sink = |bytes: &[u8], body: &mut Vec<u8>| {
        if keep {
            body.extend_from_slice(bytes);
        }
    };
    match framing {
        Framing::Empty => {}
        Framing::Length(mut left) => {
            while left > 0 {
                if buf.data().is_empty() {
                    buf.fill_some(conn)?;
                }
                let take = buf
                    .data()
                    .len()
                    .min(usize::try_from(left).unwrap_or(usize::MAX));
                sink(&buf.data()[..take], &mut response.body);
                buf.consume(take);
                bytes_in += take as u64;
                left -= take as u64;
            }
        }
        Framing::Chunked => {
            bytes_in += read_chunked(conn, buf, &mut |b| sink(b, &mut response.body))?
        }
        Framing::UntilClose => {
            keep_alive = false;
            loop {
                let data = buf.data().len();
                sink(&buf.data()[..data], &mut response.body);
                buf.consume(data);
                bytes_in += data as u64;
                if buf.fill(conn)? == 0 {
                    break;
                }
            }
        }
    }
    Ok(Parsed {
        response,
        keep_alive,
        bytes_in,
    })
}

/// A reused connection the peer closed shows up as a reset as well as an end of stream (and
/// over TLS as an end of stream without `close_notify`).
pub(crate) fn is_stale(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
}

fn framing_of(
    parsed: &httparse::Response<'_, '_>,
    head: bool,
) -> Result<(Framing, bool), HttpError> {
    let status = parsed.code.unwrap_or(0);
    let mut keep_alive = parsed.version == Some(1);
    let mut length = None;
    let mut chunked = false;
    for header in parsed.headers.iter() {
        // Decoded only for the headers read here: most of a response's are not.
        let value = || std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = value();
            let n: u64 = value.parse().map_err(|_| {
                HttpError::bad_response(format!("invalid Content-Length `{value}`"))
            })?;
            if length.is_some_and(|m| m != n) {
                return Err(HttpError::bad_response(
                    "conflicting Content-Length headers",
                ));
            }
            length = Some(n);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value()
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in value().split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    let framing = if head || status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    Ok((framing, keep_alive))
}

/// Reads a chunked body and its trailers; returns the bytes consumed.
fn read_chunked(
    conn: &mut impl Read,
    buf: &mut ReadBuf,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<u64, ReadFailure> {
    let mut bytes_in = 0u64;
    loop {
        let size = loop {
            match httparse::parse_chunk_size(buf.data()) {
                Ok(httparse::Status::Complete((used, size))) => {
                    buf.consume(used);
                    bytes_in += used as u64;
                    break size;
                }
                Ok(httparse::Status::Partial) => {
                    if buf.data().len() > 4096 {
                        return Err(HttpError::bad_response("chunk size line too long").into());
                    }
                    buf.fill_some(conn)?;
                }
                Err(_) => return Err(HttpError::bad_response("invalid chunk size").into()),
            }
        };
        if size == 0 {
            return Ok(bytes_in + read_trailers(conn, buf)?);
        }
        let mut left = size;
        while left > 0 {
            if buf.data().is_empty() {
                buf.fill_some(conn)?;
            }
            let take = buf
                .data()
                .len()
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            sink(&buf.data()[..take]);
            buf.consume(take);
            bytes_in += take as u64;
            left -= take as u64;
        }
        while buf.data().len() < 2 {
            buf.fill_some(conn)?;
        }
        if &buf.data()[..2] != b"\r\n" {
            return Err(HttpError::bad_response("chunk not followed by CRLF").into());
        }
        buf.consume(2);
        bytes_in += 2;
    }
}

/// Skips trailer lines up to and including the empty line.
fn read_trailers(conn: &mut impl Read, buf: &mut ReadBuf) -> Result<u64, ReadFailure> {
    let mut bytes_in = 0u64;
    loop {
        match buf.data().windows(2).position(|w| w == b"\r\n") {
            Some(at) => {
                buf.consume(at + 2);
                bytes_in += at as u64 + 2;
                if at == 0 {
                    return Ok(bytes_in);
                }
            }
            None if buf.data().len() > MAX_HEAD => {
                return Err(HttpError::bad_response("trailers too large").into())
            }
            None => {
                buf.fill_some(conn)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ErrorKind;

    /// Hands out its bytes a few at a time, to exercise every partial path.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn read_all(wire: &[u8], step: usize) -> Vec<Result<Parsed, ReadFailure>> {
        let mut conn = Trickle(wire, step);
        let mut buf = ReadBuf::default();
        let mut out = Vec::new();
        loop {
            let result = read_response(&mut conn, &mut buf, false, true);
            let stop = !matches!(&result, Ok(p) if p.keep_alive);
            out.push(result);
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn content_length_and_chunked_bodies_decode_at_any_read_size() {
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-T: 1\r\n\r\n\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.0 200 OK\r\n\r\nuntil close";
        for step in [1, 2, 7, 4096] {
            let results = read_all(wire, step);
            assert_eq!(results.len(), 4, "read size {step}");
            let ok: Vec<_> = results.into_iter().map(|r| r.unwrap()).collect();
            assert_eq!(ok[0].response.status, 200);
            assert_eq!(ok[0].response.body, b"hello");
            assert_eq!(ok[0].bytes_in, 43);
            assert_eq!(ok[1].response.status, 201);
            assert_eq!(ok[1].response.body, b"abcdefg");
            assert_eq!(ok[1].response.header("transfer-encoding"), Some("chunked"));
            assert_eq!(ok[2].response.status, 204);
            assert!(ok[2].response.body.is_empty());
            assert_eq!(ok[3].response.body, b"until close");
            assert!(!ok[3].keep_alive);
            let total: u64 = ok.iter().map(|p| p.bytes_in).sum();
            assert_eq!(total, wire.len() as u64);
        }
    }

    #[test]
    fn connection_close_and_http_1_0_end_keep_alive() {
        let results = read_all(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            100,
        );
        assert!(!results[0].as_ref().unwrap().keep_alive);
        let results = read_all(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            100,
        );
        assert_eq!(results.len(), 2, "HTTP/1.0 keep-alive keeps the connection");
        assert!(matches!(results[1], Err(ReadFailure::Stale)));
    }

    #[test]
    fn a_closed_connection_is_stale_only_before_the_first_byte() {
        assert!(matches!(read_all(b"", 10)[0], Err(ReadFailure::Stale)));
        let kinds: Vec<ErrorKind> = [
            &b"HTTP/1.1 200"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        ]
        .iter()
        .map(|wire| match read_all(wire, 3).pop().unwrap() {
            Err(ReadFailure::Failed(e)) => e.kind(),
            other => panic!("{other:?}"),
        })
        .collect();
        assert_eq!(kinds, [ErrorKind::Reset; 3]);
    }

    #[test]
    fn malformed_responses_are_bad_responses() {
        for wire in [
            &b"HTTP/1.1 abc OK\r\n\r\n"[..],
            b"SMTP ready\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
        ] {
            match read_all(wire, 5).pop().unwrap() {
                Err(ReadFailure::Failed(e)) => {
                    assert_eq!(e.kind(), ErrorKind::BadResponse, "{wire:?}")
                }
                other => panic!("{wire:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn interim_responses_are_skipped_and_heads_and_bodies_can_be_discarded() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut buf = ReadBuf::default();
        let parsed = read_response(&mut Trickle(wire, 4), &mut buf, false, false).unwrap();
        assert_eq!(parsed.response.status, 200);
        assert!(parsed.response.headers.is_empty());
        assert!(parsed.response.body.is_empty());
        assert_eq!(parsed.bytes_in, wire.len() as u64);
        let kept = read_response(&mut Trickle(wire, 4), &mut buf, false, true).unwrap();
        assert_eq!(
            kept.response.headers,
            [("Content-Length".to_string(), "2".to_string())]
        );
        assert_eq!(kept.response.body, b"ok");
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        let parsed = read_response(&mut Trickle(head, 4), &mut buf, true, true).unwrap();
        assert!(parsed.keep_alive, "a HEAD response has no body to wait for");
    }
}
