//! `proc_spawn`: 1 000 000 processes (100 000 with `--quick`) spawned until every one has
//! started and waits in a receive; ns per process.
//!
//! Variant `2w`: fibra processes (`fibra::process::spawn`, each telling the spawner it has
//! started, then receiving) on a 2-worker runtime vs ractor actors (`Actor::spawn`, each telling
//! the spawner through a tokio channel from `post_start`, then waiting for a message) on a
//! 2-worker tokio multi-thread runtime (system `ractor`) and Erlang/OTP processes doing the same
//! on two schedulers (system `erlang`, see [`crate::erlang`]). The time runs from the first
//! spawn to the last process's message; killing them afterwards is not timed.
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 7.20 and 8.20 µs
//! per process, ractor 12.8 and 12.1 µs, erlang 5.58 and 6.41 µs: 0.562× and 0.679× ractor,
//! 1.29× and 1.28× erlang.
//!
//! Where a process's time goes (2026-12-06, a probe spawning 100 000 to 1 000 000 parked processes
//! on this workload's runtime, load averages 3–10): 1.41–1.44 minor page faults and 0.12 system
//! calls per process (`strace -c -f`: guards go in 64 stacks at a time with one `process_madvise`,
//! a chunk of 16 384 stacks is one `mmap`); 5 900 instructions of user code per process (callgrind,
//! one worker), 2 078 of them in `malloc` for 11 allocations (the process record, two cancel
//! scopes, the fiber, its entry and join packet, its context, its process binding, and two list
//! buffers that grow). The faults are the cost: on this machine (a nested virtual machine) a first
//! touch of an anonymous page costs 3.4–3.8 µs (a C probe touching fresh pages: 3.4 µs each when
//! contiguous, 5.1 µs 1 MiB apart, where each also needs a page-table page; pre-faulting with
//! `MADV_POPULATE_WRITE` costs the same per page, a transparent huge page 13.6 µs per 4 KiB). A
//! parked process needs one page of its own, the top of its stack where its frames wait, and its
//! 1.6 KiB of records make the other 0.4 faults: about 4.9 µs of CPU per process, 2.5 µs of wall
//! time on two workers, before any of fibra's own work. The target, 0.1× erlang (about 0.5
//! µs), is below the cost of that one stack page alone (1.7 µs of wall time on two workers, 0.3×
//! erlang) with a stack per process; OTP pays for its processes' first pages too (their 2.9 KiB
//! heaps, see [`crate::proc_memory`]).
//!
//! A spawn charged one reduction for those microseconds, so the main process's slice of 4 000
//! spawns could outlast the monitor's 50 ms on a loaded machine (the stuck-fiber warnings of this
//! bench); a process spawn is now a cancellation point, a second reduction. Three alternated
//! `--quick` pairs of the binaries before and after (load averages 6.3–7.6): fibra 8.55, 9.53 and
//! 10.6 µs per process before, 8.32, 9.27 and 10.7 µs after (the same work); 1.87×, 1.81× and 1.63×
//! erlang before, 1.42×, 1.34× and 1.54× after (erlang 4.6–6.9 µs); 0.61×–0.63× ractor before,
//! 0.56×–0.61× after.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Reason, Signal};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::erlang::compare_with_ractor_and_erlang;
use crate::runtimes;

const JOB: &str = "proc_spawn";
/// Workers of the fibra runtime, schedulers of the Erlang VM.
pub const WORKERS: usize = 2;
const ROUNDS: usize = 3;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let processes: u64 = if quick { 100_000 } else { 1_000_000 };
    compare_with_ractor_and_erlang(
        JOB,
        ROUNDS,
        processes,
        || with_parked(processes as usize, || (), |()| ()).0,
        || ractor_parked(processes),
    );
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
            // Each `Pid` is dropped right after its kill, between runtime operations: dropped
            // all at once after the loop, a million of them (each freeing a dead process's
            // record) held the worker for over 100 ms.
            for pid in pids {
                process::exit(&pid, Reason::Kill);
            }
        });
        assert_eq!(status, 0);
        let result = result.lock().unwrap().take();
        result.expect("the main process ran")
    })
}

/// A ractor actor that tells its spawner it has started, then waits for a message.
struct Parked;

impl Actor for Parked {
    type Msg = ();
    type State = UnboundedSender<()>;
    type Arguments = UnboundedSender<()>;

    async fn pre_start(
        &self,
        _: ActorRef<()>,
        started: UnboundedSender<()>,
    ) -> Result<UnboundedSender<()>, ActorProcessingErr> {
        Ok(started)
    }

    async fn post_start(
        &self,
        _: ActorRef<()>,
        started: &mut UnboundedSender<()>,
    ) -> Result<(), ActorProcessingErr> {
        started.send(())?;
        Ok(())
    }
}

/// ractor: `processes` [`Parked`] actors spawned until each has started; the time from the first
/// spawn to the last report. Kills them afterwards.
async fn ractor_parked(processes: u64) -> Duration {
    let (started, mut reports) = unbounded_channel();
    let start = Instant::now();
    let mut actors = Vec::with_capacity(processes as usize);
    for _ in 0..processes {
        let (actor, _) = Actor::spawn(None, Parked, started.clone())
            .await
            .expect("spawn a ractor actor");
        actors.push(actor);
    }
    for _ in 0..processes {
        reports.recv().await.expect("every actor reports");
    }
    let elapsed = start.elapsed();
    for actor in &actors {
        actor.kill();
    }
    elapsed
}
