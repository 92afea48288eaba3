//! The virtual user: what a step's closure gets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::connect::BoxConnect;
use crate::http::{Client, HttpError, Prepared, Request, Response, Url};
use crate::run::Shared;

/// One virtual user, running in its own fiber: an HTTP client with a keep-alive connection
/// per endpoint, its index and iteration, think time and checks.
///
/// ```
/// use std::time::Duration;
/// use fibra_load::{Load, Scenario};
///
/// fibra::run(|| {
///     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
///     let url = format!("http://{}/", server.local_addr());
///     let scenario = Scenario::new("home").step("get", move |vu| {
///         let response = vu.get(&url)?;
///         vu.check("says hello", response.body == b"Hello, world!");
///         vu.sleep(Duration::from_millis(1)); // think time
///         Ok(())
///     });
///     let report = Load::new(scenario).vus(3).iterations(9).run();
///     assert_eq!(report.stats.checks["says hello"].pass, 9);
/// });
/// ```
pub struct Vu {
    index: usize,
    iteration: u64,
    client: Client<BoxConnect>,
    shared: Arc<Shared>,
    /// The open model's intended start of this iteration, until its first request uses it.
    intended: Option<Instant>,
}

impl std::fmt::Debug for Vu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vu")
            .field("index", &self.index)
            .field("iteration", &self.iteration)
            .finish_non_exhaustive()
    }
}

impl Vu {
    pub(crate) fn new(index: usize, shared: Arc<Shared>) -> Vu {
        Vu {
            index,
            iteration: 0,
            client: Client::new(shared.connector(), shared.timeout),
            shared,
            intended: None,
        }
    }

    /// This VU's index, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many iterations this VU completed before the current one.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Sends `request` and returns the response with its body. The request is counted in the
    /// report (latency, status, bytes, or the error by kind).
    pub fn send(&mut self, request: &Request) -> Result<Response, HttpError> {
        self.send_prepared(&request.prepare(self.shared.keep_alive), true)
    }

    /// Sends a `GET` to `url`; see [`Vu::send`].
    ///
    /// # Panics
    ///
    /// When `url` is not an absolute `http://` or `https://` URL.
    pub fn get(&mut self, url: &str) -> Result<Response, HttpError> {
        let url: Url = url.parse().unwrap_or_else(|e| panic!("Vu::get: {e}"));
        self.send(&Request::get(url))
    }

    /// Counts `ok` under the check `name`; returns `ok`.
    pub fn check(&mut self, name: &str, ok: bool) -> bool {
        self.shared.recorder.with(|s| s.check(name, ok));
        ok
    }

    /// Opens a raw TCP connection to `host:port` (bounded by the request timeout), for
    /// protocols other than HTTP. It is not counted in the report.
    pub fn connect(&mut self, host: &str, port: u16) -> std::io::Result<fibra::net::TcpStream> {
        crate::net::connect_tcp(host, port, self.shared.timeout)
    }

    /// Think time: suspends this VU's fiber for `duration`.
    pub fn sleep(&mut self, duration: Duration) {
        fibra::sleep(duration);
    }

    /// Sends a request encoded once with [`Request::prepare`]; with `keep == false` only the
    /// response's status is kept: its headers and body are counted and dropped unread (the
    /// fastest way to send the same request often).
    pub fn send_prepared(&mut self, request: &Prepared, keep: bool) -> Result<Response, HttpError> {
        let now = Instant::now();
        let start = self.intended.take().unwrap_or(now);
        let result = self.client.send_at(request, keep, now);
        let end = Instant::now();
        let at = end.duration_since(self.shared.recorder.origin());
        self.shared.recorder.with(|s| match &result {
            Ok(exchange) => {
                s.response(at, end.duration_since(start), exchange.response.status);
                s.bytes_in += exchange.bytes_in;
                s.bytes_out += exchange.bytes_out;
                s.connections += exchange.connects;
            }
            Err(failure) => {
                s.error(at, failure.error.kind());
                s.bytes_out += failure.bytes_out;
                s.connections += failure.connects;
            }
        });
        result.map(|e| e.response).map_err(|f| f.error)
    }

    pub(crate) fn begin(&mut self, intended: Option<Instant>) {
        self.intended = intended;
    }

    pub(crate) fn end(&mut self) {
        self.intended = None;
        self.iteration += 1;
    }
}
