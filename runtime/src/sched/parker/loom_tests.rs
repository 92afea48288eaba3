//! Model-checks the worker parker: an unpark is never lost, whether it comes before the park,
//! while the owner registers, or while it sleeps, and concurrent unparks coalesce into tokens
//! the owner consumes without ever sleeping through a signal.

use super::*;
use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;

#[test]
fn loom_parker_never_loses_an_unpark() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(|| {
        let parker = Arc::new(Parker::new());
        parker.bind_current();
        let signalled = Arc::new(AtomicUsize::new(0));
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let (parker, signalled) = (parker.clone(), signalled.clone());
                thread::spawn(move || {
                    signalled.fetch_add(1, Ordering::SeqCst);
                    parker.unpark();
                })
            })
            .collect();
        // The owner: a signal it has not seen always leaves a token, so this cannot sleep
        // for good (loom reports a lost wake-up as a deadlock).
        while signalled.load(Ordering::SeqCst) < 2 {
            parker.park();
        }
        for waker in wakers {
            waker.join().unwrap();
        }
    });
}
