//! The Erlang/OTP peer (system `erlang`) of the process benches: `erlang/fibra_peer.erl`,
//! compiled with `erlc` once per bench, runs each round in a fresh `erl` with two schedulers
//! (the fibra side's two workers) and prints the round's value, measured inside the VM with
//! `erlang:monotonic_time/1`, so `erl`'s start-up is not counted. Without `erl` and `erlc`
//! (`apt-get install erlang-base`, or `bash benches/install-peers.sh`) the bench prints a skip
//! line and compares the other systems.

use std::future::Future;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::proc_spawn::WORKERS;
use crate::report::{Case, Metric};
use crate::rounds::{compare, Contender};
use crate::runtimes;

/// The peer module's source.
const SOURCE: &str = include_str!("erlang/fibra_peer.erl");
/// Enough processes for the largest workload (`erl` allows 262 144 by default).
const MAX_PROCESSES: &str = "2000000";

/// Runs `case` for `contenders` and, when Erlang/OTP is installed, for the `erlang` peer running
/// the peer module's `case.bench` with `args`: the round loop of every process bench.
pub fn compare_with_erlang(
    case: &Case,
    rounds: usize,
    contenders: Vec<Contender<'_>>,
    args: &[u64],
) {
    let erlang = Erlang::start(case.bench);
    let mut contenders = contenders;
    if let Some(erlang) = &erlang {
        contenders.push(Contender::new("erlang", move || {
            erlang.round(case.bench, args)
        }));
    }
    compare(case, rounds, &mut contenders);
}

/// The 2-worker case `bench` of `ops` operations, in ns per operation: `fibra` and `ractor` (a
/// future run on a fresh 2-worker tokio runtime) each return the time they took, and the
/// `erlang` peer runs its `bench` with `ops`.
pub fn compare_with_ractor_and_erlang<R>(
    bench: &'static str,
    rounds: usize,
    ops: u64,
    fibra: impl Fn() -> Duration,
    ractor: impl Fn() -> R,
) where
    R: Future<Output = Duration> + Send + 'static,
{
    let case = Case {
        bench,
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let per_op = |elapsed: Duration| elapsed.as_nanos() as f64 / ops as f64;
    let contenders = vec![
        Contender::new("fibra", || per_op(fibra())),
        Contender::new("ractor", || {
            let runtime = runtimes::tokio_multi(WORKERS);
            per_op(runtimes::tokio_on_worker(&runtime, ractor()))
        }),
    ];
    compare_with_erlang(&case, rounds, contenders, &[ops]);
}

/// The compiled peer module, in a directory of its own (removed on drop).
#[derive(Debug)]
pub struct Erlang {
    dir: PathBuf,
}

impl Erlang {
    /// Compiles the peer module for `bench`, or prints a skip line and returns `None` when
    /// Erlang/OTP is not installed.
    pub fn start(bench: &str) -> Option<Erlang> {
        let dir = std::env::temp_dir().join(format!("fibra-compare-erlang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the Erlang peer");
        let source = dir.join("fibra_peer.erl");
        std::fs::write(&source, SOURCE).expect("write the Erlang peer's source");
        let compiled = Command::new("erlc")
            .arg("-o")
            .arg(&dir)
            .arg(&source)
            .stdout(Stdio::null())
            .status();
        let erlang = Erlang { dir };
        match compiled {
            Ok(status) if status.success() => Some(erlang),
            Ok(status) => panic!("erlc failed on the Erlang peer: {status}"),
            Err(_) => {
                eprintln!(
                    "{bench}: skipping erlang: not installed (bash benches/install-peers.sh)"
                );
                None
            }
        }
    }

    /// Runs one round of `bench` with `args` in a fresh `erl` and returns the value it printed.
    pub fn round(&self, bench: &str, args: &[u64]) -> f64 {
        let output = Command::new("erl")
            .args(["+S", "2:2", "+P", MAX_PROCESSES, "-noshell", "-pa"])
            .arg(&self.dir)
            .args(["-run", "fibra_peer", "main", bench])
            .args(args.iter().map(u64::to_string))
            .stderr(Stdio::inherit())
            .output()
            .expect("run erl");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "erl failed on {bench}: {printed}");
        printed
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("erl printed `{printed}` for {bench}, not a number"))
    }
}

impl Drop for Erlang {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
