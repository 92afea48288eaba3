//! `timeout`: a value the closure returns is kept even when the deadline passed first; a
//! closure the deadline unwinds yields `Elapsed`.

use fibra_runtime::{is_cancelled, sleep, timeout};
use fibra_testing::{on_each_worker_count, Counted};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_value_returned_after_the_deadline_without_a_cancellation_point_is_kept() {
    on_each_worker_count(|_| {
        let outcome = timeout(Duration::from_millis(1), || {
            // Busy until the deadline has cancelled the closure, which then reaches no
            // cancellation point: it finishes after its deadline.
            while !is_cancelled() {
                std::hint::spin_loop();
            }
            42
        });
        assert_eq!(outcome, Ok(42));
    });
}

#[test]
fn a_closure_the_deadline_unwinds_yields_elapsed_after_its_destructors() {
    on_each_worker_count(|_| {
        let dropped = AtomicUsize::new(0);
        let outcome = timeout(Duration::from_millis(1), || {
            let _guard = Counted(&dropped);
            sleep(HOUR);
            1
        });
        assert_eq!(outcome.unwrap_err().to_string(), "deadline has elapsed");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_quick_value_is_returned_and_the_caller_is_not_cancelled_afterwards() {
    on_each_worker_count(|_| {
        assert_eq!(timeout(HOUR, || "quick"), Ok("quick"));
        let late = timeout(Duration::from_millis(1), || {
            while !is_cancelled() {
                std::hint::spin_loop();
            }
        });
        assert_eq!(late, Ok(()));
        // The deadline belonged to the timeout's scope, not to the caller.
        assert!(!is_cancelled());
        sleep(Duration::from_millis(1));
    });
}
