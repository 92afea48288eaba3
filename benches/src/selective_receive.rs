//! `selective_receive`: with 1 000 messages queued, a receive that matches only the newest (it
//! skips the 999 before it), 1 000 times (100 with `--quick`); ns per skipped message.
//!
//! Variant `2w`: a fibra process on a 2-worker runtime (`Inbox::receive` with a predicate) vs an
//! Erlang/OTP process (`receive N -> ok end`, system `erlang`). Each round sends the 1 000
//! messages to itself, times the one selective receive, then takes the 999 left in order; only
//! the selective receives are timed.
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 10.8 and 6.94 ns
//! per skipped message, erlang 6.12 and 6.31 ns: 1.77× and 1.10× erlang. fibra's rounds were
//! 6.8–15.0 ns in the first run (three of five at 10.8 ns), erlang's 6.1–14.1 ns.
//!
//! The scan then walked the queue by index, which costs a wrap-around computation per skipped
//! message; it now walks the queue's two halves as slices. Four alternated runs of the
//! binaries before and after (load average about 5; fibra's median of five rounds): 6.96,
//! 6.83, 6.76 and 6.90 ns per skipped message before, 5.81, 5.77, 6.79 and 5.84 ns after;
//! erlang measured 6.0–6.2 ns in alternated runs at that load: about 0.95× erlang after,
//! 1.13× before. Two more alternated pairs at load averages 7–10 were noise-bound (fibra 9.70
//! and 7.04 ns before, 8.05 and 12.06 ns after; erlang 6.2–10.3 ns).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Signal};

use crate::erlang::compare_with_erlang;
use crate::proc_spawn::WORKERS;
use crate::report::{Case, Metric};
use crate::rounds::Contender;
use crate::runtimes;

const JOB: &str = "selective_receive";
/// Messages queued for each selective receive.
const QUEUED: u64 = 1000;
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let receives: u64 = if quick { 100 } else { 1000 };
    let case = Case {
        bench: JOB,
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let skipped = (receives * (QUEUED - 1)) as f64;
    let contenders = vec![Contender::new("fibra", || {
        fibra(receives).as_nanos() as f64 / skipped
    })];
    compare_with_erlang(&case, ROUNDS, contenders, &[QUEUED, receives]);
}

fn fibra(receives: u64) -> Duration {
    let spent = Arc::new(Mutex::new(Duration::ZERO));
    let out = spent.clone();
    let status = runtimes::fibra(WORKERS).block_on(move || {
        process::run(move |inbox: Inbox<u64>| {
            let me = inbox.pid();
            let mut spent = Duration::ZERO;
            for _ in 0..receives {
                for i in 1..=QUEUED {
                    me.send(i);
                }
                let start = Instant::now();
                let newest = inbox.receive(|s| matches!(s, Signal::Msg(QUEUED)));
                spent += start.elapsed();
                assert_eq!(newest.into_msg(), Some(QUEUED));
                for i in 1..QUEUED {
                    assert_eq!(inbox.recv().into_msg(), Some(i));
                }
            }
            *out.lock().unwrap() = spent;
        })
    });
    assert_eq!(status, 0);
    let elapsed = *spent.lock().unwrap();
    elapsed
}
