//! A million processes at once, with exact counts, under 1, 2 and 4 workers. A debug build
//! needs minutes and gigabytes more for it, so it runs in release builds only (`.ci/run` runs
//! it so); `stress.rs` runs the same workload with up to a hundred thousand processes in every
//! build.

mod common;

use common::{runtime, spawn_parked};
use fibra_process::{self as process, Inbox, Pid, Reason, Signal};
use fibra_runtime::FiberState;
use fibra_sync::WaitGroup;
use fibra_testing::{Counted, WORKER_COUNTS};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const PROCESSES: usize = 1_000_000;

/// Held by a process; its drop (when the process's fiber unwinds) counts the process out.
struct Unwound(Arc<WaitGroup>);

impl Drop for Unwound {
    fn drop(&mut self) {
        self.0.done();
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes and gigabytes in a debug build; run in release by .ci/run"
)]
fn a_million_processes_parked_in_receive_are_all_killed() {
    for workers in WORKER_COUNTS {
        let drops = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicUsize::new(0));
        let (counter, seen) = (drops.clone(), received.clone());
        let runtime = runtime(workers);
        let handle = runtime.handle();
        let status = runtime.block_on(move || {
            process::run(move |inbox: Inbox<()>| {
                let main = inbox.pid();
                let unwinding = Arc::new(WaitGroup::new());
                unwinding.add(PROCESSES);
                let before = handle.metrics();
                let pids: Vec<Pid<u8>> = (0..PROCESSES)
                    .map(|_| {
                        let held = (Counted(counter.clone()), Unwound(unwinding.clone()));
                        spawn_parked(&main, &seen, held)
                    })
                    .collect();
                for _ in 0..PROCESSES {
                    assert!(matches!(inbox.recv(), Signal::Msg(())));
                }
                let spawned = handle.metrics();
                assert_eq!(spawned.spawned, before.spawned + PROCESSES as u64);
                assert_eq!(spawned.live, before.live + PROCESSES as u64);
                assert_eq!(spawned.finished, before.finished);
                // Each has sent its report and is on its way into the receive: wait until every
                // one is parked there. Besides them, only the fiber `run` waits in is parked (an
                // extra parked fiber fails the test here rather than making it wait forever).
                while parked() <= PROCESSES {
                    fibra_runtime::yield_now();
                }
                assert_eq!(parked(), PROCESSES + 1);
                for pid in &pids {
                    process::exit(pid, Reason::Kill);
                }
                assert!(pids.iter().all(|pid| !process::is_alive(pid)));
                // Sends to killed processes are dropped.
                for pid in &pids {
                    pid.send(1);
                }
                // Every killed process unwinds at its receive, before the program ends.
                unwinding.wait();
                assert_eq!(counter.load(Ordering::SeqCst), PROCESSES);
                // Past its destructors, a fiber has little left to do before it finishes.
                while handle.metrics().live != before.live {
                    fibra_runtime::yield_now();
                }
                assert_eq!(
                    handle.metrics().finished,
                    before.finished + PROCESSES as u64
                );
            })
        });
        assert_eq!(status, 0, "under {workers} workers");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            PROCESSES,
            "under {workers} workers"
        );
        assert_eq!(
            received.load(Ordering::SeqCst),
            0,
            "under {workers} workers"
        );
    }
}

/// The runtime's parked fibers, as its dump sees them.
fn parked() -> usize {
    fibra_runtime::dump()
        .fibers
        .iter()
        .filter(|fiber| fiber.state == FiberState::Parked)
        .count()
}
