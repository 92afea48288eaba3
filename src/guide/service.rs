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
//!   borrow from the server (here a shared counter).
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
//!             let conn = conn.expect("accept");
//!             let lines = &lines;
//!             s.spawn(move || connection(conn, Duration::from_secs(30), lines));
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
//! `examples/service.rs` in the repository grows this into a job service: a producer, a pool
//! of workers over a [`chan`](crate::chan) channel, per-job timeouts, a ticker and a stop
//! token, all in one [`select!`](crate::select).
//!
//! [`scope_with`]: crate::scope_with
