//! `accept_storm`: connect + accept + close over loopback TCP, one connection after another;
//! ns per connection.
//!
//! Variant `2w` (2 000 connections, 500 with `--quick`): on a 2-worker runtime, one fibra fiber
//! accepts and closes while another connects and waits for the server's close (end-of-file),
//! then closes and starts the next, vs the same with two tokio tasks on a 2-worker
//! multi-thread runtime. Waiting for the close keeps the connector from filling the accept
//! queue (whose overflow drops SYNs and costs a one-second retransmission); every round listens
//! on a fresh port. The accepted count is checked.
//!
//! # Measured (2026-12-05, the 2-core machine loaded by other work, load average 9–17)
//!
//! fibra 1.05–1.38× tokio's ns per connection (median 1.27×, 10 runs, `--quick` and full)
//! before, 1.18–1.29× (median 1.26×, 7 runs) after a connect that completes at once (always,
//! on loopback) asks only `getpeername`, and a stream made by `connect` no longer asks the
//! kernel for its timeouts on its first wait: 14.8 syscalls per connection against tokio's
//! 15.4, from 18.4 (`strace -c -f`, 2 000 connections); a gain the noise hides. What is left
//! is the driver thread: each connection
//! takes two readiness events (the listener's, the client's end-of-file), each a wake-up of
//! the driver and a hand-off to a worker, where tokio's worker polls `epoll` itself (see
//! [`crate::tcp_echo`]).
//!
//! 2026-12-06, after a blocked call retries a few times before it waits for the reactor (see
//! [`crate::tcp_echo`]): the accept and the end-of-file mostly arrive during the retries.
//! Full runs, the binary before and after alternated, fibra ÷ tokio: 0.93 and 0.92 before,
//! 0.56 and 0.56 after (load average 3–6); 1.23 and 1.23 before, 0.83 and 1.04 after (load
//! average 10–12).

use std::io::Read;
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// Workers of every system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let connections = if quick { 500 } else { 2_000 };
    compare_per_op(
        "accept_storm",
        "2w",
        connections,
        ROUNDS,
        &[("fibra", &fibra), ("tokio", &tokio)],
    );
}

/// fibra: an accepting fiber and a connecting fiber.
fn fibra(connections: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local address");
        let start = Instant::now();
        let accepted = fibra::scope(|s| {
            let server = s.spawn(|| {
                (0..connections)
                    .map(|_| drop(listener.accept().expect("accept")))
                    .count()
            });
            for _ in 0..connections {
                let stream = fibra::net::TcpStream::connect(addr).expect("connect");
                assert_eq!((&stream).read(&mut [0; 1]).expect("read"), 0, "not closed");
            }
            server.join().expect("the acceptor panicked")
        });
        let elapsed = start.elapsed();
        assert_eq!(accepted as u64, connections, "connections were lost");
        elapsed
    })
}

/// tokio: an accepting task and a connecting task.
fn tokio(connections: u64) -> Duration {
    use tokio::io::AsyncReadExt;

    let runtime = runtimes::tokio_multi_io(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local address");
        let start = Instant::now();
        let server = tokio::spawn(async move {
            let mut accepted = 0u64;
            for _ in 0..connections {
                drop(listener.accept().await.expect("accept"));
                accepted += 1;
            }
            accepted
        });
        for _ in 0..connections {
            let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            assert_eq!(
                stream.read(&mut [0; 1]).await.expect("read"),
                0,
                "not closed"
            );
        }
        let accepted = server.await.expect("the acceptor panicked");
        let elapsed = start.elapsed();
        assert_eq!(accepted, connections, "connections were lost");
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_accepts_every_connection() {
        // Each function checks the count itself.
        fibra(50);
        tokio(50);
    }
}
