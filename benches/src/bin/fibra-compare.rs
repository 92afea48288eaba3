//! `fibra-compare`: fibra and its peers on the same workloads, side by side in one process run.
//!
//! ```text
//! cargo run --release -p fibra-bench --bin fibra-compare -- <bench>... [--quick]
//! ```
//!
//! Benches: `spawn_join`, `yield_pingpong`, `parked_memory`, `skynet`, `timers`, `block_on_ready`,
//! `blocking_roundtrip`, `interop_roundtrip`, `mutex_contended`, `mutex_uncontended`,
//! `semaphore`, `cancel_storm`, `parallel_map`, `chan_pingpong`, `chan_throughput`, `select2`,
//! `proc_ring`, `tcp_echo`, `accept_storm`, `fs_read`, `load_http`, or `all`. Rounds alternate
//! between the systems (fibra, peer, peer, fibra, …) and each system's value is the median of its
//! rounds. stdout carries one JSON object per line and nothing else: one line per system and
//! variant, then one ratio line per variant (fibra's value divided by each peer's). Progress goes
//! to stderr. `--quick` shrinks the workloads so that `all --quick` takes a few minutes.

use std::process::ExitCode;

use fibra_bench::args::{self, Bench, Command};
use fibra_bench::{
    accept_storm, block_on_ready, blocking_roundtrip, cancel_storm, chan_pingpong, chan_throughput,
    child, fs_read, interop_roundtrip, load_http, mutex_contended, mutex_uncontended, parallel_map,
    parked_memory, proc_ring, runtimes, select2, semaphore, skynet, spawn_join, tcp_echo, timers,
    yield_pingpong,
};

fn main() -> ExitCode {
    runtimes::init_may();
    if let Some(job) = child::requested() {
        if job.starts_with(load_http::JOB) {
            return load_http::run_child(&job);
        }
        return parked_memory::run_child(&job);
    }
    match args::parse(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            eprintln!("{}", args::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Run { benches, quick }) => {
            for bench in benches {
                match bench {
                    Bench::SpawnJoin => spawn_join::run(quick),
                    Bench::YieldPingpong => yield_pingpong::run(quick),
                    Bench::ParkedMemory => parked_memory::run(quick),
                    Bench::Skynet => skynet::run(quick),
                    Bench::Timers => timers::run(quick),
                    Bench::BlockOnReady => block_on_ready::run(quick),
                    Bench::BlockingRoundtrip => blocking_roundtrip::run(quick),
                    Bench::InteropRoundtrip => interop_roundtrip::run(quick),
                    Bench::MutexContended => mutex_contended::run(quick),
                    Bench::MutexUncontended => mutex_uncontended::run(quick),
                    Bench::Semaphore => semaphore::run(quick),
                    Bench::CancelStorm => cancel_storm::run(quick),
                    Bench::ParallelMap => parallel_map::run(quick),
                    Bench::ChanPingpong => chan_pingpong::run(quick),
                    Bench::ChanThroughput => chan_throughput::run(quick),
                    Bench::Select2 => select2::run(quick),
                    Bench::ProcRing => proc_ring::run(quick),
                    Bench::TcpEcho => tcp_echo::run(quick),
                    Bench::AcceptStorm => accept_storm::run(quick),
                    Bench::FsRead => fs_read::run(quick),
                    Bench::LoadHttp => load_http::run(quick),
                }
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("fibra-compare: {message}\n{}", args::USAGE);
            ExitCode::from(2)
        }
    }
}
