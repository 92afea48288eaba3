//! fibra's bounded, rendezvous and unbounded MPMC channels and timer channels.
//!
//! [`bounded(cap)`](bounded) makes a channel with room for `cap` values; `cap == 0` is a
//! rendezvous channel, where a send completes only when a receiver takes the value.
//! [`unbounded()`](unbounded) makes one whose sends never block. Both ends
//! are `Clone + Send + Sync`. Every operation works the same from a fiber (only the fiber
//! waits), a plain thread (the thread parks) and async code (the `*_async` futures and the
//! `Stream`), in any mix.
//!
//! ```
//! fibra::run(|| {
//!     let (tx, rx) = fibra::chan::bounded(0);
//!     let sum = fibra::scope(|s| {
//!         for id in 0..4u64 {
//!             let tx = tx.clone();
//!             s.spawn(move || {
//!                 for i in 0..100 {
//!                     tx.send(id * 1000 + i).unwrap();
//!                 }
//!             });
//!         }
//!         drop(tx); // the channel closes when the last writer is gone
//!         rx.iter().sum::<u64>()
//!     });
//!     assert_eq!(sum, (0..4).map(|id| id * 1000 * 100 + 4950).sum());
//! });
//! ```
//!
//! Semantics:
//! - `close()` on either end closes the channel for everyone, idempotently; dropping the last
//!   [`Writer`] closes it too. After close, sends fail at once (the value comes back in the
//!   error); receivers drain what is buffered, then get `None`. Dropping the last [`Reader`]
//!   closes the channel and drops what is buffered.
//! - Values from one sender arrive in the order sent; blocked senders and receivers are served
//!   in the order they blocked; a send that finds a parked receiver hands the value over
//!   directly. A blocked operation first yields and retries a few times before it parks (at
//!   most one per channel side at a time, the others queue behind it: see
//!   [`op::Patience`]), which spares both sides the lock and a wake-up when the other party is
//!   a moment away.
//! - Timer channels: [`close_after`] and [`close_at`] give a `Reader<()>` that closes when the
//!   time comes (a timeout usable in `select!`); [`tick`] delivers periodic ticks.
//! - Blocking operations (`send`, `recv`, their timeouts, `select`) are cancellation points: a
//!   fiber whose scope is cancelled unwinds out of them, and nothing is lost — an operation
//!   that was already being completed (a value handed to the receive, a send's value taken)
//!   completes and is returned, and the fiber unwinds at its next cancellation point. `try_*`
//!   and the async forms are not cancellation points (an async operation is cancelled by
//!   dropping its future).
//!
//! The [`op`] module exposes operations as values and the one wait they all share, for
//! writing a wait over several channels of your own (as `select!` does).

mod core;
mod ends;
mod error;
pub mod op;
mod timer;

#[cfg(all(test, loom))]
mod loom_tests;

pub use ends::future::{RecvFuture, SendFuture};
pub use ends::iter::{IntoIter, Iter, TryIter};
pub use ends::reader::Reader;
pub use ends::writer::Writer;
pub use error::{RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
pub use timer::{close_after, close_at, tick};

use std::sync::Arc;

/// A channel with room for `cap` buffered values; `cap == 0` makes a rendezvous channel.
/// Returns its first writer and reader; clone either for more.
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(1);
/// tx.send("one").unwrap();
/// assert!(tx.try_send("two").is_err()); // full
/// assert_eq!(rx.recv(), Some("one"));
/// ```
pub fn bounded<T>(cap: usize) -> (Writer<T>, Reader<T>) {
    ends(crate::core::chan::Chan::new(cap))
}

/// How many values an unbounded channel keeps in its lock-free ring; more wait in a queue
/// behind it.
const UNBOUNDED_RING: usize = 256;

/// A channel without a bound: sends never block (nor fail with `Full`), values that find the
/// buffer full wait in a queue behind it, in order. Its [`capacity`](Writer::capacity) is
/// `usize::MAX`. Returns its first writer and reader; clone either for more.
///
/// ```
/// let (tx, rx) = fibra::chan::unbounded();
/// for i in 0..10_000 {
///     tx.try_send(i).unwrap(); // never full
/// }
/// drop(tx);
/// assert!(rx.iter().eq(0..10_000));
/// ```
pub fn unbounded<T>() -> (Writer<T>, Reader<T>) {
    ends(crate::core::chan::Chan::unbounded(UNBOUNDED_RING))
}

fn ends<T>(chan: crate::core::chan::Chan<T>) -> (Writer<T>, Reader<T>) {
    let chan = Arc::new(chan);
    (Writer::from_chan(chan.clone()), Reader::from_chan(chan))
}

/// The sending end, by the name crossbeam, std and tokio give it: a [`Writer`].
///
/// ```
/// let (tx, rx): (fibra::chan::Sender<u8>, fibra::chan::Receiver<u8>) = fibra::chan::bounded(1);
/// tx.send(1).unwrap();
/// assert_eq!(rx.recv(), Some(1));
/// ```
pub type Sender<T> = Writer<T>;

/// The receiving end, by the name crossbeam, std and tokio give it: a [`Reader`].
///
/// ```
/// let (_tx, rx): (_, fibra::chan::Receiver<u8>) = fibra::chan::unbounded();
/// assert!(rx.try_recv().is_err());
/// ```
pub type Receiver<T> = Reader<T>;
