//! What cancels a `scope_with` when its token or deadline fires, and a hold for as long as
//! either may fire, since it is an outside source that will wake the scope.
//!
//! A token cancels the scope on the thread that cancels the token, from inside
//! `CancelToken::cancel`: the scope's fibers are marked and woken before that call returns, so
//! a fiber that cancels its own scope's token unwinds at its very next cancellation point, and
//! the scope's children that have not started yet are dropped unstarted instead of starting
//! while a hop through another thread is under way. A deadline is a timer on the driver.

use super::{CancelCause, CancelScope, CancelToken, ScopeOptions};
use crate::sched::Shared;
use fibra_driver::{Hold, HoldKind, Timer};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use tokio_util::sync::WaitForCancellationFutureOwned;

/// Armed for the life of a scope; disarmed (the token's registration withdrawn, the deadline's
/// task aborted, the hold released) on drop.
pub(crate) struct Trigger {
    /// The scope's registration with its token, whose waker cancels the scope.
    token: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    deadline: Option<tokio::task::JoinHandle<()>>,
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
        let mut trigger = Trigger {
            token: None,
            deadline: None,
            _hold: None,
        };
        let kind = match (&options.token, options.deadline.is_never()) {
            (_, false) => Some(HoldKind::Timer),
            (Some(_), true) if !options.token_unheld => Some(HoldKind::CancelToken),
            _ => None,
        };
        if let Some(token) = options.token {
            match register(token, cancel) {
                Some(registration) => trigger.token = Some(registration),
                None => return trigger,
            }
        }
        if !options.deadline.is_never() {
            if options.deadline.has_passed() {
                cancel.cancel(CancelCause::Deadline);
                return trigger;
            }
            let cancel = cancel.clone();
            // The timer is made inside the task, where the driver's context is entered.
            trigger.deadline = Some(shared.tokio.spawn(async move {
                Timer::at(options.deadline).await;
                cancel.cancel(CancelCause::Deadline);
            }));
        }
        if let Some(kind) = kind {
            trigger._hold = crate::holds::take(kind);
        }
        trigger
    }
}

/// Registers `cancel` to be cancelled by `token`, on the thread that cancels it; `None` once it
/// has been cancelled already (it was cancelled here, at once).
fn register(
    token: CancelToken,
    cancel: &Arc<CancelScope>,
) -> Option<Pin<Box<WaitForCancellationFutureOwned>>> {
    let mut registration = Box::pin(token.clone().cancelled_owned());
    let waker = Waker::from(Arc::new(CancelOnWake {
        token,
        cancel: cancel.clone(),
    }));
    match registration.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(()) => {
            cancel.cancel(CancelCause::Token);
            None
        }
        Poll::Pending => Some(registration),
    }
}

/// The waker of a scope's registration with its token: woken by the token's cancellation, on
/// the cancelling thread, after the token has released its locks.
struct CancelOnWake {
    token: CancelToken,
    cancel: Arc<CancelScope>,
}

impl Wake for CancelOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The token wakes its waiters only when it is cancelled; looking costs little and keeps
        // a stray wake from cancelling the scope.
        if self.token.is_cancelled() {
            self.cancel.cancel(CancelCause::Token);
        }
    }
}

impl Drop for Trigger {
    fn drop(&mut self) {
        if let Some(task) = &self.deadline {
            task.abort();
        }
    }
}
