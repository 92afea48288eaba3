//! `proc_spawn`: 1 000 000 processes (100 000 with `--quick`) spawned until every one has
//! started and waits in a receive; ns per process.
//!
//! Variant `2w`: fibra processes (`fibra::process::spawn`, each telling the spawner it has
//! started, then receiving) on a 2-worker runtime vs Erlang/OTP processes doing the same on two
//! schedulers (system `erlang`, see [`crate::erlang`]). The time runs from the first spawn to
//! the last process's message; killing them afterwards is not timed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Reason, Signal};

use crate::erlang::compare_with_erlang;
use crate::report::{Case, Metric};
use crate::rounds::Contender;
use crate::runtimes;

const JOB: &str = "proc_spawn";
/// Workers of the fibra runtime, schedulers of the Erlang VM.
pub const WORKERS: usize = 2;
const ROUNDS: usize = 3;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let processes: u64 = if quick { 100_000 } else { 1_000_000 };
    let case = Case {
        bench: JOB,
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let per_process = |elapsed: Duration| elapsed.as_nanos() as f64 / processes as f64;
    let contenders = vec![Contender::new("fibra", || {
        per_process(with_parked(processes as usize, || (), |()| ()).0)
    })];
    compare_with_erlang(&case, ROUNDS, contenders, &[processes]);
}

/// In a fresh 2-worker runtime's main process: calls `before`, spawns `processes` processes
/// that each report having started and then wait in a receive, waits for every report, calls
/// `parked` with what `before` returned while they wait, then kills them. Returns the time from
/// the first spawn to the last report, and what `parked` returned.
pub fn with_parked<B, T: Send + 'static>(
    processes: usize,
    before: impl FnOnce() -> B + Send + 'static,
    parked: impl FnOnce(B) -> T + Send + 'static,
) -> (Duration, T) {
    runtimes::fibra(WORKERS).block_on(move || {
        let result = Arc::new(Mutex::new(None));
        let slot = result.clone();
        let status = process::run(move |inbox: Inbox<()>| {
            let me = inbox.pid();
            let baseline = before();
            let start = Instant::now();
            let pids: Vec<Pid<()>> = (0..processes)
                .map(|_| {
                    let me = me.clone();
                    process::spawn(move |inbox: Inbox<()>| {
                        me.send(());
                        inbox.recv();
                    })
                })
                .collect();
            for _ in 0..processes {
                assert!(matches!(inbox.recv(), Signal::Msg(())));
            }
            let elapsed = start.elapsed();
            *slot.lock().unwrap() = Some((elapsed, parked(baseline)));
            for pid in &pids {
                process::exit(pid, Reason::Kill);
            }
        });
        assert_eq!(status, 0);
        let result = result.lock().unwrap().take();
        result.expect("the main process ran")
    })
}
