//! `#[fibra::test]` and `#[fibra::main]` as users write them.

use fibra_testing::{in_child, run_child};
use std::time::Duration;

#[fibra::test(workers = 2)]
fn a_test_body_runs_as_a_fiber_on_the_asked_worker_count() {
    assert!(fibra::wait::in_fiber());
    assert_eq!(fibra::Handle::current().workers(), 2);
}

#[fibra::test(flavor = "current_thread")]
fn the_current_thread_flavor_runs_one_worker() {
    assert_eq!(fibra::Handle::current().workers(), 1);
}

#[fibra::test(flavor = "multi_thread", workers = 3)]
fn the_multi_thread_flavor_runs_the_asked_worker_count() {
    assert_eq!(fibra::Handle::current().workers(), 3);
}

mod multi_thread_by_default {
    #[fibra::main(flavor = "multi_thread")]
    pub(super) fn main() -> usize {
        fibra::Handle::current().workers()
    }
}

#[test]
fn the_multi_thread_flavor_runs_the_default_worker_count_unless_told() {
    let default = fibra::run(|| fibra::Handle::current().workers());
    assert_eq!(multi_thread_by_default::main(), default);
}

#[fibra::test]
fn a_test_may_return_a_result() -> Result<(), String> {
    let value = fibra::spawn(|| 6 * 7).join().map_err(|e| e.to_string())?;
    assert_eq!(value, 42);
    Ok(())
}

#[fibra::test]
fn a_test_may_return_a_boxed_error() -> Result<(), Box<dyn std::error::Error>> {
    let answer: u32 = "42".parse()?;
    assert_eq!(answer, 42);
    Ok(())
}

#[fibra::test]
fn the_bodys_inner_attributes_stay_inner() {
    #![allow(unused_variables)]
    let unused = 1;
}

#[fibra::test(timeout = "50ms")]
#[should_panic(expected = "fibers the test detached outlasted its timeout of 50ms")]
fn a_fiber_detached_past_the_timeout_is_cancelled_and_fails_the_test() {
    fibra::detach(|| fibra::sleep(Duration::from_secs(3600)));
}

mod returns_its_value {
    #[fibra::main(workers = 1)]
    pub(super) fn main() -> usize {
        assert!(fibra::wait::in_fiber());
        fibra::Handle::current().workers()
    }
}

#[test]
fn main_runs_its_body_in_a_runtime_and_returns_its_value() {
    assert_eq!(returns_its_value::main(), 1);
}

mod returns_an_opaque_type {
    #[fibra::main(workers = 1)]
    pub(super) fn main() -> impl Iterator<Item = u32> {
        let answer = fibra::spawn(|| 6 * 7).join().unwrap();
        std::iter::repeat_n(answer, 2)
    }
}

mod infers_its_body_from_its_return_type {
    #[fibra::main(workers = 1)]
    pub(super) fn main() -> Vec<usize> {
        (1..4).collect()
    }
}

#[test]
fn main_may_return_an_opaque_type_and_its_body_infers_from_its_return_type() {
    assert_eq!(returns_an_opaque_type::main().collect::<Vec<_>>(), [42, 42]);
    assert_eq!(infers_its_body_from_its_return_type::main(), [1, 2, 3]);
}

#[fibra::test]
fn a_test_may_return_an_opaque_type() -> impl std::process::Termination {
    "42".parse::<u32>().map(|answer| assert_eq!(answer, 42))
}

#[fibra::test(timeout = "50ms")]
#[should_panic(expected = "outlasted its timeout of 50ms and was cancelled")]
fn a_test_parked_past_its_timeout_is_cancelled_and_fails() {
    fibra::sleep(Duration::from_secs(3600));
}

#[test]
fn a_test_that_cannot_be_cancelled_ends_its_process_with_a_message() {
    const NAME: &str = "a_test_that_cannot_be_cancelled_ends_its_process_with_a_message";
    if in_child(NAME) {
        // The body blocks its thread, so the scope's cancellation cannot reach it; the
        // watchdog ends the process after the grace period.
        fibra::__private::test(Some(1), Duration::from_millis(10), || loop {
            std::thread::sleep(Duration::from_secs(1));
        });
        return;
    }
    let output = run_child(NAME, &[]);
    assert_eq!(output.status.code(), Some(101), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("could not be cancelled"), "{stderr}");
}

#[test]
fn a_timed_out_test_prints_a_dump_of_its_fibers() {
    const NAME: &str = "a_timed_out_test_prints_a_dump_of_its_fibers";
    if in_child(NAME) {
        let outcome = std::panic::catch_unwind(|| {
            fibra::__private::test(Some(1), Duration::from_millis(50), || {
                fibra::sleep(Duration::from_secs(3600));
            })
        });
        assert!(outcome.is_err(), "the test failed");
        return;
    }
    let sleep_line = line!() - 6;
    let output = run_child(NAME, &[]);
    fibra_testing::assert_passed(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("outlasted its timeout of 50ms; cancelling it"),
        "{stderr}"
    );
    assert!(stderr.contains("fibra dump: 1 fibers"), "{stderr}");
    assert!(stderr.contains("\"main\" [parked on sleep"), "{stderr}");
    let line = format!("macros/tests/attributes.rs:{sleep_line}:");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("waits for sleep") && l.contains(&line)),
        "{stderr}"
    );
}

#[fibra::test(workers = 2)]
// A `Deadlocked` payload, not a string: `expected` cannot name it.
#[should_panic]
fn a_deadlock_in_a_test_panics() {
    let lock = fibra::sync::Mutex::new(());
    let _held = lock.lock();
    drop(lock.lock());
}

const GLOBAL_DEADLOCK: &str = "a_global_deadlock_in_a_test_body_run_in_a_child";

/// Run in a child only (see below): the body waits on a channel nobody can send on.
#[fibra::test(timeout = "30s")]
fn a_global_deadlock_in_a_test_body_run_in_a_child() {
    if !in_child(GLOBAL_DEADLOCK) {
        return;
    }
    let (writer, reader) = fibra::chan::bounded::<u32>(1);
    let _nobody_sends = writer;
    let _never = reader.recv();
}

/// Every fiber of a test asleep with nothing to wake one is reported and fails the test with
/// the deadlock's panic, not at its timeout (before, the harness's hold for its own timeout
/// and its watchdog's timed wait each kept the check silent until the timeout). In a child
/// process: another test's threads could still wake a fiber, for all the check can tell.
#[test]
fn a_global_deadlock_in_a_test_fails_it_with_the_deadlock_not_the_timeout() {
    let output = run_child(GLOBAL_DEADLOCK, &[]);
    let stderr = fibra_testing::assert_all_asleep_reported(&output);
    assert!(
        stderr.contains("\"main\" [parked on channel recv, "),
        "{stderr}"
    );
    assert!(!stderr.contains("outlasted its timeout"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("1 failed"), "{stdout}");
}
