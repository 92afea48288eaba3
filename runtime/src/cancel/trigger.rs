//! What cancels a `scope_with` when its token or deadline fires: a task on the driver, and a
//! hold for as long as it may fire, since it is an outside source that will wake the scope.

use super::{CancelCause, CancelScope, ScopeOptions};
use crate::sched::Shared;
use fibra_driver::{Hold, HoldKind, Timer};
use std::sync::Arc;

/// Armed for the life of a scope; disarmed (the task aborted, the hold released) on drop.
pub(crate) struct Trigger {
    task: Option<tokio::task::JoinHandle<()>>,
    _hold: Option<Hold>,
}

impl Trigger {
    /// Cancels `cancel` when the token of `options` is cancelled or its deadline passes; at once
    /// if either already has.
    #[track_caller]
    pub(crate) fn start(
        shared: &Shared,
        options: ScopeOptions,
        cancel: &Arc<CancelScope>,
    ) -> Trigger {
        let disarmed = Trigger {
            task: None,
            _hold: None,
        };
        if options.token.as_ref().is_some_and(|t| t.is_cancelled()) {
            cancel.cancel(CancelCause::Token);
            return disarmed;
        }
        if options.deadline.has_passed() {
            cancel.cancel(CancelCause::Deadline);
            return disarmed;
        }
        let kind = match (&options.token, options.deadline.is_never()) {
            (None, true) => return disarmed,
            (_, false) => HoldKind::Timer,
            (Some(_), true) => HoldKind::CancelToken,
        };
        let hold = crate::holds::take(kind);
        let cancel = cancel.clone();
        // The timer is made inside the task, where the driver's context is entered.
        let task = shared.tokio.spawn(async move {
            let token = async {
                match options.token {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let deadline = Timer::at(options.deadline);
            tokio::select! {
                () = token => cancel.cancel(CancelCause::Token),
                () = deadline => cancel.cancel(CancelCause::Deadline),
            }
        });
        Trigger {
            task: Some(task),
            _hold: hold,
        }
    }
}

impl Drop for Trigger {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
