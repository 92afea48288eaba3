//! `link_chain_kill`: a chain of 100 000 linked processes (with `--quick` too: the chain is the
//! workload) ended by one `exit(first, kill)`; ns per process ended.
//!
//! Variant `2w`: each fibra process starts the next with `fibra::process::spawn_link`, the last
//! reports itself to the main process, which monitors it; the time runs from
//! `process::exit(&first, Reason::Kill)` to the last's `Down` (every process before it has ended
//! by then, the kill having come down the links), on a 2-worker runtime, vs the same chain of
//! Erlang/OTP processes (`spawn_link`, `exit(First, kill)`, the last's `'DOWN'`) on two
//! schedulers (system `erlang`). Building the chain is not timed.
//!
//! Measured (alternated runs of two binaries on the shared 2-core machine, load averages
//! 9–14): with the whole cascade in one slice of the caller, 0.44×–0.76× erlang (medians of
//! four runs 0.61×; the monitor warned of a 51 ms slice of the main process). With the cascade
//! spread over the caller's slices (a reduction per process ended), 0.75×–0.93× (median
//! 0.86×), and no slice of the caller over the monitor's limit: the killed processes on the
//! caller's worker now unwind between its slices, inside the timed window, where before they
//! unwound after it. At a load average near 3, alternated twice: before 0.357× and 0.650×
//! (882 and 1705 ns per process), after 0.568× and 0.728× (1501 and 2214 ns).
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 2 211 and 2 187
//! ns per process ended, erlang 2 968 and 2 761 ns: 0.745× and 0.792× erlang. A profile of the
//! timed windows (`perf -e cpu-clock`, five rounds) put 63 % of the fibra threads' samples in
//! the killed processes' unwinding (the DWARF unwinder and personality routine, on both
//! workers: the other worker unwinds its share throughout, the caller's worker between the
//! cascade's slices), about 20 % in the cascade itself (`end`, cancelling each process's scope)
//! and 4 % in `madvise` giving stacks back. A build whose runtime kept every stack warm (no
//! `madvise` at all) measured the same (0.813× and 0.776× erlang, alternated with 0.812× and
//! 0.805×), so the stacks given back are not what costs. Under callgrind (same bench, five
//! rounds, 500 000 processes killed) each killed process's unwind, from its cancellation
//! point to the catch in its process, took about 46 000 instructions (`resume_unwind`
//! inclusive, 23.0 G), most of it in libgcc's `_Unwind_Resume` after each landing pad; the
//! whole cascade (`exit` inclusive, which also counts what ran in its yields) about 8 900
//! per process. Halving the time per process needs a cheaper unwind, not a cheaper cascade.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Reason, Signal};

use crate::erlang::compare_with_erlang;
use crate::proc_spawn::WORKERS;
use crate::report::{Case, Metric};
use crate::rounds::Contender;
use crate::runtimes;

const JOB: &str = "link_chain_kill";
/// Processes in the chain.
const CHAIN: u64 = 100_000;
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(_quick: bool) {
    let case = Case {
        bench: JOB,
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let contenders = vec![Contender::new("fibra", || {
        fibra().as_nanos() as f64 / CHAIN as f64
    })];
    compare_with_erlang(&case, ROUNDS, contenders, &[CHAIN]);
}

fn fibra() -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let status = runtimes::fibra(WORKERS).block_on(move || {
        process::run(move |inbox: Inbox<Pid<()>>| {
            let me = inbox.pid();
            let first = process::spawn(move |inbox: Inbox<()>| chain(CHAIN - 1, me, inbox));
            let last = inbox.recv().into_msg().expect("the last reports");
            let watch = process::monitor(&last);
            let start = Instant::now();
            process::exit(&first, Reason::Kill);
            let Signal::Down { mref, reason, .. } = inbox.recv() else {
                panic!("only the last's Down comes");
            };
            *out.lock().unwrap() = start.elapsed();
            assert_eq!(mref, watch);
            assert_eq!(reason, Reason::Killed);
        })
    });
    assert_eq!(status, 0);
    let elapsed = *elapsed.lock().unwrap();
    elapsed
}

/// A chain member with `after` members after it: starts the next linked (or, the last,
/// reports itself to `main`), then waits.
fn chain(after: u64, main: Pid<Pid<()>>, inbox: Inbox<()>) {
    if after == 0 {
        main.send(inbox.pid());
    } else {
        process::spawn_link(move |inbox: Inbox<()>| chain(after - 1, main, inbox));
    }
    loop {
        inbox.recv();
    }
}
