//! # Load testing with `fibra-load`
//!
//! The `fibra-load` crate is a load generator in which every virtual user (VU) is a fiber
//! running plain blocking code. Its command line (`cargo run --release -p fibra-load -- URL -c
//! 100 -d 30s`) covers plain HTTP runs; for anything more, write the scenario in Rust:
//!
//! - a `Scenario` is a list of named steps, each a closure over a `Vu` (an HTTP/1.1 client with
//!   keep-alive connections, raw TCP, think time and checks); each step gets its own latency
//!   histogram in the report;
//! - `Load` runs it with some VUs (`.vus(n)`; 1 unless given) for a duration (`.duration(d)`),
//!   a number of iterations (`.iterations(n)`) or k6-style stages (`.stages(…)`) — 10 s when
//!   none of these is given — in the closed model (each VU starts its next iteration when the
//!   last one ended) or the open model (`.rate(n)`: iterations start on a schedule and latency
//!   is measured from the intended start, so a stalled server shows in the percentiles);
//!   `.stop_on(token)` ends a run early when a [`CancelToken`](crate::CancelToken) fires;
//! - the `Report` has HDR histograms and counters, a text summary, JSON and an HTML page, and
//!   `Threshold`s such as `p99<50ms` or `errors<1%` to fail a CI run. Thresholds measure the
//!   HTTP requests; a run that made none (raw TCP steps only) is measured by its step runs.
//!
//! `fibra-load`'s own API docs are not part of these pages: in a checkout of fibra, run
//! `cargo doc -p fibra-load --open`. To use the library outside the checkout, depend on it
//! beside fibra (`fibra-load = { git = "…" }`, or `{ path = "…/load" }` into a checkout); to
//! have the command line anywhere, `cargo install --path load` from the checkout installs the
//! `fibra-load` binary.
//!
//! A scenario against fibra's own HTTP hello server (a small server kept for demos and
//! benchmarks), run in the same process:
//!
//! ```
//! use fibra_load::{Load, Scenario, Threshold};
//!
//! fibra::run(|| {
//!     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
//!     let url = format!("http://{}/", server.local_addr());
//!     let scenario = Scenario::new("browse")
//!         .step("home", {
//!             let url = url.clone();
//!             move |vu| {
//!                 let response = vu.get(&url)?;
//!                 vu.check("home is 200", response.status == 200);
//!                 Ok(())
//!             }
//!         })
//!         .step("again", move |vu| {
//!             vu.get(&url)?;
//!             Ok(())
//!         });
//!     let mut report = Load::new(scenario).vus(8).iterations(200).run();
//!     // Two requests an iteration, every one answered.
//!     assert_eq!(report.stats.requests, 400);
//!     assert_eq!(server.requests(), 400);
//!     let thresholds: Vec<Threshold> =
//!         ["errors<1%", "p99<10s"].iter().map(|t| t.parse().unwrap()).collect();
//!     assert!(report.check(&thresholds));
//!     println!("{}", report.summary());
//! });
//! ```
//!
//! ## Raw TCP
//!
//! For a protocol other than HTTP, a step opens its own connection with `Vu::connect` (bounded
//! by the run's request timeout) and speaks over it with `Read`/`Write`. Such traffic is not
//! counted as requests (the summary's request, byte, connection and latency lines stay at
//! zero); each step run is timed, and its errors counted, in the step's row of the report,
//! which thresholds then measure.
//!
//! ```
//! use fibra::net::TcpListener;
//! use fibra_load::{Load, Scenario, Threshold};
//! use std::io::{BufRead, BufReader, Write};
//!
//! fibra::run(|| {
//!     // An echo server, a fiber per connection.
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let port = listener.local_addr().unwrap().port();
//!     drop(fibra::spawn(move || {
//!         for conn in listener.incoming().flatten() {
//!             drop(fibra::spawn(move || std::io::copy(&mut &conn, &mut &conn)));
//!         }
//!     }));
//!
//!     let scenario = Scenario::new("echo").step("ping", move |vu| {
//!         let conn = vu.connect("127.0.0.1", port)?;
//!         (&conn).write_all(b"ping\n")?;
//!         let mut line = String::new();
//!         BufReader::new(&conn).read_line(&mut line)?;
//!         vu.check("echoed", line == "ping\n");
//!         Ok(())
//!     });
//!     let mut report = Load::new(scenario).vus(4).iterations(40).run();
//!     assert_eq!(report.stats.requests, 0);
//!     assert_eq!((report.stats.bytes_in, report.stats.connections), (0, 0));
//!     assert_eq!(report.stats.steps[0].count, 40);
//!     assert_eq!(report.stats.checks["echoed"].pass, 40);
//!     let thresholds: Vec<Threshold> =
//!         ["errors<1%", "p99<10s"].iter().map(|t| t.parse().unwrap()).collect();
//!     assert!(report.check(&thresholds)); // measured over the 40 step runs
//!     println!("{}", report.summary()); // with a "Steps:" section
//! });
//! ```
