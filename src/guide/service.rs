//! # Writing a service
//!
//! A server in fibra is written the way a thread-per-connection server is, with a fiber in
//! place of each thread: [`net::TcpListener::incoming`](crate::net::TcpListener::incoming)
//! parks the accepting fiber until a client connects, and each connection gets a fiber of its
//! own that reads and writes with `std::io::Read`/`Write`. A fiber costs a pooled stack, not a
//! thread, so a server holds many thousands of connections.
//!
//! Three things make it a service rather than a demo:
//!
//! - **Timeouts.** [`timeout`](crate::timeout) runs a closure in the calling fiber and
//!   cancels it if it is still waiting when the time is up, so a client that goes quiet does
//!   not hold its fiber forever.
//! - **Structured connections.** Spawning the connection fibers in a [`scope_with`] means the
//!   server function returns only after every connection has ended, and a connection may
//!   borrow from the server (here a shared counter). The other side of it: a panic in one
//!   connection ends them all unless it is caught (see "A panic in one connection" below).
//! - **A graceful stop.** A [`CancelToken`](crate::CancelToken) given to the scope stops the
//!   accept loop and every connection at their next cancellation point (every I/O call is
//!   one); destructors run as they unwind, so sockets are closed.
//!
//! ```
//! use fibra::net::{TcpListener, TcpStream};
//! use fibra::{CancelToken, ScopeOptions};
//! use std::io::{BufRead, BufReader, Write};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//!
//! /// Answers each line with the line in upper case, until the client closes, goes quiet for
//! /// `idle`, or the service stops.
//! fn connection(conn: TcpStream, idle: Duration, lines: &AtomicUsize) -> std::io::Result<()> {
//!     let mut reader = BufReader::new(&conn);
//!     let mut line = String::new();
//!     loop {
//!         line.clear();
//!         match fibra::timeout(idle, || reader.read_line(&mut line)) {
//!             Err(_) | Ok(Ok(0)) => return Ok(()),
//!             Ok(Ok(_)) => {
//!                 lines.fetch_add(1, Ordering::Relaxed);
//!                 (&conn).write_all(line.to_uppercase().as_bytes())?;
//!             }
//!             Ok(Err(error)) => return Err(error),
//!         }
//!     }
//! }
//!
//! /// Serves until `stop` is cancelled; returns how many lines it answered.
//! fn serve(listener: TcpListener, stop: CancelToken) -> usize {
//!     let lines = AtomicUsize::new(0);
//!     let stopped = fibra::scope_with(ScopeOptions::new().token(stop), |s| {
//!         for conn in listener.incoming() {
//!             match conn {
//!                 Ok(conn) => {
//!                     let lines = &lines;
//!                     s.spawn(move || connection(conn, Duration::from_secs(30), lines));
//!                 }
//!                 // A failed accept (a client that reset, no file descriptors left) ends
//!                 // neither the server nor the other connections.
//!                 Err(error) => eprintln!("accept: {error}"),
//!             }
//!         }
//!     });
//!     // The scope ends only through the token: `incoming` never runs out.
//!     assert!(stopped.is_err());
//!     lines.into_inner()
//! }
//!
//! fibra::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let stop = CancelToken::new();
//!     let server = fibra::spawn({
//!         let stop = stop.clone();
//!         move || serve(listener, stop)
//!     });
//!
//!     // Two clients, each a fiber, each with its connection left open.
//!     let clients: Vec<_> = ["hello\n", "fibers\n"]
//!         .into_iter()
//!         .map(|text| {
//!             fibra::spawn(move || {
//!                 let conn = TcpStream::connect(addr).unwrap();
//!                 (&conn).write_all(text.as_bytes()).unwrap();
//!                 let mut answer = String::new();
//!                 BufReader::new(&conn).read_line(&mut answer).unwrap();
//!                 (answer, conn)
//!             })
//!         })
//!         .collect();
//!     let answers: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
//!     assert_eq!(answers[0].0, "HELLO\n");
//!     assert_eq!(answers[1].0, "FIBERS\n");
//!
//!     // Stop: the accept loop and both open connections unwind; `serve` returns.
//!     stop.cancel();
//!     assert_eq!(server.join().unwrap(), 2);
//! });
//! ```
//!
//! ## Stopping on Ctrl-C and draining connections
//!
//! Cancelling one token for everything drops the connections mid-exchange. A gentler stop
//! has two stages: stop accepting, let the open connections finish (drain), and cut them off
//! only if asked again. That takes two scopes: an outer one that the connections are spawned
//! on, and inside it a [`scope_with`] for the accept loop alone. A child belongs to the scope
//! it is spawned on (see [`Scope::spawn`](crate::Scope::spawn)), so cancelling the inner
//! scope's token ends the accept loop while the connections run on; the outer scope then
//! returns once the last of them has ended, or when its own token is cancelled.
//!
//! ```
//! use fibra::net::{TcpListener, TcpStream};
//! use fibra::{CancelToken, ScopeOptions};
//! use std::io::{BufRead, BufReader, Write};
//!
//! /// Answers each line with its length, until the client closes.
//! fn connection(conn: TcpStream) -> std::io::Result<()> {
//!     let mut line = String::new();
//!     let mut reader = BufReader::new(&conn);
//!     loop {
//!         line.clear();
//!         if reader.read_line(&mut line)? == 0 {
//!             return Ok(());
//!         }
//!         // One write per reply (see "Write each reply at once" below).
//!         (&conn).write_all(format!("{}\n", line.len()).as_bytes())?;
//!     }
//! }
//!
//! /// Serves until `stop_accepting` is cancelled, then until the open connections have ended
//! /// or `stop_all` is cancelled.
//! fn serve(listener: TcpListener, stop_accepting: CancelToken, stop_all: CancelToken) {
//!     let _ = fibra::scope_with(ScopeOptions::new().token(stop_all), |connections| {
//!         let _ = fibra::scope_with(ScopeOptions::new().token(stop_accepting), |_| {
//!             for conn in listener.incoming() {
//!                 match conn {
//!                     Ok(conn) => drop(connections.spawn(move || connection(conn))),
//!                     Err(error) => eprintln!("accept: {error}"),
//!                 }
//!             }
//!         });
//!         // New clients are refused from here on; the open connections go on.
//!         drop(listener);
//!     });
//! }
//!
//! fibra::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let (stop_accepting, stop_all) = (CancelToken::new(), CancelToken::new());
//!     let server = fibra::spawn({
//!         let (stop_accepting, stop_all) = (stop_accepting.clone(), stop_all.clone());
//!         move || serve(listener, stop_accepting, stop_all)
//!     });
//!
//!     let conn = TcpStream::connect(addr).unwrap();
//!     let mut answers = BufReader::new(&conn);
//!     let mut answer = String::new();
//!     writeln!(&conn, "before").unwrap();
//!     answers.read_line(&mut answer).unwrap();
//!     assert_eq!(answer, "7\n");
//!
//!     stop_accepting.cancel();
//!     // The open connection is still served after the stop.
//!     writeln!(&conn, "after the stop").unwrap();
//!     answer.clear();
//!     answers.read_line(&mut answer).unwrap();
//!     assert_eq!(answer, "15\n");
//!
//!     // The client leaves: the last connection ends, and with it the server.
//!     drop(answers);
//!     drop(conn);
//!     server.join().unwrap();
//! });
//! ```
//!
//! In a program, Ctrl-C cancels the tokens: a fiber waits for it with
//! [`block_on`](crate::block_on) on tokio's `signal::ctrl_c` (tokio's `signal` feature:
//! `tokio = { version = "1", features = ["signal"] }`). The first Ctrl-C stops accepting, a
//! second one cuts off the connections still open. Once a program listens for Ctrl-C, the
//! signal no longer ends it by itself. (This example is compiled but not run: it waits for a
//! real Ctrl-C.)
//!
//! ```no_run
//! # use fibra::{net::TcpListener, CancelToken};
//! # fn serve(_: TcpListener, _: CancelToken, _: CancelToken) {}
//! #[fibra::main]
//! fn main() {
//!     let listener = TcpListener::bind("0.0.0.0:8080").unwrap();
//!     let (stop_accepting, stop_all) = (CancelToken::new(), CancelToken::new());
//!     let on_ctrl_c = fibra::spawn({
//!         let stages = [stop_accepting.clone(), stop_all.clone()];
//!         move || {
//!             for stage in stages {
//!                 fibra::block_on(tokio::signal::ctrl_c()).expect("listening for Ctrl-C");
//!                 stage.cancel();
//!             }
//!         }
//!     });
//!     serve(listener, stop_accepting, stop_all);
//!     // Not waited for: the runtime cancels it when `main` returns.
//!     drop(on_ctrl_c);
//! }
//! ```
//!
//! ## A panic in one connection
//!
//! A scope is all or nothing: a child's panic cancels its siblings and the scope body, and
//! the scope re-raises it (see [the cancellation chapter](crate::guide::cancellation)). In
//! the examples above, a bug that panics while serving one client therefore closes every
//! other connection and the listener, and `serve` panics — unlike a thread per connection,
//! or a `tokio::spawn` per connection, where the panic ends only that one. To keep the
//! service up, catch the panic around each connection's work. A cancellation is an unwind
//! as well, and must go on: [`is_cancellation`](crate::is_cancellation) tells the two apart.
//! The runtime's panic hook has already reported the panic, naming the fiber.
//!
//! ```
//! use fibra::net::{TcpListener, TcpStream};
//! use fibra::{CancelToken, ScopeOptions};
//! use std::io::{BufRead, BufReader, Write};
//! use std::panic::{self, AssertUnwindSafe};
//!
//! /// Answers each line with its length; the line "boom" hits a bug.
//! fn connection(conn: TcpStream) -> std::io::Result<()> {
//!     let mut line = String::new();
//!     let mut reader = BufReader::new(&conn);
//!     loop {
//!         line.clear();
//!         if reader.read_line(&mut line)? == 0 {
//!             return Ok(());
//!         }
//!         assert_ne!(line, "boom\n", "a bug in the handler");
//!         (&conn).write_all(format!("{}\n", line.len()).as_bytes())?;
//!     }
//! }
//!
//! /// Serves one connection; a panic in it ends this connection alone.
//! fn contained(conn: TcpStream) {
//!     match panic::catch_unwind(AssertUnwindSafe(|| connection(conn))) {
//!         Err(payload) if fibra::is_cancellation(&*payload) => panic::resume_unwind(payload),
//!         Err(_) => eprintln!("a connection panicked; the others go on"),
//!         Ok(Err(error)) => eprintln!("connection: {error}"),
//!         Ok(Ok(())) => {}
//!     }
//! }
//!
//! fn serve(listener: TcpListener, stop: CancelToken) {
//!     let _ = fibra::scope_with(ScopeOptions::new().token(stop), |s| {
//!         for conn in listener.incoming().flatten() {
//!             s.spawn(move || contained(conn));
//!         }
//!     });
//! }
//!
//! fn ask(conn: &TcpStream, line: &str) -> String {
//!     let mut conn = conn;
//!     conn.write_all(line.as_bytes()).unwrap();
//!     let mut answer = String::new();
//!     BufReader::new(conn).read_line(&mut answer).unwrap();
//!     answer
//! }
//!
//! fibra::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let stop = CancelToken::new();
//!     let server = fibra::spawn({
//!         let stop = stop.clone();
//!         move || serve(listener, stop)
//!     });
//!
//!     let calm = TcpStream::connect(addr).unwrap();
//!     assert_eq!(ask(&calm, "hi\n"), "3\n");
//!     // This client's connection panics and is closed...
//!     let unlucky = TcpStream::connect(addr).unwrap();
//!     (&unlucky).write_all(b"boom\n").unwrap();
//!     let closed = BufReader::new(&unlucky).read_line(&mut String::new());
//!     assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
//!     // ...while the other connection and the listener go on.
//!     assert_eq!(ask(&calm, "still here\n"), "11\n");
//!     let late = TcpStream::connect(addr).unwrap();
//!     assert_eq!(ask(&late, "late\n"), "5\n");
//!
//!     stop.cancel();
//!     server.join().unwrap(); // `serve` returned: the panic did not reach it
//! });
//! ```
//!
//! ## Idle limits: per read or per exchange
//!
//! Two ways to bound how long a connection may take:
//!
//! - **Per read:** [`TcpStream::set_read_timeout`](crate::net::TcpStream::set_read_timeout)
//!   bounds each read on its own; a read that waited that long fails with
//!   [`ErrorKind::WouldBlock`](std::io::ErrorKind::WouldBlock) (std's kind on Unix — not
//!   `TimedOut`). A client that keeps sending a byte now and then is never cut off, and a
//!   `BufReader` line may take many reads. Match both kinds if the code also runs on std
//!   sockets elsewhere.
//! - **Per exchange:** [`timeout`](crate::timeout) bounds a whole piece of work — a request
//!   read line by line and answered — however many reads it takes, and cancels it where it
//!   waits (as in the first example, per line).
//!
//! ```
//! use fibra::net::{TcpListener, TcpStream};
//! use std::io::{ErrorKind, Read};
//! use std::time::Duration;
//!
//! fibra::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let _quiet_client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
//!     let (mut conn, _) = listener.accept().unwrap();
//!
//!     conn.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
//!     let idle = conn.read(&mut [0; 64]).unwrap_err();
//!     assert!(matches!(idle.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut));
//!
//!     conn.set_read_timeout(None).unwrap();
//!     let exchange = fibra::timeout(Duration::from_millis(10), || conn.read(&mut [0; 64]));
//!     assert!(exchange.is_err(), "the whole exchange ran out of time");
//! });
//! ```
//!
//! ## Write each reply at once
//!
//! A reply written in pieces leaves in pieces: `writeln!(&conn, "{n}")` makes two writes (the
//! number, then the newline). With Nagle's algorithm on (the default, as for std's sockets)
//! the second piece waits until the peer acknowledges the first, and a peer that is waiting
//! for the rest of the line delays its acknowledgement — about 40 ms on Linux, so a load test
//! of a line protocol on loopback shows every exchange taking 40 ms. Write each reply with one
//! `write_all` (format it first, or write through a `std::io::BufWriter` and flush once per
//! reply), or turn Nagle off with
//! [`TcpStream::set_nodelay`](crate::net::TcpStream::set_nodelay).
//!
//! `examples/service.rs` in the repository grows this into a job service: a producer, a pool
//! of workers over a [`chan`](crate::chan) channel, per-job timeouts, a ticker and a stop
//! token, all in one [`select!`](crate::select).
//!
//! [`scope_with`]: crate::scope_with
