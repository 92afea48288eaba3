//! `fibra-compare`: fibra and its peers on the same workloads, side by side in one process run.
//!
//! ```text
//! cargo run --release -p fibra-bench --bin fibra-compare -- <bench>... [--quick]
//! ```
//!
//! `--help` lists the benches (or `all`), from the one list in `fibra_bench::registry`. Rounds
//! alternate between the systems (fibra, peer, peer, fibra, …) and each system's value is the
//! median of its rounds. stdout carries one JSON object per line and nothing else: one line per
//! system and variant, then one ratio line per variant (fibra's value divided by each peer's).
//! Progress goes to stderr. `--quick` shrinks the workloads so that `all --quick` takes a few minutes.

use std::process::ExitCode;

use fibra_bench::args::{self, Command};
use fibra_bench::{
    child, diag_overhead, idle_conn_memory, load_http, parked_memory, proc_memory, runtimes,
    tcp_echo,
};

fn main() -> ExitCode {
    runtimes::init_may();
    if let Some(job) = child::requested() {
        if job.starts_with(load_http::JOB) {
            return load_http::run_child(&job);
        }
        if job.starts_with(proc_memory::JOB) {
            return proc_memory::run_child(&job);
        }
        if job.starts_with(idle_conn_memory::JOB) {
            return idle_conn_memory::run_child(&job);
        }
        if job.starts_with(diag_overhead::JOB) {
            return diag_overhead::run_child(&job);
        }
        if job.starts_with(tcp_echo::JOB) {
            return tcp_echo::run_child(&job);
        }
        return parked_memory::run_child(&job);
    }
    match args::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            eprintln!("{}", args::usage());
            ExitCode::SUCCESS
        }
        Ok(Command::Run { benches, quick }) => {
            for bench in benches {
                (bench.run)(quick);
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("fibra-compare: {message}\n{}", args::usage());
            ExitCode::from(2)
        }
    }
}
