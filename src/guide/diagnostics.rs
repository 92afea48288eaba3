//! # Finding out why a program hangs
//!
//! A fibra program that stops making progress usually has fibers waiting for each other, or
//! for something outside the runtime that never comes. Three tools show which:
//!
//! - [`dump`](crate::dump) (or [`Handle::dump`](crate::Handle::dump) from any thread) lists
//!   every live fiber — its state, its worker, where it was spawned, what it waits for, on
//!   which line, and which fiber must let go first — then the workers and the open holds. Its
//!   `Display` reads like Go's goroutine dump; it is `serde::Serialize` for tools. With the
//!   environment variable `FIBRA_DUMP_SIGNAL=SIGQUIT` (or `SIGUSR1`) set when the runtime is
//!   built, `kill -QUIT <pid>` prints the dump to stderr and the program goes on.
//! - [`Runtime::holds`](crate::Runtime::holds) (also on
//!   [`BackgroundRuntime`](crate::BackgroundRuntime::holds) and
//!   [`Handle`](crate::Handle::holds)) lists the pending external waits — timers, blocking
//!   jobs, futures, cancel tokens — each with the line where it began.
//! - [`Deadlock`](crate::Deadlock) is what the runtime does about fibers that wait for each
//!   other in a cycle (through `fibra::sync` locks or joins), or when every fiber is asleep:
//!   report it (the default), unwind the fibers of the cycle with a
//!   [`Deadlocked`](crate::Deadlocked) panic, or nothing. Set it with
//!   [`RuntimeBuilder::on_deadlock`](crate::RuntimeBuilder::on_deadlock) or `FIBRA_DEADLOCK`.
//!
//! A fiber that runs too long without suspending — a long computation, or a thread-blocking
//! call such as `std::thread::sleep` — is reported too: see
//! [`RuntimeBuilder::stuck_threshold`](crate::RuntimeBuilder::stuck_threshold).
//!
//! ## Who waits for what
//!
//! A fiber parked on a [`sync::Mutex`](crate::sync::Mutex) shows up in the dump with the
//! kind of its wait and the fiber holding the lock:
//!
//! ```
//! use fibra::sync::Mutex;
//! use std::sync::Arc;
//!
//! fibra::run(|| {
//!     let lock = Arc::new(Mutex::new(()));
//!     let held = lock.lock();
//!     let waiter = {
//!         let lock = lock.clone();
//!         fibra::spawn(move || drop(lock.lock()))
//!     };
//!     let id = waiter.fiber().id().as_u64();
//!     let wait = loop {
//!         if let Some(wait) = fibra::dump().fiber(id).and_then(|f| f.wait.clone()) {
//!             break wait;
//!         }
//!         fibra::yield_now();
//!     };
//!     assert_eq!(wait.kind, fibra::WaitKind::Mutex);
//!     assert_eq!(wait.owner, Some(fibra::current().id().as_u64()));
//!     println!("{}", fibra::dump()); // fiber 2 [parked on mutex, 0 ms, worker 1]: …
//!     drop(held);
//!     waiter.join().unwrap();
//! });
//! ```
//!
//! ## What is pending outside the runtime
//!
//! A fiber sleeping for an hour holds a timer; [`holds`](crate::Runtime::holds) names it and
//! the line it was started on:
//!
//! ```
//! use fibra::HoldKind;
//! use std::time::Duration;
//!
//! let runtime = fibra::Runtime::builder().workers(1).build().unwrap().into_background().unwrap();
//! let sleeper = runtime.handle().spawn(|| fibra::sleep(Duration::from_secs(3600)));
//! let hold = loop {
//!     if let Some(hold) = runtime.holds().into_iter().next() {
//!         break hold;
//!     }
//!     std::thread::yield_now();
//! };
//! assert_eq!(hold.kind, HoldKind::Timer);
//! assert!(hold.to_string().starts_with("timer taken at"));
//! assert!(!sleeper.is_finished());
//! ```
