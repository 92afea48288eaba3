//! The runtime from outside its fibers: spawning from plain threads, awaiting `JoinHandle`s
//! in async code, and joins that the shutdown cancels.

use fibra_runtime::{Handle, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn handle_spawn_from_a_plain_thread() {
    let runtime = Runtime::builder().workers(2).build().unwrap();
    let handle = runtime.handle();
    let value = runtime.block_on(|| {
        let thread = std::thread::spawn(move || {
            let fiber = handle.spawn(|| fibra_runtime::current_worker().is_some());
            fiber.join().unwrap()
        });
        while !thread.is_finished() {
            fibra_runtime::yield_now();
        }
        thread.join().unwrap()
    });
    assert!(value, "the fiber spawned from a thread ran on a worker");
}

#[test]
fn a_join_handle_is_awaited_by_futures_block_on() {
    Runtime::builder().workers(1).build().unwrap().block_on(|| {
        let fiber = fibra_runtime::spawn(|| 6 * 7);
        let thread = std::thread::spawn(move || futures::executor::block_on(fiber));
        while !thread.is_finished() {
            fibra_runtime::yield_now();
        }
        assert_eq!(thread.join().unwrap().unwrap(), 42);
    });
}

#[test]
fn handle_current_inside_and_outside() {
    assert!(Handle::try_current().is_none());
    Runtime::builder().workers(1).build().unwrap().block_on(|| {
        assert_eq!(Handle::current().workers(), 1);
    });
}

#[test]
fn shutdown_cancels_the_joins_of_unfinished_fibers() {
    let runtime = Runtime::builder().workers(2).build().unwrap();
    let handle = runtime.handle();
    let never = Arc::new(AtomicBool::new(false));
    let flag = never.clone();
    let stuck = handle.spawn(move || {
        while !flag.load(Ordering::SeqCst) {
            fibra_runtime::park();
        }
    });
    let waiter = std::thread::spawn(move || stuck.join());
    runtime.block_on(|| ());
    let error = waiter.join().unwrap().unwrap_err();
    assert!(error.is_cancelled(), "{error}");
    assert_eq!(error.to_string(), "fiber was cancelled");
    // A join that starts after the shutdown is cancelled at once too.
    let late = handle.spawn(|| 1);
    assert!(late.join().unwrap_err().is_cancelled());
}

#[test]
fn a_fibers_panic_reaches_its_joiner_and_the_main_fibers_reaches_the_caller() {
    Runtime::builder().workers(2).build().unwrap().block_on(|| {
        let error = fibra_runtime::spawn(|| panic!("in a fiber"))
            .join()
            .unwrap_err();
        assert_eq!(error.to_string(), "fiber panicked: in a fiber");
    });
    let outcome = std::panic::catch_unwind(|| {
        Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| panic!("in main"))
    });
    assert_eq!(
        outcome.unwrap_err().downcast_ref::<&str>(),
        Some(&"in main")
    );
}

#[test]
fn an_impossible_stack_size_fails_in_the_spawner() {
    Runtime::builder().workers(1).build().unwrap().block_on(|| {
        let error = fibra_runtime::Builder::new()
            .stack_size(usize::MAX)
            .spawn(|| ())
            .unwrap_err();
        assert!(error.to_string().contains("stack"), "{error}");
        let panic = std::panic::catch_unwind(|| {
            fibra_runtime::Builder::new()
                .stack_size(usize::MAX)
                .spawn_local(|| ())
                .map(drop)
                .unwrap_or_else(|e| panic!("spawner: {e}"));
        });
        assert!(panic.is_err());
    });
}

#[test]
#[should_panic(
    expected = "cannot start a fibra runtime on a thread that is already a fibra worker"
)]
fn a_runtime_inside_a_fiber_is_refused() {
    Runtime::builder().workers(1).build().unwrap().block_on(|| {
        Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| ());
    });
}
