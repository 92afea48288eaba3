//! # Testing with fibra
//!
//! A test builds a runtime, runs the code under test in it, and asserts on what the code
//! produced. Three habits keep such tests honest and fast:
//!
//! - **Run under several worker counts.** A bug in how fibers share data often shows only when
//!   they run in parallel, and a bug in who wakes whom often only on one worker. Build the
//!   runtime with [`Runtime::builder().workers(n)`](crate::RuntimeBuilder::workers) for 1, 2
//!   and 4 workers.
//! - **Assert outcomes, never timing.** A test machine may be slow or loaded; check exact
//!   counts, orders and states. Where two outcomes can race, make the test accept exactly
//!   those two.
//! - **Bound every wait.** A hung test is worse than a failed one: give waits that might never
//!   end a [`timeout`](crate::timeout) and assert that it did not elapse, so a hang fails
//!   quickly with a message.
//!
//! ```
//! use fibra::chan;
//! use std::time::Duration;
//!
//! /// Runs `f` in a fresh runtime with `workers` workers.
//! fn on<T: Send + 'static>(workers: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
//!     fibra::Runtime::builder().workers(workers).build().unwrap().block_on(f)
//! }
//!
//! // The code under test: a pipeline of three stages over channels.
//! fn pipeline(items: u64) -> Vec<u64> {
//!     let (raw_tx, raw_rx) = chan::bounded(2);
//!     let (out_tx, out_rx) = chan::bounded(2);
//!     fibra::spawn(move || (1..=items).for_each(|n| raw_tx.send(n).unwrap()));
//!     fibra::spawn(move || raw_rx.iter().for_each(|n| out_tx.send(n * 10).unwrap()));
//!     out_rx.iter().collect()
//! }
//!
//! // In a test crate this is a `#[test] fn`.
//! for workers in [1, 2, 4] {
//!     let out = on(workers, || {
//!         fibra::timeout(Duration::from_secs(10), || pipeline(100)).expect("pipeline hung")
//!     });
//!     // One producer and one stage: order is kept, and nothing is lost or doubled.
//!     assert_eq!(out, (1..=100).map(|n| n * 10).collect::<Vec<_>>(), "{workers} workers");
//! }
//! ```
//!
//! ## `#[fibra::test]`
//!
//! For the common case, [`#[fibra::test]`](crate::test) writes that harness for you: the test's
//! body runs as the main fiber of a runtime of its own (`workers = N` picks the worker count,
//! `flavor = "current_thread"` runs it on one worker as tokio's flavor does), and a test that outlasts its `timeout` (60 s unless given) is cancelled and fails with a
//! message, instead of hanging the test run. [`#[fibra::main]`](crate::main) does the same
//! for a program's `main`.
//!
//! rustdoc compiles the `#[fibra::test]` examples on this page but does not run them (it runs
//! no `#[test]` function inside a doctest); in a test crate, `cargo test` runs them.
//!
//! ```
//! #[fibra::test(workers = 2, timeout = "10s")]
//! fn pipeline_keeps_order() {
//!     let (tx, rx) = fibra::chan::bounded(2);
//!     fibra::spawn(move || (1..=100u64).for_each(|n| tx.send(n).unwrap()));
//!     assert_eq!(rx.iter().sum::<u64>(), 5050);
//! }
//! ```
//!
//! Further tips:
//!
//! - [`fibra::run`](crate::run) picks the worker count from `FIBRA_WORKERS` or the machine;
//!   tests that care say it with the builder instead.
//! - A panic in the code under test reaches the test: [`run`](crate::run) and
//!   [`Runtime::block_on`](crate::Runtime::block_on) re-raise the main fiber's panic, and
//!   [`JoinHandle::join`](crate::JoinHandle::join) returns a fiber's panic as a
//!   [`JoinError`](crate::JoinError).
//! - To test that something waits, check what it is waiting on rather than how long it took:
//!   [`Runtime::holds`](crate::Runtime::holds) lists every pending timer, blocking job and
//!   future, and a channel or a [`sync`](crate::sync) primitive can be probed with its `try_`
//!   form.
//! - Keep tests on loopback addresses (`127.0.0.1:0`, letting the system pick the port).
