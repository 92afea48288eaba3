//! Many processes at once, with exact counts.

mod common;

use common::{program, spawn_parked};
use fibra_process::{self as process, Inbox, Pid, Reason, Signal};
use fibra_testing::{Counted, WORKER_COUNTS};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn up_to_a_hundred_thousand_processes_parked_in_receive_are_all_killed() {
    // The full count once; fewer under the other worker counts, to keep the suite fast.
    for (workers, processes) in [(2, 100_000), (1, 30_000), (4, 30_000)] {
        let drops = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicUsize::new(0));
        let (counter, seen) = (drops.clone(), received.clone());
        let status = program(workers, move |inbox: Inbox<()>| {
            let main = inbox.pid();
            let pids: Vec<Pid<u8>> = (0..processes)
                .map(|_| spawn_parked(&main, &seen, Counted(counter.clone())))
                .collect();
            // Every one has run up to its receive.
            for _ in 0..processes {
                assert!(matches!(inbox.recv(), Signal::Msg(())));
            }
            for pid in &pids {
                process::exit(pid, Reason::Kill);
            }
            assert!(pids.iter().all(|pid| !process::is_alive(pid)));
            // Sends to killed processes are dropped.
            for pid in &pids {
                pid.send(1);
            }
        });
        assert_eq!(status, 0);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            processes,
            "under {workers} workers"
        );
        assert_eq!(
            received.load(Ordering::SeqCst),
            0,
            "under {workers} workers"
        );
    }
}

#[test]
fn a_ring_of_processes_passes_a_token_an_exact_number_of_hops() {
    const RING: usize = 1000;
    const LAPS: usize = 20;
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<usize>| {
            let main = inbox.pid();
            // Each member forwards the hop count to the next; the last closes onto main.
            let mut next = main.clone();
            for _ in 0..RING - 1 {
                let to = next.clone();
                next = process::spawn(move |inbox: Inbox<usize>| loop {
                    if let Signal::Msg(hops) = inbox.recv() {
                        to.send(hops + 1);
                    }
                });
            }
            let first = next;
            let mut hops = 0;
            for _ in 0..LAPS {
                first.send(hops);
                hops = inbox.recv().into_msg().unwrap();
            }
            assert_eq!(hops, LAPS * (RING - 1));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}
