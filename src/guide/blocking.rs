//! # Do not block the worker
//!
//! A fiber stays on the worker thread it started on, and a worker runs its fibers one at a
//! time, switching only when the running fiber waits through fibra. A call that blocks the
//! **thread** instead — `std::thread::sleep`, a blocking syscall, a `std::sync::Mutex` that
//! another fiber holds — stops every other fiber pinned to that worker until it returns:
//! their timers fire late, their sockets go unread, and nothing else on the worker makes
//! progress. Idle workers steal only fibers that have not started yet.
//!
//! | blocks the worker | use instead |
//! | --- | --- |
//! | `std::thread::sleep(d)` | [`fibra::sleep(d)`](crate::sleep) |
//! | a blocking syscall or library call (`std::fs`, DNS, a C library) | [`fibra::blocking(f)`](crate::blocking), or [`fibra::fs`](crate::fs), [`fibra::net`](crate::net) |
//! | `std::sync::Mutex` guard held across a fibra wait | [`fibra::sync::Mutex`](crate::sync::Mutex) |
//! | `std::sync::mpsc`, `std::sync::Condvar`, `std::sync::Barrier` | [`fibra::chan`](crate::chan), [`fibra::sync::Condvar`](crate::sync::Condvar), [`fibra::sync::Barrier`](crate::sync::Barrier) |
//! | a long computation without waits | [`fibra::checkpoint()`](crate::checkpoint) in its loop, or `fibra::blocking` |
//!
//! ## `std::sync::Mutex` across a wait can hang forever
//!
//! Two fibers on one worker: the first takes a std guard and waits in `fibra::sleep`, so the
//! worker runs the second, which blocks the *thread* on the same std mutex. The first fiber's
//! timer fires, but its worker is stuck in the second fiber's `lock()` and never resumes it,
//! so the guard is never released. This program never ends:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! let shared = std::sync::Mutex::new(0);
//! fibra::Runtime::builder().workers(1).build().unwrap().block_on(|| {
//!     fibra::scope(|s| {
//!         for _ in 0..2 {
//!             s.spawn(|| {
//!                 let mut guard = shared.lock().unwrap();
//!                 fibra::sleep(Duration::from_millis(1)); // the guard is held across a wait
//!                 *guard += 1;
//!             });
//!         }
//!     });
//! });
//! ```
//!
//! A std mutex is fine for a short critical section that does not wait through fibra. When
//! the guard must be held across a wait, use [`fibra::sync::Mutex`](crate::sync::Mutex): a
//! fiber that finds it locked parks, and its worker runs the holder.
//!
//! ```
//! use std::time::Duration;
//!
//! let shared = fibra::sync::Mutex::new(0);
//! fibra::Runtime::builder().workers(1).build().unwrap().block_on(|| {
//!     fibra::scope(|s| {
//!         for _ in 0..2 {
//!             s.spawn(|| {
//!                 let mut guard = shared.lock();
//!                 fibra::sleep(Duration::from_millis(1));
//!                 *guard += 1;
//!             });
//!         }
//!     });
//! });
//! assert_eq!(shared.into_inner(), 2);
//! ```
//!
//! ## Sleeping and blocking calls
//!
//! `fibra::sleep` parks the fiber on the driver's timer; the worker runs the others meanwhile.
//! `fibra::blocking` runs a closure on the driver's blocking pool and parks the fiber until it
//! returns, so a blocking call costs the fiber its wait but not its worker:
//!
//! ```
//! use std::time::Duration;
//!
//! fibra::Runtime::builder().workers(1).build().unwrap().block_on(|| {
//!     let (tx, rx) = fibra::chan::bounded(0);
//!     // A thread-blocking call, moved off the worker.
//!     let slow = fibra::spawn(|| fibra::blocking(|| std::fs::read_dir(".").map(|d| d.count())));
//!     // Meanwhile the one worker keeps running other fibers.
//!     let ticker = fibra::spawn(move || {
//!         for tick in 0..3 {
//!             fibra::sleep(Duration::from_millis(1));
//!             tx.send(tick).unwrap();
//!         }
//!     });
//!     assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
//!     ticker.join().unwrap();
//!     assert!(slow.join().unwrap().is_ok());
//! });
//! ```
//!
//! ## Waits during an unwind block the worker
//!
//! A fiber that is unwinding — from a panic or a cancellation — never suspends: other fibers
//! must not run on its thread while `std::thread::panicking()` is true (their cancellation
//! points would misfire and std mutexes they unlock would be poisoned). So a fibra wait inside
//! a destructor that runs during an unwind (a `Drop` that sleeps, locks a contended
//! [`sync::Mutex`](crate::sync::Mutex), or sends on a full channel) blocks the whole worker
//! until it is woken, and cancellation points are disabled there. Keep destructors short; hand
//! slow cleanup to another fiber (a send on a channel with room, or [`spawn`](crate::spawn)).
