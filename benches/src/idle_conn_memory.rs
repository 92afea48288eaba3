//! `idle_conn_memory`: resident memory per idle TCP connection, 10 000 loopback connections
//! open at once, the server side of each parked in `read` on a 2-worker runtime.
//!
//! Variant `10k` (both modes; `--quick` runs fewer rounds): fibra vs tokio, each round in a
//! child process of its own (see [`crate::child`]) so that one system's heap and stacks never
//! sit under another's baseline. The server is [`crate::tcp_echo`]'s: an accepting fiber
//! (task) spawns a fiber (a task, in a `JoinSet`) per connection that reads 64-byte messages
//! into a buffer of its own and echoes them. The client is the same for both and is a process
//! of its own (a further copy of this binary), so that its side of the connections adds
//! nothing to the measured process: std's blocking `TcpStream`s opened one after another, with
//! a round trip on every 64th so that the server's accept queue cannot overflow.
//!
//! The measured child starts its runtime and server, makes one warm-up connection and round
//! trip, reads `VmRSS`, has the client open the connections, waits until the server side of
//! every one has started reading and 100 ms longer for the last ones to park, and reads
//! `VmRSS` again. The value is the growth over the number of connections. Then the client
//! makes one round trip on every connection, checking that each server side was alive, and
//! closes them all; the server is joined.
//!
//! Each process holds one descriptor per connection; the bench raises `RLIMIT_NOFILE` to fit
//! (the soft limit, and the hard one where the process may) and prints a skip line on stderr
//! where it cannot.
//!
//! # Measured (2026-12-05, the 2-core machine loaded by other work, load average 11–14)
//!
//! fibra 5 157–5 203 bytes per connection in one run's rounds, tokio 1 039–1 040; fibra over
//! tokio 4.97–5.01× in five `--quick` runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::child;
use crate::report::{Case, Metric};
use crate::rounds::{compare, Contender};
use crate::rss::resident_bytes;
use crate::runtimes;
use crate::tcp_echo::{echo, echo_tokio, MESSAGE};

/// The first word of this bench's child jobs.
pub const JOB: &str = "idle_conn_memory";
/// Workers of every system.
const WORKERS: usize = 2;
/// Idle connections held open at once.
const CONNECTIONS: usize = 10_000;
/// How many connections the client opens between two checks that the server has accepted them.
const AHEAD: usize = 64;
/// How long the child lets the last server sides park after they have started reading.
const SETTLE: Duration = Duration::from_millis(100);
/// Descriptors each process needs besides one per connection (runtimes, pipes, the listener).
const SPARE_DESCRIPTORS: u64 = 256;

/// Runs the bench (each round in a child process) and prints its JSON lines.
pub fn run(quick: bool) {
    let needed = CONNECTIONS as u64 + 1 + SPARE_DESCRIPTORS;
    if let Err(why) = raise_descriptor_limit(needed) {
        eprintln!("{JOB}: skipping: {needed} descriptors needed, {why}");
        return;
    }
    let case = Case {
        bench: JOB,
        variant: "10k",
        metric: Metric::BytesPerConn,
    };
    let mut contenders: Vec<Contender<'_>> = ["fibra", "tokio"]
        .into_iter()
        .map(|system| Contender::new(system, move || in_child(system, CONNECTIONS)))
        .collect();
    compare(&case, if quick { 3 } else { 5 }, &mut contenders);
}

/// Raises this process's `RLIMIT_NOFILE` soft limit (and the hard one when it is lower) to at
/// least `needed`, for the children to inherit; why not, when it may not.
fn raise_descriptor_limit(needed: u64) -> Result<(), String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is valid for writes of one `rlimit`, which is all `getrlimit` writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()));
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    let raised = libc::rlimit {
        rlim_cur: needed,
        rlim_max: limit.rlim_max.max(needed),
    };
    // SAFETY: `raised` is a valid `rlimit`, only read by `setrlimit`.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(format!(
            "the limit is {} (hard {}) and setrlimit failed: {}",
            limit.rlim_cur,
            limit.rlim_max,
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// One round in a child process: the bytes per connection of `connections` idle ones.
fn in_child(system: &str, connections: usize) -> f64 {
    let out = child::run(&format!("{JOB} {system} {connections}"));
    out.parse::<f64>()
        .unwrap_or_else(|_| panic!("child printed `{out}`, not a number"))
}

/// The child side: `idle_conn_memory <system> <connections>` measures and prints bytes per
/// connection; `idle_conn_memory client <addr> <connections>` is the client process.
pub fn run_child(job: &str) -> ExitCode {
    match job.split_whitespace().collect::<Vec<_>>()[..] {
        [JOB, "client", addr, connections] => {
            if let (Ok(addr), Ok(connections)) = (addr.parse(), connections.parse()) {
                client(addr, connections);
                return ExitCode::SUCCESS;
            }
        }
        [JOB, system, connections] => {
            let Some(connections) = connections.parse::<usize>().ok().filter(|&n| n > 0) else {
                eprintln!("fibra-compare: bad child job `{job}`");
                return ExitCode::from(2);
            };
            let hold = |addr, reading: &AtomicUsize| hold_idle(addr, connections, reading);
            let grown = match system {
                "fibra" => fibra(connections, hold),
                "tokio" => tokio(connections, hold),
                _ => {
                    eprintln!("fibra-compare: bad child job `{job}`");
                    return ExitCode::from(2);
                }
            };
            println!("{:.1}", grown as f64 / connections as f64);
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    eprintln!("fibra-compare: bad child job `{job}`");
    ExitCode::from(2)
}

/// fibra: an accepting fiber spawns, in its scope, an echo fiber per connection, for
/// `connections` connections and a warm-up one; `hold` makes them and returns what it
/// measured, given the server's address and the count of server sides that started reading.
fn fibra(connections: usize, hold: impl FnOnce(SocketAddr, &AtomicUsize) -> u64) -> u64 {
    let runtime = runtimes::fibra(WORKERS)
        .into_background()
        .expect("the fibra runtime");
    let listener = fibra::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local address");
    let reading = Arc::new(AtomicUsize::new(0));
    let server = {
        let reading = reading.clone();
        runtime.handle().spawn(move || {
            fibra::scope(|s| {
                for _ in 0..=connections {
                    let (conn, _) = listener.accept().expect("accept");
                    let reading = &reading;
                    s.spawn(move || {
                        reading.fetch_add(1, Ordering::Release);
                        echo(conn);
                    });
                }
            })
        })
    };
    let measured = hold(addr, &reading);
    server.join().expect("the fibra server panicked");
    runtime.shut_down();
    measured
}

/// tokio: an accepting task spawns, in a `JoinSet`, an echo task per connection; otherwise as
/// [`fibra`].
fn tokio(connections: usize, hold: impl FnOnce(SocketAddr, &AtomicUsize) -> u64) -> u64 {
    let runtime = runtimes::tokio_multi_io(WORKERS);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("local address");
    let reading = Arc::new(AtomicUsize::new(0));
    let server = {
        let reading = reading.clone();
        runtime.spawn(async move {
            let mut echoes = tokio::task::JoinSet::new();
            for _ in 0..=connections {
                let (conn, _) = listener.accept().await.expect("accept");
                let reading = reading.clone();
                echoes.spawn(async move {
                    reading.fetch_add(1, Ordering::Release);
                    echo_tokio(conn).await;
                });
            }
            while let Some(echo) = echoes.join_next().await {
                echo.expect("an echo task panicked");
            }
        })
    };
    let measured = hold(addr, &reading);
    runtime.block_on(server).expect("the tokio server panicked");
    measured
}

/// The measurement, from the server's process: a warm-up connection and round trip, then
/// `connections` idle ones from a client process; returns the RSS growth once every server
/// side is reading. All are checked and closed on return.
fn hold_idle(addr: SocketAddr, connections: usize, reading: &AtomicUsize) -> u64 {
    let mut warm_up = std::net::TcpStream::connect(addr).expect("connect");
    round_trip(&mut warm_up, 0);
    let baseline = resident_bytes();
    let mut client = child::spawn(&format!("{JOB} client {addr} {connections}"));
    let mut to_client = client.stdin.take().expect("piped stdin");
    let mut from_client = BufReader::new(client.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    from_client.read_line(&mut line).expect("read the client");
    assert_eq!(line.trim(), "connected", "the client failed");
    wait_until_reading(reading, connections + 1);
    std::thread::sleep(SETTLE);
    let grown = resident_bytes().saturating_sub(baseline);
    writeln!(to_client, "check").expect("write the client");
    line.clear();
    from_client.read_line(&mut line).expect("read the client");
    assert_eq!(line.trim(), "checked", "the client failed");
    let status = client.wait().expect("wait for the client");
    assert!(status.success(), "the client failed: {status}");
    grown
}

/// The client process: opens `connections` to `addr` and says `connected`; on `check`, one
/// round trip on each, says `checked` and closes them all. Ends, closing them, when its
/// parent's pipe closes.
fn client(addr: SocketAddr, connections: usize) {
    let mut idle = open_idle(addr, connections);
    println!("connected");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .expect("read the parent");
    if line.trim() == "check" {
        check_each(&mut idle);
        println!("checked");
    }
}

/// `connections` connections to `addr`, never more than [`AHEAD`] past the last one the
/// server has answered a round trip on (it accepts in order, so every earlier one is
/// accepted), so that the accept queue does not overflow.
fn open_idle(addr: SocketAddr, connections: usize) -> Vec<std::net::TcpStream> {
    let mut idle = Vec::with_capacity(connections);
    for i in 0..connections {
        let mut conn = std::net::TcpStream::connect(addr).expect("connect");
        if (i + 1) % AHEAD == 0 {
            round_trip(&mut conn, i as u8);
        }
        idle.push(conn);
    }
    idle
}

/// One round trip on every connection.
fn check_each(idle: &mut [std::net::TcpStream]) {
    for (i, conn) in idle.iter_mut().enumerate() {
        round_trip(conn, i as u8);
    }
}

fn wait_until_reading(reading: &AtomicUsize, count: usize) {
    while reading.load(Ordering::Acquire) < count {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One 64-byte message to the echo server and back, checked.
fn round_trip(conn: &mut std::net::TcpStream, fill: u8) {
    let message = [fill; MESSAGE];
    conn.write_all(&message).expect("client write");
    let mut back = [0; MESSAGE];
    conn.read_exact(&mut back).expect("client read");
    assert_eq!(back, message, "the echo is off");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's part in this thread instead of a process of its own: the server sides of
    /// the warm-up connection and of 200 more all start reading and each echoes.
    fn hold_in_thread(addr: SocketAddr, reading: &AtomicUsize) -> u64 {
        let mut warm_up = std::net::TcpStream::connect(addr).expect("connect");
        round_trip(&mut warm_up, 0);
        let mut idle = open_idle(addr, 200);
        wait_until_reading(reading, 201);
        check_each(&mut idle);
        reading.load(Ordering::Acquire) as u64
    }

    #[test]
    fn every_system_holds_and_echoes_every_connection() {
        assert_eq!(fibra(200, hold_in_thread), 201);
        assert_eq!(tokio(200, hold_in_thread), 201);
    }
}
