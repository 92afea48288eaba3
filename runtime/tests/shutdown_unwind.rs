//! At shutdown, once detached fibers have been drained, every fiber still running is cancelled
//! and unwinds, so its destructors run exactly once, and every fiber not started yet is
//! dropped without running.
#![cfg(not(loom))]

use fibra_runtime::{park, scope, sleep, spawn, spawn_local, JoinHandle};
use fibra_testing::{on, WORKER_COUNTS};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Parks for good: only a cancellation ends it.
fn park_forever() -> ! {
    loop {
        park();
    }
}

/// Fibers blocked in each kind of wait when the main fiber returns, and how many `Counted`
/// values they hold between them.
fn blocked_fibers(drops: &Arc<AtomicUsize>) -> (Vec<JoinHandle<()>>, usize) {
    let (ready_tx, ready_rx) = fibra::chan::bounded::<()>(16);
    let (_never_tx, never_rx) = fibra::chan::bounded::<u32>(1);
    let mutex = Arc::new(fibra::sync::Mutex::new(()));
    let counted = || Counted(drops.clone());
    let mut fibers = Vec::new();

    // Holds the mutex (and the channel's writer, so it never closes) while parked.
    let (held, ready, guard_of) = (counted(), ready_tx.clone(), mutex.clone());
    let writer = _never_tx;
    fibers.push(spawn(move || {
        let _held = held;
        let _writer = writer;
        let _guard = guard_of.lock();
        ready.send(()).unwrap();
        park_forever();
    }));
    ready_rx.recv().unwrap();

    // Blocked on the mutex the first one holds.
    let (held, ready, waiting_on) = (counted(), ready_tx.clone(), mutex.clone());
    fibers.push(spawn(move || {
        let _held = held;
        ready.send(()).unwrap();
        let _guard = waiting_on.lock();
        park_forever();
    }));

    // Blocked on a channel nobody writes to.
    let (held, ready) = (counted(), ready_tx.clone());
    fibers.push(spawn(move || {
        let _held = held;
        ready.send(()).unwrap();
        let _ = never_rx.recv();
        park_forever();
    }));

    // Blocked in a long sleep.
    let (held, ready) = (counted(), ready_tx.clone());
    fibers.push(spawn(move || {
        let _held = held;
        ready.send(()).unwrap();
        sleep(Duration::from_secs(3600));
        park_forever();
    }));

    // Blocked joining a fiber that never finishes.
    let (held, inner_held, ready) = (counted(), counted(), ready_tx.clone());
    fibers.push(spawn(move || {
        let _held = held;
        let never = spawn(move || {
            let _held = inner_held;
            park_forever();
        });
        ready.send(()).unwrap();
        let _ = never.join();
        park_forever();
    }));

    // A scope whose body and child are both parked.
    let (held, child_held, ready) = (counted(), counted(), ready_tx.clone());
    fibers.push(spawn(move || {
        let _held = held;
        scope(|s| {
            s.spawn(move || {
                let _held = child_held;
                park_forever();
            });
            ready.send(()).unwrap();
            park_forever();
        })
    }));

    // Blocked on a future that never completes.
    let (held, ready) = (counted(), ready_tx);
    fibers.push(spawn(move || {
        let _held = held;
        ready.send(()).unwrap();
        fibra_runtime::block_on(std::future::pending::<()>());
    }));

    // Each has reached (or is about to reach) its wait; one that has not parked yet parks at
    // a cancellation point, which unwinds it just the same.
    for _ in 1..fibers.len() {
        ready_rx.recv().unwrap();
    }
    // Two more values: the joined fiber's and the scope child's.
    let values = fibers.len() + 2;
    (fibers, values)
}

#[test]
fn every_blocked_fiber_unwinds_at_shutdown_and_drops_its_values_once() {
    for workers in WORKER_COUNTS {
        let drops = Arc::new(AtomicUsize::new(0));
        let (fibers, values) = on(workers, || blocked_fibers(&drops));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            values,
            "{workers} workers: every value dropped once"
        );
        for fiber in fibers {
            let error = fiber.join().unwrap_err();
            assert!(error.is_cancelled(), "{workers} workers: {error}");
        }
        assert_eq!(drops.load(Ordering::SeqCst), values, "{workers} workers");
    }
}

#[test]
fn a_fiber_not_started_at_shutdown_is_dropped_without_running() {
    for workers in WORKER_COUNTS {
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicBool::new(false));
        let fiber = on(workers, || {
            let (held, ran) = (Counted(drops.clone()), ran.clone());
            // Pinned to this worker, which runs the main fiber until shutdown: it cannot have
            // started when the main fiber returns.
            spawn_local(move || {
                let _held = held;
                ran.store(true, Ordering::SeqCst);
            })
        });
        assert!(!ran.load(Ordering::SeqCst), "{workers} workers");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{workers} workers");
        assert!(
            fiber.join().unwrap_err().is_cancelled(),
            "{workers} workers"
        );
    }
}

#[test]
fn a_fiber_cancelled_by_shutdown_sees_why() {
    for workers in WORKER_COUNTS {
        let seen = Arc::new(std::sync::Mutex::new(String::new()));
        let record = seen.clone();
        let fiber = on(workers, move || {
            let (ready_tx, ready_rx) = fibra::chan::bounded::<()>(1);
            let fiber = spawn(move || {
                let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ready_tx.send(()).unwrap();
                    park_forever();
                }))
                .unwrap_err();
                assert!(fibra_runtime::is_cancellation(&*caught));
                *record.lock().unwrap() = match fibra_runtime::check_cancel() {
                    Ok(()) => "not cancelled".to_owned(),
                    Err(cancelled) => cancelled.to_string(),
                };
                std::panic::resume_unwind(caught);
            });
            ready_rx.recv().unwrap();
            fiber
        });
        assert_eq!(
            *seen.lock().unwrap(),
            "cancelled: the runtime is shutting down",
            "{workers} workers"
        );
        assert!(
            fiber.join().unwrap_err().is_cancelled(),
            "{workers} workers"
        );
    }
}

#[test]
fn a_fiber_that_waited_shielded_unwinds_at_its_next_cancellation_point() {
    for workers in WORKER_COUNTS {
        let drops = Arc::new(AtomicUsize::new(0));
        let fiber = on(workers, || {
            let (ready_tx, ready_rx) = fibra::chan::bounded::<()>(1);
            let held = Counted(drops.clone());
            let fiber = spawn(move || {
                let _held = held;
                let parked = spawn(park_forever);
                ready_tx.send(()).unwrap();
                // Not cancelled while shielded; the child it waits for is, and ends.
                let joined = fibra_runtime::shield(|| parked.join());
                assert!(joined.unwrap_err().is_cancelled());
                // Entering and leaving a scope looks at the cancellation state again.
                scope(|_| {});
                park_forever();
            });
            ready_rx.recv().unwrap();
            fiber
        });
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{workers} workers");
        assert!(
            fiber.join().unwrap_err().is_cancelled(),
            "{workers} workers"
        );
    }
}

/// A runtime used only through its handle never ran worker 0's loop, and its drop skipped the
/// unwind, which needs every worker's loop: the fibers its other workers had started were
/// abandoned, their values never dropped.
#[test]
fn a_runtime_used_only_through_its_handle_unwinds_its_fibers_when_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    let held = Counted(drops.clone());
    let fiber = fibra_testing::bounded(Duration::from_secs(60), move || {
        let runtime = fibra_testing::runtime(2);
        let (started_tx, started) = std::sync::mpsc::channel();
        let fiber = runtime.handle().spawn(move || {
            let _held = held;
            started_tx.send(()).unwrap();
            park_forever()
        });
        started.recv().unwrap();
        drop(runtime);
        fiber
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(fiber.join().unwrap_err().is_cancelled());
}
