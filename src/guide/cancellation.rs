//! # Structured concurrency and cancellation
//!
//! ## Scopes
//!
//! [`scope`](crate::scope) has the shape of `std::thread::scope`: fibers spawned with
//! [`Scope::spawn`](crate::Scope::spawn) may borrow from the caller's stack, and `scope`
//! returns only after every one of them has finished. A fiber spawned with
//! [`spawn`](crate::spawn) instead is `'static` and runs until it ends (or its runtime shuts
//! down); [`detach`](crate::detach) runs one that nobody joins.
//!
//! ```
//! let mut scores = [3, 1, 2];
//! fibra::run(|| {
//!     fibra::scope(|s| {
//!         for score in scores.iter_mut() {
//!             s.spawn(move || *score *= 10);
//!         }
//!     });
//! });
//! assert_eq!(scores, [30, 10, 20]);
//! ```
//!
//! ## Cancellation is an unwind
//!
//! A cancelled fiber does not stop at an arbitrary instruction: it unwinds, running every
//! destructor, from its current or next **cancellation point**. Every fibra wait is one —
//! [`sleep`](crate::sleep), [`block_on`](crate::block_on), channel and [`sync`](crate::sync)
//! waits, joins, every [`net`](crate::net) call — as are [`checkpoint`](crate::checkpoint) and
//! [`check_cancel`](crate::check_cancel); [`yield_now`](crate::yield_now) is not. A loop that
//! computes without waiting is not cancelled until it reaches one; put a `checkpoint()` in it.
//! A fiber cancelled before it has started never starts: its closure is dropped without running
//! (so a guard moved into the closure is dropped, one made inside it never exists), and it
//! takes no stack. That drop runs on the worker's thread, outside any fiber: a destructor of a
//! captured value that waits on a fibra primitive (locks a [`sync::Mutex`](crate::sync::Mutex),
//! joins, receives) blocks the worker's thread, and every fiber on it, until the wait ends.
//! Do not catch the unwind
//! (`catch_unwind` sees it as a panic whose payload [`is_cancellation`](crate::is_cancellation)
//! recognises); if you must, resume it.
//!
//! [`scope_with`](crate::scope_with) is a scope that a [`CancelToken`](crate::CancelToken), a
//! deadline or a timeout cancels ([`ScopeOptions`](crate::ScopeOptions)): the body and every
//! child unwind, the scope waits for all of them and returns `Err(Cancelled)` saying which
//! fired ([`Cancelled::cause`](crate::Cancelled::cause)).
//!
//! ```
//! use fibra::{CancelCause, ScopeOptions};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//!
//! let cleaned_up = AtomicUsize::new(0);
//! struct Cleanup<'a>(&'a AtomicUsize);
//! impl Drop for Cleanup<'_> {
//!     fn drop(&mut self) {
//!         self.0.fetch_add(1, Ordering::SeqCst);
//!     }
//! }
//!
//! let outcome = fibra::run(|| {
//!     fibra::scope_with(ScopeOptions::new().timeout(Duration::from_millis(5)), |s| {
//!         for _ in 0..3 {
//!             // Made before the spawn: a child the deadline stops before it started is
//!             // dropped unrun, and its guard with it.
//!             let guard = Cleanup(&cleaned_up);
//!             s.spawn(move || {
//!                 let _guard = guard;
//!                 fibra::sleep(Duration::from_secs(3600));
//!             });
//!         }
//!     })
//! });
//! assert_eq!(outcome.unwrap_err().cause(), CancelCause::Deadline);
//! assert_eq!(cleaned_up.into_inner(), 3, "every child unwound");
//! ```
//!
//! [`timeout`](crate::timeout) is the one-closure form: it runs the closure in the calling
//! fiber and returns `Err(Elapsed)` if it was unwound for running out of time; a closure that
//! returns, even after the deadline (it reached no cancellation point since), gives
//! `Ok(value)`, as tokio's `timeout` does. [`race`](crate::race()) runs closures of one type side
//! by side, returns the first to finish and cancels the rest; [`race!`](crate::race!) does the
//! same for closures of different types, unboxed. [`JoinHandle::abort`](crate::JoinHandle::abort)
//! cancels one spawned fiber, as tokio's `abort` cancels a task.
//!
//! ## Watching a token instead of unwinding
//!
//! A loop that should stop cleanly when a token fires, rather than be unwound, waits on the
//! token beside its channels with `select!`'s `cancelled(token)` arm; `send_from` keeps a value
//! that no receiver took when another arm wins, so nothing is lost on the way out.
//!
//! ```
//! use fibra::select;
//!
//! let stop = fibra::CancelToken::new();
//! let (jobs_tx, jobs) = fibra::chan::bounded::<u32>(0);
//! let left = fibra::run(|| {
//!     let (stopper, worker_jobs) = (stop.clone(), jobs.clone());
//!     fibra::spawn(move || {
//!         assert_eq!(worker_jobs.recv(), Some(1)); // takes one job, then asks to stop
//!         stopper.cancel();
//!     });
//!     let mut pending = vec![3, 2];
//!     let mut next = Some(1);
//!     loop {
//!         select! {
//!             send_from(jobs_tx, next) -> res => {
//!                 res.unwrap();
//!                 next = pending.pop();
//!             }
//!             cancelled(stop) => break,
//!         }
//!     }
//!     // The job that was on offer when the token fired is still ours.
//!     next.into_iter().chain(pending).collect::<Vec<_>>()
//! });
//! assert_eq!(left, [2, 3]);
//! ```
//!
//! ## Shielding cleanup
//!
//! [`shield`](crate::shield) runs a closure with cancellation points disabled, for cleanup that
//! must finish (a goodbye message, a flush): a cancellation that arrives meanwhile takes effect
//! at the first cancellation point after it.
//!
//! ```
//! use fibra::ScopeOptions;
//! use std::time::Duration;
//!
//! let token = fibra::CancelToken::new();
//! token.cancel();
//! let outcome = fibra::run(|| {
//!     fibra::scope_with(ScopeOptions::new().token(token), |_| {
//!         let flushed = fibra::shield(|| {
//!             fibra::sleep(Duration::from_millis(1)); // waits despite the cancellation
//!             true
//!         });
//!         assert!(flushed);
//!         fibra::checkpoint(); // unwinds here
//!         unreachable!()
//!     })
//! });
//! assert!(outcome.is_err());
//! ```
//!
//! ## What joins report
//!
//! A join returns `Ok(value)`, or a [`JoinError`](crate::JoinError) saying why there is no
//! value: [`is_panic`](crate::JoinError::is_panic) (take the payload with
//! [`into_panic`](crate::JoinError::into_panic)) or
//! [`is_cancelled`](crate::JoinError::is_cancelled) — the fiber was cancelled (its
//! [`CancelGroup`](crate::CancelGroup) or scope was cancelled, its handle's
//! [`abort`](crate::JoinHandle::abort) was called, or its runtime shut down before it
//! finished).
//!
//! ```
//! use std::time::Duration;
//!
//! fibra::run(|| {
//!     let panicked = fibra::spawn(|| panic!("boom")).join().unwrap_err();
//!     assert!(panicked.is_panic());
//!     assert_eq!(panicked.into_panic().downcast_ref::<&str>(), Some(&"boom"));
//!
//!     let group = fibra::CancelGroup::new();
//!     let sleeper = fibra::Builder::new()
//!         .spawn_in(&group, || fibra::sleep(Duration::from_secs(3600)))
//!         .unwrap();
//!     group.cancel();
//!     assert!(sleeper.join().unwrap_err().is_cancelled());
//! });
//! ```
//!
//! ## A child's panic, and the scoped-join rule
//!
//! A panic in a scoped child cancels its siblings and the scope body. If nobody joined that
//! child, `scope` re-raises the panic once every fiber has ended (the first panic, in the
//! order they happened; a panic of the body itself takes precedence).
//!
//! A body that joins the child takes the panic itself:
//! [`ScopedJoinHandle::join`](crate::ScopedJoinHandle::join) returns `Err` with the payload,
//! **whether the child panicked before the join or during it**, and the scope does not
//! re-raise that panic. Once the body has joined every child panic so far, it is no longer
//! cancelled by them: it goes on past its cancellation points, children it spawns from then
//! on run normally, and `scope` returns the body's value, as `std::thread::scope` does.
//! Siblings the panic cancelled stay cancelled. A panic nobody joined still makes the scope
//! panic with it.
//!
//! ```
//! use std::panic::{self, AssertUnwindSafe};
//!
//! fibra::run(|| {
//!     // Handled: the body goes on, through cancellation points, and returns its value.
//!     let value = fibra::scope(|s| {
//!         let child = s.spawn(|| panic!("handled"));
//!         let error = child.join().unwrap_err();
//!         assert_eq!(error.into_panic().downcast_ref::<&str>(), Some(&"handled"));
//!         fibra::checkpoint();
//!         s.spawn(|| 6).join().unwrap() + 1
//!     });
//!     assert_eq!(value, 7);
//!
//!     // Not joined: the scope re-raises it.
//!     let ended = panic::catch_unwind(AssertUnwindSafe(|| {
//!         fibra::scope(|s| {
//!             s.spawn(|| panic!("not handled"));
//!         })
//!     }));
//!     let payload = ended.unwrap_err();
//!     assert_eq!(payload.downcast_ref::<&str>(), Some(&"not handled"));
//! });
//! ```
