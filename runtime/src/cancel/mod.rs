//! Unwinding cancellation: cancel scopes, cancellation points, shields, and
//! `scope_with`'s tokens, deadlines and timeouts.
//!
//! Cancellation is cooperative and unwinds: a fiber whose scope is cancelled panics, with a
//! private payload, at its current or next cancellation point (every park, sleep, join,
//! `block_on`, `blocking` and `checkpoint`), so destructors run and guards release. The unwind
//! ends at the fiber's entry (its join reports `JoinError::is_cancelled`) or at the
//! `scope_with` whose cancellation it is; a cancellation from an outer scope passes through
//! inner ones. A fiber whose scope is cancelled before it has started never starts: its closure
//! is dropped without running, on the worker that would have started it, and no stack is taken
//! for it (its join reports `JoinError::is_cancelled`). That drop, and the drop of the
//! fiber-locals it was given, run on the worker's thread outside any fiber (taking a stack to
//! drop in a fiber would cost what not starting saves): a drop there that waits blocks the
//! worker's thread, as the user guide says; a panic there is contained.
//!
//! A `scope_with` token cancels the scope on the thread that calls `CancelToken::cancel`,
//! before that call returns; a deadline fires on the driver thread.
//!
//! Under `panic = "abort"` there is no unwinding: a cancellation point that would unwind
//! prints `fibra: cancellation needs panic = "unwind"` and aborts the process instead.

mod group;
mod hint;
mod options;
mod point;
mod tree;
mod trigger;

pub use group::CancelGroup;
pub(crate) use hint::CancelHint;
pub use options::{CancelCause, Cancelled, ScopeOptions};
pub(crate) use point::{
    cancelled_unstarted, check_current, check_current_scope, check_fiber, check_running_if,
    check_thread, take_yield_request, Cancellation,
};
pub use point::{check_cancel, is_cancellation, is_cancelled, shield};
pub use tokio_util::sync::CancellationToken as CancelToken;
pub(crate) use tree::CancelScope;
pub(crate) use trigger::Trigger;
