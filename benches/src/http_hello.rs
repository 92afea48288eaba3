//! `http_hello`: an HTTP/1.1 keep-alive "hello" server of this process under a fixed
//! closed-loop client: 100 keep-alive connections on loopback for 5 s per round (2 s with
//! `--quick`), 5 alternating rounds per system (3 with `--quick`).
//!
//! Systems: `fibra` (the `http_hello` example's server, [`fibra::net::http::HelloServer`], a
//! fiber per connection on a 2-worker runtime) and `hyper` (hyper 1's HTTP/1.1 server
//! connection, a task per connection on a 2-worker tokio multi-thread runtime, answering every
//! request with the same status, `Content-Type` and body; its automatic `Date` header is off so
//! that both send the same bytes but for header order). Each round starts a fresh server.
//!
//! The client is the same for both: fibra-load ([`load_http::closed_loop`]) in a child copy of
//! this binary, 100 VUs on 2 workers, each sending its next `GET` when the previous response
//! has arrived. It is a separate process, so it shares no runtime, allocator or scheduler with
//! either server; it is fibra-load rather than a tokio client because it is the project's own
//! load generator, encodes its request once and skips the response bodies unread, and because
//! its cost per request is measured beside the servers' (variant `100c_client_cpu`) rather
//! than assumed small. The machine has two cores that the client and the server share, so the
//! requests-per-second ratio understates the servers' difference in cost by the client's share;
//! the server CPU variant states that cost on its own.
//!
//! Variant `100c` (metric `rps`, better higher): requests the client completed over its wall
//! time. Variant `100c_server_cpu` (`ns_per_op`): CPU time of this process (the server's
//! runtime; the parent only polls for the child) per request, from `getrusage(RUSAGE_SELF)`.
//! Variant `100c_client_cpu` (`ns_per_op`): the client child's CPU time per request. Every
//! round checks that the client saw no errors and that the server answered at least the
//! requests the client counted.
//!
//! # Measured (2026-12-05, the 2-core machine loaded by other work, load average 11–14)
//!
//! Five `--quick` runs: fibra 0.73–1.43× hyper in requests per second (median 1.27×), 0.72–0.80×
//! hyper's server CPU per request; the client's CPU per request 0.80–0.91× its cost against
//! hyper.
//!
//! # Measured (2026-12-03, the 2-core machine loaded by other work, load average 8–12)
//!
//! Before the readiness and batching changes below: fibra 0.42–0.82× hyper in requests per
//! second and 1.7–2.5× hyper's server CPU per request. After them, three `--quick` runs
//! alternated with the old build on the same machine state: fibra 0.94, 0.99 and 1.03× hyper
//! in requests per second (median 0.99×; the old build 0.42, 0.59, 0.82), and 0.77, 0.83 and
//! 0.86× hyper's server CPU per request (3.0–3.3 µs against hyper's 3.7–4.2 µs; the old build
//! 1.9–2.5×, 7.3–8.9 µs). The client (fibra-load, itself on fibra) got cheaper with the same
//! changes: 3.9–4.3 µs per request against fibra, 4.1–5.0 µs against hyper, before 7.5–8.5
//! and 5.6–6.2 µs. `perf stat` of the server process per request, before → after:
//! `recvfrom` 2.97 → 1.00, `getsockopt` 0.99 → 0, `epoll_wait` 0.35 → 0.015, context switches
//! 0.66 → 0.04, task clock 7.6 → 3.2 µs.
//!
//! What changed (the first profile found the causes; `perf record` of the `http_hello` example
//! under `fibra-load -c 100 --workers 2`, and `perf stat` of the server's threads):
//!
//! - Three `recv` per request against hyper's one: the data, then at the next read a
//!   `WouldBlock`, then a second `WouldBlock` because the wait's first `try_io` still saw
//!   tokio's cached readiness. Now a registered stream is tried only when the reactor may
//!   have something new, and a short read clears readiness (as tokio's `PollEvented` does).
//!   Each wait also asked the kernel for the socket's read timeout (`getsockopt`); timeouts
//!   are now remembered beside the socket.
//! - Readiness crossed a thread per event: the driver thread (a tokio current-thread runtime)
//!   slept in `epoll_wait` and was woken for some 3 events at a time, about 2 µs of driver CPU
//!   per request and half a context switch. Now, when a turn woke more than one fiber, the
//!   driver yields its core before it waits again, and the next `epoll_wait` collects the
//!   events of dozens of requests at once (some 70 per wait here).
//! - Idle workers spun: a quarter of the server's samples were the 50 µs idle spin, which
//!   kept the driver thread and the client off the two cores. The spin now yields its core
//!   between looks (`spawn_join 2w` and `chan_pingpong 2w` got faster with it on this machine,
//!   not slower).
//!
//! The HTTP work itself (`httparse`, the hello answer) is under 2 % of the samples.
//!
//! # On the AMD EPYC guest (2026-12-06): the retries' failed `recv`s
//!
//! A system call costs about ten times what it did on the earlier machine (`getppid` 430 ns,
//! a `recv` that finds nothing 620 ns). `perf stat` of the `http_hello` example under
//! `fibra-load -c 100`, per request: the fibra server 5.2 system calls, 4.0 of them `recv`
//! (one with the request, three from `fibra-net`'s retries finding nothing), 0.12 futex calls
//! and 0.14 context switches; a hyper server 2.1 (one `recv`, one `writev`, 0.09
//! `epoll_wait`). `perf record`: the kernel 72 % of the fibra server's samples and 75 % of
//! hyper's; fibra's own code 14 % (hyper's 17 %). Per request the fibra server took 13.7 µs of
//! CPU there and hyper 11.4 µs; the three failed `recv`s, at 0.6 µs each, are most of the gap.
//! Without the retries (every `WouldBlock` to the reactor): one `recv` a request but 0.57
//! futex calls and 0.52 context switches, no cheaper within the noise, and fewer requests per
//! second (two alternated `--quick` pairs: 0.89 and 0.75× hyper, against 0.96 and 0.92× with
//! them). Retrying at doubling gaps (turns 0, 1, 3, 7, 15 and 31 of the 32): 1.3 `recv`s a
//! request, and CPU per request (six alternated pairs of 200 000 requests, medians) 12.6 →
//! 11.5 µs in the server and 13.1 → 12.2 µs in the client, but `tcp_echo` got slower in three
//! alternated full pairs (`1c` 0.80–1.02 → 1.03–1.17× tokio, `100c` 1.02–1.05 → 1.13–1.21×):
//! its peers answer within a few turns, and the gaps delay the find. Not kept.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cpu::{children_cpu, process_cpu};
use crate::load_http;
use crate::report::{self, Case, Metric, Outcome};
use crate::runtimes;

/// This bench's name.
const BENCH: &str = "http_hello";
/// Workers of both servers.
const WORKERS: usize = 2;
/// Keep-alive connections of the client.
const CONNECTIONS: u64 = 100;
/// The systems, in the order their rounds alternate.
const SYSTEMS: [&str; 2] = ["fibra", "hyper"];

/// What one round measured.
struct Round {
    requests: f64,
    wall: Duration,
    server_cpu: Duration,
    client_cpu: Duration,
}

/// A variant reported from the rounds: its name, metric and each round's value in it.
type Variant = (&'static str, Metric, fn(&Round) -> f64);

/// Runs the rounds and prints the JSON lines of every variant.
pub fn run(quick: bool) {
    let (seconds, rounds) = if quick { (2, 3) } else { (5, 5) };
    let mut measured: Vec<Vec<Round>> = SYSTEMS.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (system, measured) in SYSTEMS.into_iter().zip(&mut measured) {
            let one = match system {
                "fibra" => load(&FibraHello::start(), seconds),
                _ => load(&HyperHello::start(), seconds),
            };
            eprintln!(
                "{BENCH} round {round}/{rounds} {system}: {:.0} req/s, server {:.0} cpu ns/req, \
                 client {:.0} cpu ns/req",
                one.requests / one.wall.as_secs_f64(),
                one.server_cpu.as_nanos() as f64 / one.requests,
                one.client_cpu.as_nanos() as f64 / one.requests
            );
            measured.push(one);
        }
    }
    let variants: [Variant; 3] = [
        ("100c", Metric::Rps, |r| r.requests / r.wall.as_secs_f64()),
        ("100c_server_cpu", Metric::NsPerOp, |r| {
            r.server_cpu.as_nanos() as f64 / r.requests
        }),
        ("100c_client_cpu", Metric::NsPerOp, |r| {
            r.client_cpu.as_nanos() as f64 / r.requests
        }),
    ];
    for (variant, metric, value) in variants {
        let case = Case {
            bench: BENCH,
            variant,
            metric,
        };
        let outcomes: Vec<Outcome> = SYSTEMS
            .iter()
            .zip(&measured)
            .map(|(&system, rounds)| {
                let values: Vec<f64> = rounds.iter().map(value).collect();
                Outcome {
                    system,
                    value: report::median(&values),
                    runs: values.len(),
                }
            })
            .collect();
        for line in report::lines(&case, &outcomes) {
            println!("{line}");
        }
    }
}

/// A hello server running for one round; dropping it stops the server and its runtime.
trait Hello {
    /// The address it listens on.
    fn addr(&self) -> SocketAddr;
    /// How many requests it has answered so far.
    fn answered(&self) -> u64;
}

/// Runs the client for `seconds` against `server` and measures the round.
fn load(server: &dyn Hello, seconds: u64) -> Round {
    let url = format!("http://{}/", server.addr());
    let (server_before, client_before) = (process_cpu(), children_cpu());
    let (requests, wall) = load_http::closed_loop(&url, CONNECTIONS, seconds);
    let round = Round {
        requests,
        wall,
        server_cpu: process_cpu().saturating_sub(server_before),
        client_cpu: children_cpu().saturating_sub(client_before),
    };
    assert!(requests > 0.0, "the client completed no request");
    let answered = server.answered();
    assert!(
        answered as f64 >= requests,
        "the server answered {answered} requests, the client counted {requests}"
    );
    round
}

/// fibra: the example's hello server on a 2-worker runtime of its own.
struct FibraHello {
    // Declared first so that it stops before its runtime shuts down.
    server: fibra::net::http::HelloServer,
    _runtime: fibra::BackgroundRuntime,
}

impl FibraHello {
    fn start() -> FibraHello {
        let runtime = runtimes::fibra(WORKERS)
            .into_background()
            .expect("the fibra server's runtime");
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        FibraHello {
            server: fibra::net::http::HelloServer::serve(&runtime.handle(), listener),
            _runtime: runtime,
        }
    }
}

impl Hello for FibraHello {
    fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    fn answered(&self) -> u64 {
        self.server.requests()
    }
}

/// hyper: an accepting task spawns hyper's HTTP/1.1 connection task per connection, on a
/// 2-worker tokio runtime of its own (dropping the runtime cancels them all).
struct HyperHello {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

impl HyperHello {
    fn start() -> HyperHello {
        use http_body_util::Full;
        use hyper::body::Bytes;
        use hyper::server::conn::http1;
        use hyper::service::service_fn;
        use hyper_util::rt::TokioIo;

        let runtime = runtimes::tokio_multi_io(WORKERS);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("local address");
        let answered = Arc::new(AtomicU64::new(0));
        let counter = answered.clone();
        runtime.spawn(async move {
            loop {
                let (conn, _) = listener.accept().await.expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                let counter = counter.clone();
                let hello = service_fn(move |_request| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    let response = hyper::Response::builder()
                        .header("content-type", "text/plain")
                        .body(Full::new(Bytes::from_static(
                            fibra::net::http::HELLO.as_bytes(),
                        )))
                        .expect("a valid response");
                    async move { Ok::<_, Infallible>(response) }
                });
                tokio::spawn(async move {
                    // The client closing its connection at the end is not an error worth a line.
                    let _ = http1::Builder::new()
                        .auto_date_header(false)
                        .serve_connection(TokioIo::new(conn), hello)
                        .await;
                });
            }
        });
        HyperHello {
            addr,
            answered,
            _runtime: runtime,
        }
    }
}

impl Hello for HyperHello {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Two requests on one keep-alive connection, each answered in full with the hello body.
    fn answers_twice_on_one_connection(server: &dyn Hello) {
        let mut conn = std::net::TcpStream::connect(server.addr()).expect("connect");
        for _ in 0..2 {
            conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("write");
            let mut response = Vec::new();
            let mut chunk = [0; 256];
            while !response.ends_with(fibra::net::http::HELLO.as_bytes()) {
                let n = conn.read(&mut chunk).expect("read");
                assert_ne!(n, 0, "closed before the body: {response:?}");
                response.extend_from_slice(&chunk[..n]);
            }
            let text = String::from_utf8(response).expect("UTF-8");
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(
                text.to_ascii_lowercase().contains("content-length: 13\r\n"),
                "{text}"
            );
        }
        assert_eq!(server.answered(), 2);
    }

    #[test]
    fn both_servers_answer_keep_alive_requests() {
        answers_twice_on_one_connection(&FibraHello::start());
        answers_twice_on_one_connection(&HyperHello::start());
    }
}
