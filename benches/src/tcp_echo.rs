//! `tcp_echo`: 64-byte request/response round trips over loopback TCP, against an echo server
//! in the same process; ns per round trip.
//!
//! Variant `1c`: one connection (latency), 20 000 round trips (2 000 with `--quick`).
//! Variant `100c`: 100 connections at once, 200 round trips each (20 with `--quick`); the
//! value is wall time over all round trips, so its inverse is the total throughput. Systems:
//! fibra (a fiber per connection and side on a 2-worker runtime), tokio (a task per
//! connection and side on a 2-worker multi-thread runtime), `may` (coroutines on its 2
//! workers, `may::net`), and in `100c` std threads (a thread per connection and side).
//! Connections are made before the timed region; every reply is checked. Each system is both
//! the client and the server, as a program written on it would be.
//!
//! # Measured (2026-12-05, the 2-core machine loaded by other work, load average 7–17)
//!
//! Ratios of fibra's ns per round trip over the peer's (lower is better), several runs each.
//! `--quick`: `1c` 0.76–1.82× tokio (median 1.5×), 0.11–0.45× may; `100c` 0.47–1.51× tokio
//! (median 1.06×), 0.38–1.79× may (median 0.84×). Full runs: `1c` 0.95–1.73× tokio; `100c`
//! 0.92–1.28× tokio, 0.49–0.80× may (at least 1.25× may's throughput), 1.9–3.1× std threads.
//! The quick `100c` (2 000 round trips, some 60 ms) is too short to be steadier than this.
//!
//! Why `1c` misses tokio: every readiness event crosses from the driver thread to a worker,
//! while tokio's worker, idle, polls `epoll` itself and finds the peer's bytes already there
//! (a loopback `send` makes the other end readable before it returns): its whole round trip
//! runs on one thread with 0.013 context switches, against fibra's 6 (`perf stat`, 20 000
//! trips; the syscalls per trip are the same: 2 `recv`, 1 `send` per side). The driver thread
//! sleeps in `epoll_wait` and is woken twice per round trip; its CPU per readiness event
//! (`/proc/self/task/*/schedstat`) was 4.4–5.3 µs in most runs and up to 10.8 µs, most of it
//! the context switch (`finish_task_switch` is its top symbol; when the driver wakes on the
//! core of the worker that sent, it preempts that worker). The round trip's CPU is 27–37 µs
//! with the client and server fibers on one worker and 36–61 µs with them on two, against
//! tokio's 14 µs (wall times overlapped under this load).
//! With 100 connections the driver batches: 0.8–1.5 µs per event, 55–70 events per wake-up,
//! and the batching pays (without its yield, `100c` took 29.4 µs per trip against 20.1).
//! A driver polling `epoll` in a loop for 20 or 50 µs after each wake, instead of sleeping,
//! made `1c` slower here (more runnable threads than cores); the workers' idle spin made no
//! difference that the noise let through (none against 50 µs).
//!
//! # Retrying before the reactor (2026-12-06)
//!
//! A fiber whose call says `WouldBlock` now retries it on its own worker, yielding between
//! tries, under the runtime's retry budget, before it waits for the reactor; a socket whose
//! retries keep missing skips them for a growing number of waits. When the client's and the
//! server's fibers run on two workers, each finds the other's bytes during its retries and
//! the round trip never crosses the driver thread. Full runs, the binary before and after
//! alternated, fibra ÷ tokio: at a load average of 10–12, `1c` 1.60 and 1.42 before, 0.83 and
//! 0.79 after; at 3–6, `1c` 2.76 and 2.16 before, 0.86 and 0.95 after (tokio gains more from
//! the quieter machine than fibra did before); at 0.1–3.6, `1c` 3.86 and 2.19 before, 0.85 and
//! 0.73 after (fibra 10.1 and 8.7 µs per round trip, tokio 11.9). One run of nine benches in a
//! row on the quiet machine gave 2.16 after, not explained: the retries help only when the two
//! fibers run on different workers, so a run whose fibers shared a worker is the likely cause
//! (not checked). `100c` did not move beyond the noise (1.14 and
//! 1.10 before, 1.11 and 1.18 after at 3–6): with 50 connections a worker, a retry costs more
//! turns than the budget holds, so none are made.
//!
//! # Where `100c`'s time went, and retries behind a long queue (2026-12-06, later)
//!
//! Measured with the child job (`FIBRA_COMPARE_CHILD="tcp_echo <system> 100 <trips>"`),
//! load average 6–9. CPU per round trip (`perf stat -e cpu-clock`, medians of 7): fibra 15.1
//! µs, tokio 11.5 µs. `perf record` split it: the workers' kernel time (the TCP work) was the
//! same in both; fibra spent 1.6 µs more per trip on its driver thread and 1.3 µs more in its
//! workers' user code (the reactor wait: the `Readiness` future polled twice, the waker, the
//! hold, the park). The driver took in about 2 readiness events per trip (one per message)
//! in 1.5 events per `epoll_wait` (73 000 calls for 50 000 trips; tokio: 2 000), at about
//! 0.8 µs of its CPU per event; its costliest step is tokio's `ScheduledIo::wake`, most of it
//! one load of the waiter node that lives on the parked fiber's stack (a cache miss from the
//! other core), then `Core::unpark`. Waking the workers is cheap already: 1 900 futex calls in
//! all, the driver's wakes find them awake. Syscalls per trip were as tokio's: 1 send, 2
//! `recv` per side (one `WouldBlock`), plus 12% retries.
//!
//! So a socket call now retries `RETRY_TURNS` times whatever the queue (`fibra-net`'s `retries`
//! module): behind 50 ready fibers a retry waits while they run, its peer among them, and costs one
//! syscall, where the reactor wait costs the driver's event and the wait's own overhead. One retry
//! after one yield was not enough (measured: slower, the peer woken by the reactor runs after the
//! retry); with up to 32 the fibers settle into finding their data by retrying: under strace,
//! `epoll_wait` calls 89 000 → 35 000 for 50 000 trips, `recv`s 4.2 → 4.5 a trip, CPU 15.1 → 13.5
//! µs a trip (tokio 11.5). Full runs, the binary before and after alternated, seven pairs at a load
//! average of 6–11, fibra ÷ tokio in `100c`: 1.40, 1.13, 1.08, 0.88, 0.92, 0.65, 1.18 before
//! (median 1.08), 0.54, 0.89, 0.90, 1.05, 0.74, 0.87, 0.84 after (median 0.87); ÷ may 0.73 before
//! (median; 0.31–0.81), 0.49 after (0.25–0.66), about twice may's throughput. `1c` did not move:
//! median 0.81 before (0.66–0.98), 0.82 after (0.61–1.00); alone in child runs, 13.3 and 13.1 µs a
//! trip (medians of 11, tokio 18.1). In child runs of `100c` alone (medians of 7 and 9) the CPU a
//! trip fell 7–10% both times but the wall time once by 12% (23.2 → 20.3 µs, tokio 16.8) and once
//! not at all (20.9 → 21.8, tokio 16.3): under this load a process that needs less CPU is also
//! given less, and fibra alone stays some 1.2–1.3× tokio's time a trip there, where the full runs
//! put it below tokio. `http_hello` and `accept_storm` (one run each) and `idle_conn_memory` did
//! not get worse: `http_hello` 1.11 → 1.19× hyper's requests per second.
//!
//! # Why `1c` is bimodal, and `100c` alone against full runs (2026-12-06, later still)
//!
//! Counted in child runs with each worker's metrics (slices, parks, inbox wakes, idle sleeps)
//! and `perf stat` syscall tracepoints, load average 5–11. `1c` depends on where the two fibers
//! start. In 55 of 58 runs the client's and the server's fibers started on the same worker:
//! 2 slices a round trip, one park in 20 000 trips (each finds the other's bytes by its
//! retries), no idle sleep, 4 `recv` and 2 `send` a trip as tokio, no `sched_yield`, and the
//! driver thread woken some 15 times in all (the sockets never wait, so they are never
//! registered with the reactor). That took 7.9–12.5 µs a trip (up to 18 at the busiest),
//! 9.5 µs of CPU against tokio's 13. In the other 3 the server fiber started on the other
//! worker (where it starts is placement's choice, not this crate's): each retry then finds
//! the bytes after a thread yield (2 `sched_yield` and 2 context switches a trip, 15 µs of
//! CPU), 19–23 µs a trip; and when the peer's worker thread waits for a CPU the retries run
//! out, the socket's misses make later waits skip them, and messages cross the driver thread
//! to a sleeping worker, two thread wake-ups (one a futex) a message against tokio's one (its
//! idle worker is the thread in `epoll_wait`): 200–570 parks and as many idle sleeps per
//! worker in 20 000 trips, 37–72 µs a trip. That is the 67 µs outlier.
//!
//! `100c` alone (100 connections, 200 trips each, medians of 6–8 alternated child runs per
//! batch, three batches): fibra used 13.2–16.7 µs of CPU a trip, tokio 10.8–14.4, about 1.2×;
//! alone the process gets about one core, so its wall time follows its CPU time. Per trip,
//! fibra made 6.1–6.6 `recv` (tokio 4.0: each read's one `WouldBlock`; the rest are retries
//! that missed), 0.13–0.22 context switches (tokio 0.01), 0.04–0.1 `epoll_wait` (tokio 0.04:
//! the driver batches, one wake-up per 10–25 trips) and 0.004–0.007 `futex` calls: waking
//! workers is batched already (the driver's wakes find them awake), so one futex per batch
//! holds. The driver thread took 2.75% of the process's CPU (`perf record`, 100 000 trips):
//! about 0.57 µs a trip, some 0.3 µs per readiness event (one per message); the workers spent
//! 83% in the kernel (TCP). In full runs the same workload came out 0.54–1.05× tokio (below).
//! Not explained: per round, both systems' wall times in a full run (fibra 9.0–23.4 µs,
//! tokio 11.3–27.9) spread wider (±30% within one run) than the 1.2× of CPU, so a run's ratio
//! says more about what else the machine ran in its rounds than about the two systems; what
//! full runs do differently for fibra was not found (the fibers' placement differs from run
//! to run: 42–48 of the 100 servers and 46–58 clients on worker 0 in five child runs).
//!
//! Reactor waits now keep the fiber's own waker (`block_on_leaf_until`): no allocation and no
//! second poll of the readiness future per wait. CPU a trip in `100c` child runs, medians,
//! before → after: 13.7 → 13.2 µs and 16.7 → 15.8 µs (tokio 10.8 and 14.4); wall times moved
//! within the noise. Full runs, the binaries alternated, three pairs at load averages 6.5–18,
//! fibra ÷ tokio: `1c` 1.71, 0.62, 0.65 before, 0.77, 0.77, 0.79 after; `100c` 1.05, 0.64,
//! 0.54 before, 0.83, 0.76, 0.68 after; ÷ may in `100c` 0.56, 0.32, 0.32 before, 0.46, 0.40,
//! 0.41 after (2.2–3.1× may's throughput). Tried and dropped: a retry of a registered socket
//! asking the reactor before its syscall (as the first try does) cut `recv` from 6.2 to 5.0 a
//! trip and CPU by up to 10% in child runs, but wall times did not follow (full runs 0.80,
//! 0.77, 1.14 against 0.91, 0.72, 0.81 in `100c`), and it makes a retry wait for the driver.
//!
//! # `1c`'s slow mode: the driver woken for nobody (2026-12-06, third)
//!
//! Child runs of `1c` (20 000 trips) fell into two modes: 7–8 µs a trip or 25–29 µs, never
//! between. The slow runs were those whose client and server fibers started on two workers
//! (printed by each fiber: the fast ones shared a worker). Their retries found the peer's
//! bytes every time (`perf stat`: 22–27 missed runs in 20 000 trips), yet each trip took 3.4
//! context switches and 1.9 `epoll_wait` returns: one early wait had registered each socket
//! with the reactor, and the reactor takes in every readiness edge of a registered socket,
//! waited for or not. So each message woke the driver thread, a third thread on two cores.
//! A socket whose last 32 retry runs all found it ready now leaves the reactor (`fibra-net`'s
//! `retries`); a later wait registers it anew. Child runs with the two fibers on two workers:
//! 11.3–13.9 µs a trip (hits mostly at the 6th–7th try, 0.05 context switches a trip), on one
//! worker unchanged (7.2–8.4 µs). Full runs, the binaries alternated, three pairs at a load
//! average of 2–5, fibra ÷ tokio: `1c` 1.115, 1.144, 1.841 before, 1.227, 0.794, 1.236 after
//! (`--quick`: 1.893, 1.550, 1.774 before, 1.170, 1.303, 1.281 after); `100c` 1.009, 1.110,
//! 1.018 before, 0.864, 0.863, 0.860 after, ÷ may 1.107, 1.161, 1.020 before, 0.833, 0.815,
//! 0.887 after. `http_hello` (1.066, 1.114, 1.015 before, 1.068, 1.079, 1.112 after ÷ hyper in
//! requests per second) and `load_http` did not move beyond the noise. What is left of `1c`
//! on two workers is the cross-core trip itself: the retries' failed `recv`s (about 5 a side
//! and trip) and the peer's `send` on another core, against tokio's 10.5 µs.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::rounds::compare_per_op;
use crate::runtimes;

/// The first word of this bench's child job, which runs one system's workload alone (for
/// `perf`, `strace` or callgrind): `tcp_echo <system> <connections> <trips per connection>`.
pub const JOB: &str = "tcp_echo";

/// Workers of every multi-worker system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;
/// Bytes per request and per response.
pub(crate) const MESSAGE: usize = 64;

/// One round of a system: connections, round trips per connection; the time they took.
type Round = fn(usize, u64) -> Duration;

/// Runs both variants and prints their JSON lines.
pub fn run(quick: bool) {
    let (one, many) = if quick { (2_000, 20) } else { (20_000, 200) };
    compare_per_op(
        "tcp_echo",
        "1c",
        one,
        ROUNDS,
        &[
            ("fibra", &|trips| fibra(1, trips)),
            ("tokio", &|trips| tokio(1, trips)),
            ("may", &|trips| may(1, trips)),
        ],
    );
    const CONNECTIONS: usize = 100;
    let per_connection =
        |round: Round| move |trips: u64| round(CONNECTIONS, trips / CONNECTIONS as u64);
    compare_per_op(
        "tcp_echo",
        "100c",
        many * CONNECTIONS as u64,
        ROUNDS,
        &[
            ("fibra", &per_connection(fibra)),
            ("tokio", &per_connection(tokio)),
            ("may", &per_connection(may)),
            ("std_thread", &per_connection(std_threads)),
        ],
    );
}

/// The child side of [`JOB`]: runs one round of one system and prints its ns per round trip.
pub fn run_child(job: &str) -> ExitCode {
    let systems: [(&str, Round); 4] = [
        ("fibra", fibra),
        ("tokio", tokio),
        ("may", may),
        ("std_thread", std_threads),
    ];
    let parsed = match job.split_whitespace().collect::<Vec<_>>()[..] {
        [JOB, system, connections, trips] => systems
            .iter()
            .find(|(name, _)| *name == system)
            .zip(connections.parse::<usize>().ok().filter(|&n| n > 0))
            .zip(trips.parse::<u64>().ok().filter(|&n| n > 0)),
        _ => None,
    };
    let Some(((&(_, round), connections), trips)) = parsed else {
        eprintln!("fibra-compare: bad child job `{job}`");
        return ExitCode::from(2);
    };
    let elapsed = round(connections, trips);
    println!(
        "{:.1}",
        elapsed.as_nanos() as f64 / (connections as u64 * trips) as f64
    );
    ExitCode::SUCCESS
}

/// The server side of one connection, for every blocking-style system: echo 64-byte
/// messages until the client closes.
pub(crate) fn echo(mut conn: impl Read + Write) {
    let mut buf = [0; MESSAGE];
    while conn.read_exact(&mut buf).is_ok() {
        conn.write_all(&buf).expect("echo write");
    }
}

/// [`echo`] for a tokio connection.
pub(crate) async fn echo_tokio(mut conn: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut buf = [0; MESSAGE];
    while conn.read_exact(&mut buf).await.is_ok() {
        conn.write_all(&buf).await.expect("echo write");
    }
}

/// The client side of one connection, for every blocking-style system: `trips` round trips,
/// each reply checked.
fn client(mut conn: impl Read + Write, trips: u64) {
    let mut back = [0; MESSAGE];
    for i in 0..trips {
        let message = [i as u8; MESSAGE];
        conn.write_all(&message).expect("client write");
        conn.read_exact(&mut back).expect("client read");
        assert_eq!(back, message, "the echo is off");
    }
}

/// fibra: an accepting fiber spawns a server fiber per connection; a client fiber per
/// connection.
fn fibra(connections: usize, trips: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let listener = fibra::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local address");
        fibra::scope(|s| {
            s.spawn(|| {
                for _ in 0..connections {
                    let (conn, _) = listener.accept().expect("accept");
                    conn.set_nodelay(true).expect("nodelay");
                    s.spawn(move || echo(conn));
                }
            });
            let streams: Vec<_> = (0..connections)
                .map(|_| {
                    let stream = fibra::net::TcpStream::connect(addr).expect("connect");
                    stream.set_nodelay(true).expect("nodelay");
                    stream
                })
                .collect();
            let start = Instant::now();
            fibra::scope(|clients| {
                for stream in streams {
                    clients.spawn(move || client(stream, trips));
                }
            });
            start.elapsed()
        })
    })
}

/// tokio: a task per connection and side on a 2-worker multi-thread runtime.
fn tokio(connections: usize, trips: u64) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let runtime = runtimes::tokio_multi_io(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local address");
        let server = tokio::spawn(async move {
            let mut echoes = Vec::with_capacity(connections);
            for _ in 0..connections {
                let (conn, _) = listener.accept().await.expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                echoes.push(tokio::spawn(echo_tokio(conn)));
            }
            for echo in echoes {
                echo.await.expect("echo task panicked");
            }
        });
        let mut streams = Vec::with_capacity(connections);
        for _ in 0..connections {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            streams.push(stream);
        }
        let start = Instant::now();
        let clients: Vec<_> = streams
            .into_iter()
            .map(|mut conn| {
                tokio::spawn(async move {
                    let mut back = [0; MESSAGE];
                    for i in 0..trips {
                        let message = [i as u8; MESSAGE];
                        conn.write_all(&message).await.expect("client write");
                        conn.read_exact(&mut back).await.expect("client read");
                        assert_eq!(back, message, "the echo is off");
                    }
                })
            })
            .collect();
        for client in clients {
            client.await.expect("client task panicked");
        }
        let elapsed = start.elapsed();
        server.await.expect("server task panicked");
        elapsed
    })
}

/// may: an accepting coroutine spawns a server coroutine per connection; a client coroutine
/// per connection.
fn may(connections: usize, trips: u64) -> Duration {
    let listener = may::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local address");
    let server = move || {
        let echoes: Vec<_> = (0..connections)
            .map(|_| {
                let (conn, _) = listener.accept().expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move
                // between threads and has a small fixed stack. `echo` holds no thread-local
                // across a switch (only may's own socket) and uses a few hundred bytes.
                unsafe { may::coroutine::spawn(move || echo(conn)) }
            })
            .collect();
        for echo in echoes {
            echo.join().expect("may echo panicked");
        }
    };
    // SAFETY: as above: the accept loop touches only may's listener and join handles.
    let server = unsafe { may::coroutine::spawn(server) };
    let streams = may_connections(addr, connections);
    let start = Instant::now();
    let clients: Vec<_> = streams
        .into_iter()
        // SAFETY: as above: `client` touches only may's socket and its own stack array.
        .map(|conn| unsafe { may::coroutine::spawn(move || client(conn, trips)) })
        .collect();
    for client in clients {
        client.join().expect("may client panicked");
    }
    let elapsed = start.elapsed();
    server.join().expect("may server panicked");
    elapsed
}

fn may_connections(addr: SocketAddr, connections: usize) -> Vec<may::net::TcpStream> {
    (0..connections)
        .map(|_| {
            let stream = may::net::TcpStream::connect(addr).expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            stream
        })
        .collect()
}

/// std threads: a thread per connection and side.
fn std_threads(connections: usize, trips: u64) -> Duration {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local address");
    let server = std::thread::spawn(move || {
        let echoes: Vec<_> = (0..connections)
            .map(|_| {
                let (conn, _) = listener.accept().expect("accept");
                conn.set_nodelay(true).expect("nodelay");
                std::thread::spawn(move || echo(conn))
            })
            .collect();
        for echo in echoes {
            echo.join().expect("echo thread panicked");
        }
    });
    let streams: Vec<_> = (0..connections)
        .map(|_| {
            let stream = std::net::TcpStream::connect(addr).expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            stream
        })
        .collect();
    let start = Instant::now();
    let clients: Vec<_> = streams
        .into_iter()
        .map(|conn| std::thread::spawn(move || client(conn, trips)))
        .collect();
    for client in clients {
        client.join().expect("client thread panicked");
    }
    let elapsed = start.elapsed();
    server.join().expect("server thread panicked");
    elapsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_round_trip() {
        // Each round checks every reply it gets back.
        runtimes::init_may();
        fibra(1, 50);
        fibra(10, 10);
        tokio(1, 50);
        tokio(10, 10);
        may(1, 50);
        may(10, 10);
        std_threads(10, 10);
    }

    #[test]
    fn the_child_job_runs_one_system_and_refuses_a_bad_job() {
        assert_eq!(run_child("tcp_echo fibra 2 5"), ExitCode::SUCCESS);
        assert_eq!(run_child("tcp_echo nonesuch 2 5"), ExitCode::from(2));
        assert_eq!(run_child("tcp_echo fibra 0 5"), ExitCode::from(2));
        assert_eq!(run_child("tcp_echo fibra 2"), ExitCode::from(2));
    }
}
