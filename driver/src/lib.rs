//! fibra's centralized I/O driver: one OS thread running a current-thread tokio
//! runtime — its reactor, timer wheel and blocking pool — or an application's own tokio runtime
//! attached instead.
//!
//! The driver only ever invokes `Waker`s; it knows nothing of fibers. The layer above
//! (`fibra-runtime`) enters the driver's context on every worker thread, so tokio resources can
//! be created and polled there, and parks fibers between polls.
//!
//! Every pending external wait — a timer, a blocking job, a pending future — takes a [`Hold`]
//! from the driver's [`Holds`], so that diagnostics can tell what the program waits for.

#![forbid(unsafe_code)]

mod batching;
mod blocking;
mod deadline;
mod driver;
mod holds;
mod time;

pub use batching::note_remote_wake;
pub use blocking::{spawn_blocking, BlockingJob};
pub use deadline::Deadline;
pub use driver::{on_driver_thread, Driver, EnterGuard};
pub use holds::{Hold, HoldInfo, HoldKind, Holds};
pub use time::Timer;
