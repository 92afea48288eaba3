//! Blocking channel operations are cancellation points: a cancelled fiber unwinds out of a
//! parked `recv`/`send`, leaving the channel consistent.

use fibra_channels::{bounded, TryRecvError};
use fibra_runtime::{scope_with, ScopeOptions};
use std::time::Duration;

fn soon() -> ScopeOptions {
    ScopeOptions::new().timeout(Duration::from_millis(10))
}

#[test]
fn a_parked_recv_unwinds_on_cancellation_and_leaves_no_registration() {
    fibra_runtime::run(|| {
        let (tx, rx) = bounded::<u32>(0);
        let outcome = scope_with(soon(), |_| rx.recv());
        assert!(outcome.is_err(), "the scope was cancelled");
        // Nothing of the cancelled receive is left: a send only completes with a new receiver.
        assert!(tx.try_send(1).is_err());
        fibra_runtime::scope(|s| {
            s.spawn(|| tx.send(2).unwrap());
            assert_eq!(rx.recv(), Some(2));
        });
    });
}

#[test]
fn a_parked_send_unwinds_without_delivering() {
    fibra_runtime::run(|| {
        let (tx, rx) = bounded::<u32>(0);
        let outcome = scope_with(soon(), |_| tx.send(1));
        assert!(outcome.is_err());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert!(
            tx.try_send(3).is_err(),
            "no receiver left registered either"
        );
    });
}

#[test]
fn a_parked_child_is_cancelled_with_its_scope() {
    fibra_runtime::run(|| {
        let (_tx, rx) = bounded::<u32>(1);
        let outcome = scope_with(soon(), |s| {
            let child = s.spawn(|| rx.recv());
            child.join()
        });
        assert!(outcome.is_err());
        assert!(!rx.is_closed());
    });
}

/// A destructor that sends while its fiber unwinds from a cancellation: not a second
/// cancellation point (that would abort), so the send happens.
#[test]
fn channel_operations_in_destructors_during_cancellation_complete() {
    struct SendOnDrop<'a>(&'a fibra_channels::Writer<u32>);
    impl Drop for SendOnDrop<'_> {
        fn drop(&mut self) {
            self.0.send(9).unwrap();
        }
    }
    fibra_runtime::run(|| {
        let (tx, rx) = bounded::<u32>(1);
        let (_block_tx, block_rx) = bounded::<u32>(0);
        let outcome = scope_with(soon(), |_| {
            let _guard = SendOnDrop(&tx);
            block_rx.recv()
        });
        assert!(outcome.is_err());
        assert_eq!(rx.try_recv(), Ok(9));
    });
}

#[test]
fn an_uncancelled_scope_is_unaffected() {
    fibra_runtime::run(|| {
        let (tx, rx) = bounded::<u32>(0);
        let got = scope_with(ScopeOptions::new().timeout(Duration::from_secs(60)), |s| {
            s.spawn(|| tx.send(5).unwrap());
            rx.recv()
        });
        assert_eq!(got.ok(), Some(Some(5)));
    });
}

/// Receives cancelled at varying moments while a thread keeps sending: every value the sender
/// delivered is received exactly once — a receive cancelled while a value was handed to it
/// returns the value.
#[test]
fn cancelled_receives_lose_no_delivered_value() {
    const N: u64 = 5000;
    let (tx, rx) = bounded::<u64>(0);
    let sender = std::thread::spawn(move || {
        for v in 0..N {
            tx.send(v).unwrap();
        }
    });
    let got = std::sync::Mutex::new(Vec::new());
    fibra_runtime::run(|| {
        let mut round = 0u64;
        // Until the sender is done (its writer dropped) and everything is received.
        while !(rx.is_closed() && rx.is_empty()) {
            round += 1;
            let options = ScopeOptions::new().timeout(Duration::from_micros(round % 40));
            // One receive per round: it returns its value (recorded at once: recording is not
            // a cancellation point), or is cancelled (before anything was handed to it). The
            // scope's own result is not used: a cancellation that arrives after the body
            // returned still makes it `Err`.
            let _ = scope_with(options, |_| {
                if let Some(v) = rx.recv() {
                    got.lock().unwrap().push(v);
                }
            });
        }
    });
    let mut got = got.into_inner().unwrap();
    sender.join().unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..N).collect::<Vec<_>>(), "every value exactly once");
}
