//! fibra-load: a load-test harness in which every virtual user is a fiber.
#![forbid(unsafe_code)]

pub mod http;
mod parse;

pub use http::{ErrorKind, Request, Response, Url};
pub use parse::{parse_duration, ParseError, Shard, Stage, Stages};
