//! `proc_memory`: resident memory per parked process, 100 000 of them, each system in a child
//! process of its own (see [`crate::child`]); bytes per process.
//!
//! Variant `2w`: fibra processes parked in a receive on a 2-worker runtime (the workload of
//! [`proc_spawn`]) vs Erlang/OTP processes on two schedulers (system
//! `erlang`). The value is the growth of `VmRSS` from before the first spawn to when every
//! process has reported that it waits, divided by the count. An Erlang process's 2–3 KiB is a
//! garbage-collected heap that grows on demand; a fibra process's is its stack's committed
//! pages and its mailbox.
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 5 688 bytes per
//! process in both (5.55 KiB), erlang 2 935 and 2 940 bytes: 1.94× erlang.

use std::process::ExitCode;

use crate::erlang::compare_with_erlang;
use crate::report::{Case, Metric};
use crate::rounds::Contender;
use crate::rss::resident_bytes;
use crate::{child, proc_spawn};

/// The first word of this bench's child jobs.
pub const JOB: &str = "proc_memory";
const PROCESSES: u64 = 100_000;
const ROUNDS: usize = 3;

/// Runs the bench and prints its JSON lines.
pub fn run(_quick: bool) {
    let case = Case {
        bench: JOB,
        variant: "2w",
        metric: Metric::BytesPerTask,
    };
    let contenders = vec![Contender::new("fibra", || {
        let out = child::run(&format!("{JOB} {PROCESSES}"));
        out.parse()
            .unwrap_or_else(|_| panic!("child printed `{out}`, not a number"))
    })];
    compare_with_erlang(&case, ROUNDS, contenders, &[PROCESSES]);
}

/// The child side: runs the job `proc_memory <processes>` and prints bytes per process.
pub fn run_child(job: &str) -> ExitCode {
    let Some(processes) = job
        .strip_prefix(JOB)
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    else {
        eprintln!("fibra-compare: bad child job `{job}`");
        return ExitCode::from(2);
    };
    let (_, grown) = proc_spawn::with_parked(processes, resident_bytes, |baseline| {
        resident_bytes().saturating_sub(baseline)
    });
    println!("{:.1}", grown as f64 / processes as f64);
    ExitCode::SUCCESS
}
