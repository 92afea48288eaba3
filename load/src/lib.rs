//! fibra-load: a load-test harness in which every virtual user is a fiber.
#![forbid(unsafe_code)]

mod connect;
mod html;
pub mod http;
mod net;
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
pub use parse::{parse_duration, ParseError, Shard, Stage, Stages};
pub use report::{Model, Report};
pub use run::{Load, Progress};
pub use scenario::{Scenario, StepError};
pub use stats::{CheckCount, Latency, Second, Stats, StepStats};
pub use threshold::{Threshold, ThresholdResult};
pub use tls::{tls_config, Verify};
pub use vu::Vu;
