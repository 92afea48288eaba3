//! Draining detached fibers: a drain parks until the last detached fiber has finished, shows
//! in a dump as a join waited at its caller's line, and a drain that times out says so.

// Written against the facade, which is not built under loom.
#![cfg(not(loom))]

use fibra::wait::WaitKind;
use fibra::FiberState;
use fibra_testing::WORKER_COUNTS;
use std::time::Duration;

fn runtime(workers: usize) -> fibra::Runtime {
    fibra::Runtime::builder().workers(workers).build().unwrap()
}

/// Detaches `count` fibers that each wait until `release`'s sender is dropped.
fn detach_waiting(count: usize) -> fibra::chan::Sender<()> {
    let (release, released) = fibra::chan::bounded::<()>(0);
    for _ in 0..count {
        let released = released.clone();
        fibra::detach(move || {
            let _ = released.recv();
        });
    }
    release
}

/// Whether fiber `id` is parked in a join waited at `line` of this file.
fn parked_in_drain(id: u64, line: u32) -> bool {
    fibra::dump().fiber(id).is_some_and(|fiber| {
        fiber.state == FiberState::Parked
            && fiber.wait.as_ref().is_some_and(|wait| {
                wait.kind == WaitKind::Join
                    && wait.line == line
                    && wait.site.contains("runtime/tests/drain.rs")
            })
    })
}

#[test]
fn a_drain_parks_until_the_last_detached_fiber_has_finished() {
    for workers in WORKER_COUNTS {
        runtime(workers).block_on(|| {
            let release = detach_waiting(3);
            let (line_tx, line_rx) = fibra::chan::bounded(1);
            let drainer = fibra::spawn(move || {
                line_tx.send(line!() + 1).unwrap();
                fibra::Handle::current().drain_detached();
            });
            let line = line_rx.recv().unwrap();
            let id = drainer.fiber().id().as_u64();
            while !parked_in_drain(id, line) {
                fibra::yield_now();
            }
            drop(release);
            drainer.join().unwrap();
            assert!(fibra::Handle::current().drain_detached_timeout(Duration::ZERO));
        });
    }
}

#[test]
fn a_drain_that_times_out_returns_false_and_a_later_drain_returns_true() {
    for workers in WORKER_COUNTS {
        runtime(workers).block_on(|| {
            let handle = fibra::Handle::current();
            let release = detach_waiting(2);
            assert!(!handle.drain_detached_timeout(Duration::from_millis(1)));
            assert!(!handle.drain_detached_timeout(Duration::ZERO));
            drop(release);
            handle.drain_detached();
            assert!(handle.drain_detached_timeout(Duration::ZERO));
        });
    }
}

/// A shutdown abandons a detached fiber that outlives its timeout, and that fiber never
/// finishes: a drain waited for it for ever, whether it began before the shutdown (here in a
/// fiber of another runtime) or after it.
#[test]
fn drains_return_once_the_runtime_has_shut_down() {
    fibra_testing::bounded(Duration::from_secs(60), || {
        let abandoning = fibra::Runtime::builder()
            .workers(1)
            .shutdown_timeout(Duration::from_millis(1))
            .build()
            .unwrap()
            .into_background()
            .unwrap();
        let handle = abandoning.handle();
        let (started_tx, started) = std::sync::mpsc::channel();
        handle
            .spawn(move || {
                fibra::detach(move || {
                    started_tx.send(()).unwrap();
                    fibra::shield(|| fibra::sleep(Duration::from_secs(3600)));
                })
            })
            .join()
            .unwrap();
        started.recv().unwrap();
        let other = runtime(1).into_background().unwrap();
        let drainer = {
            let handle = handle.clone();
            other.handle().spawn(move || handle.drain_detached())
        };
        let id = drainer.fiber().id().as_u64();
        while other.handle().dump().fiber(id).map(|fiber| fiber.state) != Some(FiberState::Parked) {
            std::thread::yield_now();
        }
        drop(abandoning);
        drainer.join().unwrap();
        handle.drain_detached();
        assert!(handle.drain_detached_timeout(Duration::from_secs(3600)));
    });
}
