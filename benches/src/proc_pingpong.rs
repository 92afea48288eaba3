//! `proc_pingpong`: round trips between two processes, 1 000 000 (100 000 with `--quick`); ns
//! per round trip.
//!
//! Variant `2w`: the main fibra process sends `(from, i)` to an echoing process and waits for
//! `i` back, on a 2-worker runtime, vs the same two Erlang/OTP processes on two schedulers
//! (system `erlang`). Every round trip checks the value it gets back.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Reason, Signal};

use crate::erlang::compare_with_erlang;
use crate::proc_spawn::WORKERS;
use crate::report::{Case, Metric};
use crate::rounds::Contender;
use crate::runtimes;

const JOB: &str = "proc_pingpong";
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let trips: u64 = if quick { 100_000 } else { 1_000_000 };
    let case = Case {
        bench: JOB,
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let contenders = vec![Contender::new("fibra", || {
        fibra(trips).as_nanos() as f64 / trips as f64
    })];
    compare_with_erlang(&case, ROUNDS, contenders, &[trips]);
}

fn fibra(trips: u64) -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let status = runtimes::fibra(WORKERS).block_on(move || {
        process::run(move |inbox: Inbox<u64>| {
            let echo = process::spawn(|inbox: Inbox<(Pid<u64>, u64)>| loop {
                if let Signal::Msg((from, i)) = inbox.recv() {
                    from.send(i);
                }
            });
            let me = inbox.pid();
            let start = Instant::now();
            for i in 0..trips {
                echo.send((me.clone(), i));
                assert_eq!(inbox.recv().into_msg(), Some(i));
            }
            *out.lock().unwrap() = start.elapsed();
            process::exit(&echo, Reason::Kill);
        })
    });
    assert_eq!(status, 0);
    let elapsed = *elapsed.lock().unwrap();
    elapsed
}
