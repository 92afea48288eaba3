//! Channel operations as values, and the one registration-and-wait routine that every blocking
//! `recv`, `send`, `*_timeout`, async operation and `select` is built on.
//!
//! An operation ([`RecvOp`], [`SendOp`]) is tried at once with [`Operation::try_now`]; when
//! none of a set of operations can complete, [`wait`] registers one waiter on all of them,
//! parks until exactly one completes (or a deadline passes), and removes the other
//! registrations. An operation completes only if it wins its waiter's claim, so a receive that
//! did not win takes no value and a send that did not win delivers none. An operation is in
//! one wait at a time and is not used otherwise while it is: misuse panics instead of
//! corrupting a handoff.
//!
//! This module is for writing a wait of your own over several channels — `select!` is one;
//! most code uses `Reader`, `Writer` and `select!` instead.
//!
//! ```
//! use fibra::chan::op::{self, Attempt, Operation, RecvOp, Woken};
//! use fibra::wait::Deadline;
//!
//! let (tx_a, rx_a) = fibra::chan::bounded::<u32>(1);
//! let (_tx_b, rx_b) = fibra::chan::bounded::<u32>(1);
//! let sender = std::thread::spawn(move || tx_a.send(7).unwrap());
//!
//! // Wait for whichever of two receives completes first.
//! let a = RecvOp::new(&rx_a);
//! let b = RecvOp::new(&rx_b);
//! let got = loop {
//!     if a.try_now() == Attempt::Completed {
//!         break a.into_value();
//!     }
//!     match op::wait(&[Some(&a), Some(&b)], Deadline::NEVER) {
//!         Woken::Selected(0) => break a.into_value(),
//!         Woken::Selected(_) => unreachable!("nobody sends on b"),
//!         Woken::Retry | Woken::TimedOut => {}
//!     }
//! };
//! assert_eq!(got, Some(7));
//! sender.join().unwrap();
//! ```

mod cancelled;
mod in_wait;
mod operation;
mod patience;
mod wait;

pub use cancelled::CancelledOp;
pub(crate) use operation::sealed::TOKEN;
pub use operation::{Attempt, Operation, RecvOp, SendOp};
pub(crate) use patience::run_one;
pub use patience::Patience;
pub use wait::{cancellation_point, wait, Woken};
pub(crate) use wait::{register_all, unregister_all};
