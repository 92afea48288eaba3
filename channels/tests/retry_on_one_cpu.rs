//! A blocked operation that retries with nothing else ready on its worker yields the worker's
//! thread too. On a machine with more runnable threads than cores, the peer's worker may wait
//! for the very CPU the retrying worker holds: with both workers confined to one CPU, a
//! ping-pong between fibers on the two workers used to spend every retry of every receive
//! before the peer ran, and parked on every trip.

use fibra_channels::bounded;
use fibra_runtime::{current_worker, scope, Handle, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};

const TRIPS: u64 = 200;

/// Confines the calling thread, and the threads it spawns from now on, to the first CPU it
/// may run on. False where the affinity cannot be read or set.
fn confine_to_one_cpu() -> bool {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: an all-zero `cpu_set_t` is a valid, empty set (it is a plain bit array).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live `cpu_set_t` of `size` bytes, which the call only writes into.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return false;
    }
    // SAFETY: `CPU_ISSET` reads the set's bit for each index below `CPU_SETSIZE`.
    let Some(cpu) =
        (0..libc::CPU_SETSIZE as usize).find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
    else {
        return false;
    };
    // SAFETY: `CPU_ZERO` and `CPU_SET` write only into `set`, `cpu` is below `CPU_SETSIZE`, and
    // `sched_setaffinity` reads `size` bytes of it.
    unsafe {
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size, &set) == 0
    }
}

#[test]
fn retries_alone_on_a_worker_let_a_peer_worker_on_the_same_cpu_run() {
    let parks = std::thread::spawn(|| {
        if !confine_to_one_cpu() {
            eprintln!("skipped: this thread's CPU affinity cannot be set");
            return None;
        }
        let runtime = Runtime::builder().workers(2).build().unwrap();
        Some(runtime.block_on(|| {
            let (ping_tx, ping_rx) = bounded::<u64>(1);
            let (pong_tx, pong_rx) = bounded::<u64>(1);
            let placed = AtomicBool::new(false);
            scope(|s| {
                s.spawn(|| {
                    placed.store(current_worker() == Some(1), Ordering::Release);
                    for v in ping_rx.iter() {
                        pong_tx.send(v + 1).unwrap();
                    }
                });
                // Worker 0 stays busy here, so worker 1 starts the peer.
                while !placed.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                let parks = || -> u64 {
                    Handle::current()
                        .metrics()
                        .workers
                        .iter()
                        .map(|w| w.parks)
                        .sum()
                };
                let before = parks();
                for i in 0..TRIPS {
                    ping_tx.send(i).unwrap();
                    assert_eq!(pong_rx.recv(), Some(i + 1));
                }
                let parked = parks() - before;
                ping_tx.close();
                parked
            })
        }))
    })
    .join()
    .unwrap();
    if let Some(parks) = parks {
        // Without the thread's yield both fibers parked on every trip (2 × TRIPS).
        assert!(parks <= TRIPS / 10, "{parks} parks in {TRIPS} trips");
    }
}
