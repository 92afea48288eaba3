//! HTTP/1.1 requests, encoded once and sent many times.

use super::url::{Endpoint, Url};
use crate::parse::ParseError;

/// An HTTP/1.1 request: method, URL, extra headers and a body.
///
/// ```
/// let request = fibra_load::Request::get("http://127.0.0.1:8080/".parse().unwrap())
///     .header("X-Trace", "1");
/// let bytes = request.encode(true);
/// assert!(bytes.starts_with(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method, such as `GET` or `POST`.
    pub method: String,
    /// Where the request goes.
    pub url: Url,
    /// Extra headers. A `Host`, `User-Agent` or `Accept` among them replaces the default one
    /// (`Host` is the URL's authority); `Connection`, `Content-Length` and `Transfer-Encoding`
    /// are the client's to write (see [`Request::check_header`]).
    pub headers: Vec<(String, String)>,
    /// The body; sent with a `Content-Length` when not empty.
    pub body: Vec<u8>,
}

impl Request {
    /// A request with `method` (upper-cased) to `url`, no extra headers and no body.
    ///
    /// # Panics
    ///
    /// When `method` is empty or not an HTTP token.
    pub fn new(method: &str, url: Url) -> Request {
        assert!(
            is_token(method),
            "Request::new: `{method}` is not an HTTP method"
        );
        Request {
            method: method.to_ascii_uppercase(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `GET` request to `url`.
    pub fn get(url: Url) -> Request {
        Request::new("GET", url)
    }

    /// Adds a header.
    ///
    /// # Panics
    ///
    /// When [`Request::check_header`] refuses it.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        if let Err(e) = Request::check_header(name, value) {
            panic!("Request::header: {e}");
        }
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Checks a header before it is added with [`Request::header`]: the name must be an HTTP
    /// token, and the value must not hold a line break or a NUL, which would end the header
    /// early and let the rest of the value pass for more headers. `Connection`,
    /// `Content-Length` and `Transfer-Encoding` are refused: the client writes them from the
    /// keep-alive setting and the body, and a second, different one would make the server
    /// and the client disagree on where a message ends or whether the connection stays open.
    ///
    /// ```
    /// use fibra_load::Request;
    ///
    /// assert!(Request::check_header("X-Trace", "1").is_ok());
    /// assert!(Request::check_header("Host", "vhost.example").is_ok());
    /// assert!(Request::check_header("X(1)", "y").is_err());
    /// assert!(Request::check_header("X-Trace", "1\r\nX-Evil: yes").is_err());
    /// assert!(Request::check_header("connection", "close").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ParseError`] saying what is wrong with the header.
    pub fn check_header(name: &str, value: &str) -> Result<(), ParseError> {
        if !is_token(name) {
            return Err(ParseError(format!(
                "invalid header name `{name}`: expected letters, digits or !#$%&'*+-.^_`|~"
            )));
        }
        if let Some(why) = CLIENT_HEADERS
            .iter()
            .find_map(|(client, why)| name.eq_ignore_ascii_case(client).then_some(why))
        {
            return Err(ParseError(format!(
                "the `{name}` header is the client's to write: {why}"
            )));
        }
        if value.contains(['\r', '\n', '\0']) {
            return Err(ParseError(format!(
                "the value of header `{name}` holds a line break or a NUL"
            )));
        }
        Ok(())
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// The bytes on the wire; `keep_alive == false` adds `Connection: close`.
    pub fn encode(&self, keep_alive: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + self.body.len());
        let mut line = |s: &str| {
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        line(&format!("{} {} HTTP/1.1", self.method, self.url.path));
        let host = |(name, _): &&(String, String)| name.eq_ignore_ascii_case("host");
        // One Host only (a server answers two with 400): the last one given, else the URL's.
        match self.headers.iter().rfind(host) {
            Some((_, value)) => line(&format!("Host: {value}")),
            None => line(&format!("Host: {}", self.url.endpoint.authority())),
        }
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !has("user-agent") {
            line(concat!(
                "User-Agent: fibra-load/",
                env!("CARGO_PKG_VERSION")
            ));
        }
        if !has("accept") {
            line("Accept: */*");
        }
        if !keep_alive {
            line("Connection: close");
        }
        if !self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            line(&format!("Content-Length: {}", self.body.len()));
        }
        for (name, value) in self.headers.iter().filter(|h| !host(h)) {
            line(&format!("{name}: {value}"));
        }
        line("");
        out.extend_from_slice(&self.body);
        out
    }

    /// Encodes the request once for repeated sending.
    pub fn prepare(&self, keep_alive: bool) -> Prepared {
        Prepared {
            endpoint: self.url.endpoint.clone(),
            bytes: self.encode(keep_alive),
            head: self.method == "HEAD",
            keep_alive,
        }
    }
}

/// A request encoded for sending, as [`Request::prepare`] makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub(crate) endpoint: Endpoint,
    pub(crate) bytes: Vec<u8>,
    pub(crate) head: bool,
    /// False when the request says `Connection: close`: its connection is not reused.
    pub(crate) keep_alive: bool,
}

/// The headers the client writes, with why.
const CLIENT_HEADERS: [(&str, &str); 3] = [
    ("connection", "it follows the keep-alive setting"),
    ("content-length", "it follows the body"),
    (
        "transfer-encoding",
        "a body is always sent with a Content-Length",
    ),
];

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_writes_host_length_and_close() {
        let url: Url = "http://example.test/p?q".parse().unwrap();
        let request = Request::new("post", url)
            .header("Content-Type", "text/plain")
            .body("hi");
        let text = String::from_utf8(request.encode(false)).unwrap();
        assert_eq!(
            text,
            "POST /p?q HTTP/1.1\r\nHost: example.test\r\nUser-Agent: fibra-load/0.1.0\r\n\
             Accept: */*\r\nConnection: close\r\nContent-Length: 2\r\n\
             Content-Type: text/plain\r\n\r\nhi"
        );
        let prepared = Request::new("HEAD", "http://h:81/".parse().unwrap()).prepare(true);
        assert!(prepared.head);
        assert!(String::from_utf8(prepared.bytes)
            .unwrap()
            .starts_with("HEAD / HTTP/1.1\r\nHost: h:81\r\n"));
    }

    #[test]
    fn a_host_header_replaces_the_default_one() {
        let request = Request::get("http://127.0.0.1:8080/".parse().unwrap())
            .header("host", "first.example")
            .header("X-Trace", "1")
            .header("Host", "vhost.example");
        let text = String::from_utf8(request.encode(true)).unwrap();
        assert_eq!(
            text,
            "GET / HTTP/1.1\r\nHost: vhost.example\r\nUser-Agent: fibra-load/0.1.0\r\n\
             Accept: */*\r\nX-Trace: 1\r\n\r\n"
        );
    }

    #[test]
    #[should_panic(expected = "is the client's to write")]
    fn a_content_length_header_panics() {
        Request::get("http://h/".parse().unwrap()).header("Content-Length", "3");
    }

    #[test]
    #[should_panic(expected = "is not an HTTP method")]
    fn a_bad_method_panics() {
        Request::new("GE T", "http://h/".parse().unwrap());
    }
}
