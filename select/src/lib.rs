//! fibra's `select!`, `select_biased!` and dynamic [`Select`] over channels.
//!
//! A select waits on several channel operations at once — receives, sends, timer channels —
//! and completes exactly one: the first to become ready. [`select!`] is fair: every call
//! checks its arms in a fresh random order, so an arm that is always ready cannot starve the
//! others. [`select_biased!`] checks them in written order. [`Select`] builds a select at run
//! time. All of them work in fibers (only the fiber waits) and on plain threads.
//!
//! ```
//! use std::time::Duration;
//! use fibra::select;
//!
//! fibra::run(|| {
//!     let (jobs_tx, jobs) = fibra::chan::bounded(0);
//!     let (results_tx, results) = fibra::chan::bounded(0);
//!     fibra::scope(|s| {
//!         s.spawn(move || {
//!             for job in jobs.iter() {
//!                 results_tx.send(job * 2).unwrap();
//!             }
//!         });
//!         let mut pending = vec![1, 2, 3];
//!         let mut done = Vec::new();
//!         while done.len() < 3 {
//!             let next = pending.last().copied();
//!             select! {
//!                 send(jobs_tx, next.unwrap_or(0)) if next.is_some() -> res => {
//!                     res.unwrap();
//!                     pending.pop();
//!                 }
//!                 recv(results) -> Some(r) => done.push(r),
//!                 default(Duration::from_secs(10)) => panic!("stuck"),
//!             }
//!         }
//!         drop(jobs_tx);
//!         done.sort();
//!         assert_eq!(done, [2, 4, 6]);
//!     });
//! });
//! ```

#![forbid(unsafe_code)]

mod builder;
mod engine;
mod error;
mod macros;
mod order;

#[cfg(all(test, loom))]
mod loom_tests;

#[doc(hidden)]
pub mod __private;

pub use builder::Select;
pub use error::{SelectTimeoutError, TrySelectError};
