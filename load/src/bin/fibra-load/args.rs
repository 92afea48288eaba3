//! The command line, in clap's derive form.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use fibra_load::{Request, Shard, Stages, Threshold, Url};

fn duration(text: &str) -> Result<Duration, String> {
    fibra_load::parse_duration(text).map_err(|e| e.to_string())
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        d if d.is_zero() => Err(format!("invalid duration `{text}`: must be more than zero")),
        d => Ok(d),
    }
}

fn rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| format!("invalid rate `{text}`: expected a positive number per second"))
}

fn header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("invalid header `{text}`: expected \"Name: value\""))?;
    let (name, value) = (name.trim(), value.trim());
    Request::check_header(name, value).map_err(|e| e.to_string())?;
    Ok((name.to_string(), value.to_string()))
}

fn method(text: &str) -> Result<String, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(text.to_ascii_uppercase())
    } else {
        Err(format!("invalid method `{text}`"))
    }
}

/// fibra-load: an HTTP load generator in which every virtual user is a fiber.
///
/// Closed model by default (-c VUs, each sends its next request when the previous one
/// completed); open model with --rate (starts on a fixed schedule, latency measured from the
/// intended start). Exit status: 0, 99 when a --threshold failed, 1 when no request succeeded,
/// 2 for bad input.
#[derive(Debug, Parser)]
#[command(name = "fibra-load", version, args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Start an embedded fibra HTTP server on 127.0.0.1 and load it (5 s, 50 VUs by default).
    Demo(DemoArgs),
    /// Merge the --json reports of shards into one report.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The shard reports to merge.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    /// Fail (exit 99) unless the merged report holds it (as for a run; repeatable).
    #[arg(long = "threshold",
          value_parser = |s: &str| s.parse::<Threshold>().map_err(|e| e.to_string()))]
    pub thresholds: Vec<Threshold>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The URL to load (http://host[:port]/path).
    #[arg(value_parser = |s: &str| s.parse::<Url>().map_err(|e| e.to_string()))]
    pub url: Option<Url>,
    /// The HTTP method.
    #[arg(short = 'm', long, default_value = "GET", value_parser = method)]
    pub method: String,
    /// A request header, "Name: value" (repeatable). A Host, User-Agent or Accept replaces
    /// the default one; Connection (see --no-keepalive), Content-Length and Transfer-Encoding
    /// are written by fibra-load and refused here.
    #[arg(short = 'H', long = "header", value_parser = header)]
    pub headers: Vec<(String, String)>,
    /// The request body.
    #[arg(short = 'b', long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// A file whose content is the request body.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// A file with one request per line: METHOD URL [BODY-FILE]; taken round-robin.
    #[arg(long, conflicts_with = "url")]
    pub urls_file: Option<PathBuf>,
    /// Take the --urls-file requests at random instead of round-robin.
    #[arg(long, requires = "urls_file")]
    pub urls_random: bool,
    /// https: also trust the CA certificates in this PEM file.
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// https: accept any server certificate (self-signed test servers).
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Virtual users (closed model), or the most the open model's pool grows to [default: 50;
    /// in the closed model with --stages, as many as the stages reach].
    #[arg(short = 'c', long = "vus", value_parser = clap::value_parser!(u64).range(1..))]
    pub vus: Option<u64>,
    /// How long to run, e.g. 10s, 1m (default 10s; 5s for demo).
    #[arg(short = 'd', long, value_parser = duration, conflicts_with = "stages")]
    pub duration: Option<Duration>,
    /// Send exactly this many requests (at most this many when -d ends the run first).
    #[arg(short = 'n', long = "requests", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    /// Every request's timeout (connect, send, receive).
    #[arg(long, default_value = "5s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// Close the connection after every request.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Open model: start this many requests per second, whatever the completions.
    #[arg(long, value_parser = rate)]
    pub rate: Option<f64>,
    /// Ramp VUs (closed) or the rate (open) linearly: "10s:100,30s:100,10s:0".
    #[arg(long, value_parser = |s: &str| s.parse::<Stages>().map_err(|e| e.to_string()))]
    pub stages: Option<Stages>,
    /// Fail the run (exit 99) unless it holds: p50|p90|p95|p99|p99.9|max|mean<DURATION,
    /// errors<N% (requests without a response or with status >= 400), rps>N (repeatable).
    #[arg(long = "threshold",
          value_parser = |s: &str| s.parse::<Threshold>().map_err(|e| e.to_string()))]
    pub thresholds: Vec<Threshold>,
    /// Run shard I of N (I from 0): VUs, rate, -n and the stage targets are divided exactly.
    #[arg(long, value_parser = |s: &str| s.parse::<Shard>().map_err(|e| e.to_string()))]
    pub shard: Option<Shard>,
    /// Worker threads of the fibra runtime.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub workers: Option<u64>,
    /// No live display.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Write the report as JSON (with HDR histograms, mergeable).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report.
    #[arg(long)]
    pub html: Option<PathBuf>,
}
