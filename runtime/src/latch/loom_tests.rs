//! Model-checks the latch: every unpark is seen, and every suspension is dispatched exactly
//! once, whatever the interleaving with two concurrent wakers.

use super::*;
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

#[test]
fn loom_latch_never_loses_or_doubles_a_wake() {
    model(|| {
        let latch = Arc::new(Latch::new());
        let signalled = Arc::new(AtomicUsize::new(0));
        let dispatched = Arc::new(AtomicUsize::new(0));
        let fiber = thread::current();
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let (latch, signalled, dispatched, fiber) = (
                    latch.clone(),
                    signalled.clone(),
                    dispatched.clone(),
                    fiber.clone(),
                );
                thread::spawn(move || {
                    signalled.fetch_add(1, Ordering::SeqCst);
                    if latch.unpark() == Unpark::Dispatch {
                        // Enqueueing the fiber on its worker, modelled as unparking it.
                        dispatched.fetch_add(1, Ordering::SeqCst);
                        fiber.unpark();
                    }
                })
            })
            .collect();

        // The fiber: waits, parking, until both wakers have signalled.
        let mut resumed = 0;
        while signalled.load(Ordering::SeqCst) < 2 {
            if latch.prepare_park() == Park::Suspend {
                // Suspended: only a dispatch brings it back. A lost wake-up leaves it parked
                // for good, which loom reports as a deadlock.
                while dispatched.load(Ordering::SeqCst) == resumed {
                    thread::park();
                }
                resumed += 1;
                latch.resumed();
            }
        }
        for waker in wakers {
            waker.join().unwrap();
        }
        assert_eq!(
            dispatched.load(Ordering::SeqCst),
            resumed,
            "one dispatch per suspension"
        );
    });
}

#[test]
fn loom_unpark_racing_with_park_is_consumed_or_dispatched() {
    model(|| {
        let latch = Arc::new(Latch::new());
        let waker = {
            let latch = latch.clone();
            thread::spawn(move || latch.unpark())
        };
        let parked = latch.prepare_park();
        let woke = waker.join().unwrap();
        match parked {
            // The token came first and was consumed; the waker had nothing to dispatch.
            Park::Consumed => assert_eq!(woke, Unpark::Done),
            // The fiber suspended first; the waker must bring it back.
            Park::Suspend => {
                assert_eq!(woke, Unpark::Dispatch);
                latch.resumed();
            }
        }
        // No token is left over.
        assert_eq!(latch.prepare_park(), Park::Suspend);
    });
}

/// Explores every interleaving with at most 3 preemptions (loom's `LOOM_MAX_PREEMPTIONS`
/// overrides it); unbounded exploration of these models takes hours.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(f);
}
