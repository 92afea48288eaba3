//! Cancel groups: cancel scopes that code cancels with a direct call.

use super::{CancelCause, CancelScope};
use std::fmt;
use std::sync::Arc;

/// A cancel scope cancelled by a direct call: fibers spawned into it with
/// [`Builder::spawn_in`](crate::Builder::spawn_in) — and the scopes they open — unwind at their
/// current or next cancellation point once [`cancel`](CancelGroup::cancel) is called, the same
/// way a cancelled [`scope_with`](crate::scope_with) unwinds its fibers (their joins report
/// [`JoinError::is_cancelled`](crate::JoinError::is_cancelled)).
///
/// Unlike a scope cancelled through a [`CancelToken`](crate::CancelToken), a group registers
/// with no token and keeps no hold on the runtime while it lives: `cancel` marks its fibers
/// directly, so one group per fiber is cheap. A group is not inside the caller's scope: a fiber
/// spawned into it is not cancelled with its spawner.
///
/// ```
/// fibra::run(|| {
///     let group = fibra::CancelGroup::new();
///     let worker = fibra::Builder::new()
///         .spawn_in(&group.child(), || fibra::sleep(std::time::Duration::from_secs(3600)))
///         .unwrap();
///     group.cancel(); // cancels the child group too
///     assert!(worker.join().unwrap_err().is_cancelled());
/// });
/// ```
#[derive(Clone)]
pub struct CancelGroup {
    scope: Arc<CancelScope>,
}

impl CancelGroup {
    /// A group inside no other.
    pub fn new() -> CancelGroup {
        CancelGroup {
            scope: CancelScope::new(None),
        }
    }

    /// A group inside this one: cancelled when this one is (at once if it already was), never
    /// the reverse.
    pub fn child(&self) -> CancelGroup {
        CancelGroup {
            scope: CancelScope::new(Some(self.scope.clone())),
        }
    }

    /// Cancels the group and every group inside it, waking their parked fibers so they
    /// unwind. Cancelling again does nothing.
    pub fn cancel(&self) {
        self.scope.cancel(CancelCause::Token);
    }

    /// Whether this group (or a group it is inside) has been cancelled.
    ///
    /// ```
    /// let parent = fibra::CancelGroup::new();
    /// let child = parent.child();
    /// parent.cancel();
    /// assert!(child.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.scope.cancelled().is_some()
    }

    pub(crate) fn scope(&self) -> &Arc<CancelScope> {
        &self.scope
    }
}

impl Default for CancelGroup {
    fn default() -> CancelGroup {
        CancelGroup::new()
    }
}

impl fmt::Debug for CancelGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelGroup")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
