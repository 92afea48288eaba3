//! Command-line parsing: `<bench>... [--quick]`, where `all` stands for every bench.

/// The usage text, printed on stderr for `--help` and after a bad argument.
pub const USAGE: &str = "usage: fibra-compare <bench>... [--quick]\n\
    benches: spawn_join yield_pingpong parked_memory skynet timers block_on_ready\n\
    blocking_roundtrip interop_roundtrip mutex_contended mutex_uncontended semaphore\n\
    cancel_storm parallel_map chan_pingpong chan_throughput select2 proc_ring tcp_echo accept_storm\n\
    fs_read load_http all";

/// One benchmark the binary can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// Trivial spawn + join, in batches.
    SpawnJoin,
    /// Park/unpark ping-pong between two fibers on one worker.
    YieldPingpong,
    /// RSS per parked fiber, each system in its own child process.
    ParkedMemory,
    /// The 10-ary skynet tree.
    Skynet,
    /// Many tasks sleeping at once: wall and CPU time.
    Timers,
    /// `block_on` of a future that is ready at once.
    BlockOnReady,
    /// A round trip through the blocking pool.
    BlockingRoundtrip,
    /// A tokio task spawning a fiber and awaiting it.
    InteropRoundtrip,
    /// 1 000 tasks locking one mutex, fair and unfair.
    MutexContended,
    /// Lock/unlock of a mutex nobody else touches.
    MutexUncontended,
    /// 1 000 tasks sharing a 10-permit semaphore.
    Semaphore,
    /// 100 000 parked children cancelled at once.
    CancelStorm,
    /// A trivial map over 1 000 000 items, in parallel.
    ParallelMap,
    /// Round trips between two tasks over capacity-1 channels.
    ChanPingpong,
    /// `u64`s through a `bounded(1024)` channel, 1→1 and 4→4.
    ChanThroughput,
    /// One consumer selecting over two fed channels.
    Select2,
    /// A token around a ring of 1 000 processes.
    ProcRing,
    /// 64-byte round trips over loopback TCP, 1 and 100 connections.
    TcpEcho,
    /// Connect + accept + close over loopback TCP.
    AcceptStorm,
    /// A 64 MiB file read in 8 KiB calls.
    FsRead,
    /// HTTP load generators (fibra-load, oha, wrk, hey) against the hello server.
    LoadHttp,
}

impl Bench {
    /// Every bench, in the order `all` runs them.
    const ALL: [Bench; 21] = [
        Bench::SpawnJoin,
        Bench::YieldPingpong,
        Bench::ParkedMemory,
        Bench::Skynet,
        Bench::Timers,
        Bench::BlockOnReady,
        Bench::BlockingRoundtrip,
        Bench::InteropRoundtrip,
        Bench::MutexContended,
        Bench::MutexUncontended,
        Bench::Semaphore,
        Bench::CancelStorm,
        Bench::ParallelMap,
        Bench::ChanPingpong,
        Bench::ChanThroughput,
        Bench::Select2,
        Bench::ProcRing,
        Bench::TcpEcho,
        Bench::AcceptStorm,
        Bench::FsRead,
        Bench::LoadHttp,
    ];

    /// The bench's name on the command line and in the JSON output.
    fn from_name(name: &str) -> Option<Bench> {
        match name {
            "spawn_join" => Some(Bench::SpawnJoin),
            "yield_pingpong" => Some(Bench::YieldPingpong),
            "parked_memory" => Some(Bench::ParkedMemory),
            "skynet" => Some(Bench::Skynet),
            "timers" => Some(Bench::Timers),
            "block_on_ready" => Some(Bench::BlockOnReady),
            "blocking_roundtrip" => Some(Bench::BlockingRoundtrip),
            "interop_roundtrip" => Some(Bench::InteropRoundtrip),
            "mutex_contended" => Some(Bench::MutexContended),
            "mutex_uncontended" => Some(Bench::MutexUncontended),
            "semaphore" => Some(Bench::Semaphore),
            "cancel_storm" => Some(Bench::CancelStorm),
            "parallel_map" => Some(Bench::ParallelMap),
            "chan_pingpong" => Some(Bench::ChanPingpong),
            "chan_throughput" => Some(Bench::ChanThroughput),
            "select2" => Some(Bench::Select2),
            "proc_ring" => Some(Bench::ProcRing),
            "tcp_echo" => Some(Bench::TcpEcho),
            "accept_storm" => Some(Bench::AcceptStorm),
            "fs_read" => Some(Bench::FsRead),
            "load_http" => Some(Bench::LoadHttp),
            _ => None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage text.
    Help,
    /// Run these benches, each once, in this order.
    Run {
        /// The benches, without duplicates.
        benches: Vec<Bench>,
        /// Shrink every workload.
        quick: bool,
    },
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut benches = Vec::new();
    let mut quick = false;
    for arg in args {
        let named: &[Bench] = match arg.as_str() {
            "--quick" => {
                quick = true;
                continue;
            }
            "-h" | "--help" => return Ok(Command::Help),
            "all" => &Bench::ALL,
            name => &[Bench::from_name(name).ok_or_else(|| format!("unknown bench `{name}`"))?],
        };
        for bench in named {
            if !benches.contains(bench) {
                benches.push(*bench);
            }
        }
    }
    if benches.is_empty() {
        return Err("no bench named".to_string());
    }
    Ok(Command::Run { benches, quick })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn all_expands_and_duplicates_collapse() {
        let parsed = parse_str(&["skynet", "all", "--quick"]).unwrap();
        // `all` in its own order, but for the bench named before it.
        let expected = std::iter::once(Bench::Skynet)
            .chain(Bench::ALL.into_iter().filter(|&b| b != Bench::Skynet))
            .collect();
        assert_eq!(
            parsed,
            Command::Run {
                benches: expected,
                quick: true
            }
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse_str(&["nope"]).unwrap_err().contains("nope"));
        assert!(parse_str(&["--quick"]).is_err());
        assert_eq!(parse_str(&["--help"]).unwrap(), Command::Help);
    }
}
