//! fibra-load: a load-test harness in which every virtual user (VU) is a fiber running plain
//! blocking code.
//!
//! A [`Scenario`] is a list of named steps; [`Load`] runs it with some VUs in the closed model
//! (each VU starts its next iteration when the previous one completed) or the open model
//! ([`Load::rate`]: iterations start on a schedule and latency is measured from the intended
//! start, so coordinated omission is corrected), for a duration, a number of iterations or
//! k6-style [`Stages`]. Each [`Vu`] has an HTTP/1.1 client with a keep-alive connection per
//! endpoint (over `fibra::net`, TLS through rustls for `https://`), think time and checks. The
//! [`Report`] holds HDR histograms and counters that merge exactly across shards, and renders as
//! a text [`summary`](Report::summary), JSON ([`Report::to_json`]) and a self-contained HTML page
//! ([`Report::html`]). The `fibra-load` binary is the command line over the same library.
//!
//! ```
//! use fibra_load::{Load, Scenario, Threshold};
//!
//! fibra::run(|| {
//!     let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
//!     let url = format!("http://{}/", server.local_addr());
//!     let scenario = Scenario::new("hello").step("get", move |vu| {
//!         let response = vu.get(&url)?;
//!         vu.check("status is 200", response.status == 200);
//!         Ok(())
//!     });
//!     let mut report = Load::new(scenario).vus(4).iterations(100).run();
//!     assert_eq!(report.stats.requests, 100);
//!     assert_eq!(server.requests(), 100);
//!     let p99: Threshold = "p99<5s".parse().unwrap();
//!     assert!(report.check(&[p99]));
//!     println!("{}", report.summary());
//! });
//! ```
#![forbid(unsafe_code)]

mod closed;
mod connect;
mod html;
pub mod http;
mod monitor;
mod net;
mod open;
mod parse;
mod record;
mod report;
mod run;
mod scenario;
mod stats;
mod summary;
mod threshold;
mod tls;
mod vu;

pub use http::{ErrorKind, Request, Response, Url};
pub use monitor::Progress;
pub use parse::{parse_duration, ParseError, Shard, Stage, Stages};
pub use report::{Model, Report};
pub use run::Load;
pub use scenario::{Scenario, StepError};
pub use stats::{CheckCount, Latency, Second, Stats, StepStats};
pub use threshold::{Threshold, ThresholdResult};
pub use tls::{tls_config, Verify};
pub use vu::Vu;
