//! # Load testing with `fibra-load`
//!
//! The `fibra-load` crate is a load generator in which every virtual user (VU) is a fiber
//! running plain blocking code. Its command line (`cargo run --release -p fibra-load -- URL -c
//! 100 -d 30s`) covers plain HTTP runs; for anything more, write the scenario in Rust:
//!
//! - a `Scenario` is a list of named steps, each a closure over a `Vu` (an HTTP/1.1 client with
//!   keep-alive connections, raw TCP, think time and checks); each step gets its own latency
//!   histogram in the report;
//! - `Load` runs it with some VUs for a duration, a number of iterations or k6-style stages,
//!   in the closed model (each VU starts its next iteration when the last one ended) or the
//!   open model (`.rate(n)`: iterations start on a schedule and latency is measured from the
//!   intended start, so a stalled server shows in the percentiles);
//! - the `Report` has HDR histograms and counters, a text summary, JSON and an HTML page, and
//!   `Threshold`s such as `p99<50ms` or `errors<1%` to fail a CI run.
//!
//! Add it beside fibra (`fibra-load = { git = "…" }`, or a path into a checkout). A scenario
//! against fibra's own HTTP hello server, run in the same process:
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
