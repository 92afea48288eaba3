//! A wait for a cancel token, as an operation that a select can wait on beside channel
//! operations: it completes once the token is cancelled.
//!
//! The token's own wait list (tokio-util's) holds a waker, and a cancelling thread may call
//! it at any time, even after the select has moved on: so the waker owns its state (an `Arc`)
//! and reaches the select's `Waiter` only through a target slot that `unregister` empties under
//! the slot's lock before the waiter can go away.

use super::in_wait::WaitMark;
use super::operation::{sealed, Attempt, Operation};
use crate::core::chan::Registration;
use crate::core::waiter::Waiter;
use fibra_runtime::loom::sync::Mutex;
use fibra_runtime::wait::{Deadline, WaitKind};
use fibra_runtime::CancelToken;
use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use tokio_util::sync::WaitForCancellationFutureOwned;

/// A wait for a [`CancelToken`] to be cancelled: completes once it is. Never ends as closed.
/// `select!`'s `cancelled(token)` arm is built on it.
///
/// ```
/// use fibra::chan::op::{Attempt, CancelledOp, Operation};
/// let token = fibra::CancelToken::new();
/// let cancelled = CancelledOp::new(&token);
/// assert_eq!(cancelled.try_now(), Attempt::NotReady);
/// token.cancel();
/// assert_eq!(cancelled.try_now(), Attempt::Completed);
/// ```
pub struct CancelledOp<'a> {
    token: &'a CancelToken,
    /// While registered: the token's wait-list entry and the claim it wakes.
    watch: RefCell<Option<Watch>>,
    in_wait: WaitMark,
}

/// A registration on the token.
struct Watch {
    claim: Arc<Claim>,
    /// Polled once with `claim`'s waker; dropping it takes the waker off the token's list.
    _cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
}

/// What the token's waker does when the token is cancelled: claims the waiter, if it is still
/// registered, and wakes it.
struct Claim {
    token: CancelToken,
    target: Mutex<Option<Target>>,
}

/// The registered waiter.
struct Target {
    waiter: *const Waiter,
    oper: usize,
    waker: Waker,
}

// SAFETY: `waiter` points at a `Waiter`, which is `Sync` (its state is one atomic); it is only
// dereferenced under the target lock while the target is set, and the owner empties the target
// under that lock before the waiter goes (see `unregister`), so any thread holding the lock and
// finding the target set may use it.
unsafe impl Send for Target {}

impl Claim {
    fn lock(&self) -> fibra_runtime::loom::sync::MutexGuard<'_, Option<Target>> {
        self.target
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Wake for Claim {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The token wakes only when cancelled; anything else is not this operation's doing.
        if !self.token.is_cancelled() {
            return;
        }
        let mut target = self.lock();
        let Some(registered) = target.take() else {
            return;
        };
        // SAFETY: the target was set under the lock we hold, so its waiter is alive (the
        // owner empties the target under this lock before the waiter can go; see `Target`).
        let waiter = unsafe { &*registered.waiter };
        if waiter.try_claim(registered.oper) {
            // SAFETY: we won the claim just now and finish it once. Nothing completes but the
            // acknowledgement, which `outcome` reads off the token.
            unsafe { waiter.finish(registered.oper) };
            drop(target);
            registered.waker.wake();
        }
    }
}

impl<'a> CancelledOp<'a> {
    /// A wait for `token` to be cancelled.
    ///
    /// ```
    /// let token = fibra::CancelToken::new();
    /// let _cancelled = fibra::chan::op::CancelledOp::new(&token);
    /// ```
    pub fn new(token: &'a CancelToken) -> Self {
        CancelledOp {
            token,
            watch: RefCell::new(None),
            in_wait: WaitMark::default(),
        }
    }
}

impl sealed::Sealed for CancelledOp<'_> {
    fn wait_mark(&self) -> &WaitMark {
        &self.in_wait
    }

    fn has_completed(&self, _: sealed::Token) -> bool {
        self.token.is_cancelled()
    }

    fn register(&self, waiter: &Waiter, oper: usize, waker: Waker) -> Registration {
        if self.token.is_cancelled() {
            return Registration::Ready;
        }
        let claim = Arc::new(Claim {
            token: self.token.clone(),
            target: Mutex::new(Some(Target {
                waiter,
                oper,
                waker,
            })),
        });
        let mut cancelled = Box::pin(self.token.clone().cancelled_owned());
        let token_waker = Waker::from(Arc::clone(&claim));
        let polled = cancelled
            .as_mut()
            .poll(&mut Context::from_waker(&token_waker));
        if polled == Poll::Ready(()) && claim.lock().take().is_some() {
            // Cancelled while registering and nobody claimed the waiter: complete now.
            return Registration::Ready;
        }
        *self.watch.borrow_mut() = Some(Watch {
            claim,
            _cancelled: cancelled,
        });
        Registration::Waiting(Deadline::NEVER)
    }

    fn unregister(&self, _waiter: &Waiter, _oper: usize) {
        if let Some(watch) = self.watch.borrow_mut().take() {
            // Under the lock: a waker that finds the target empty leaves the waiter alone, and
            // one that found it set has finished with the waiter once we hold the lock.
            watch.claim.lock().take();
        }
    }

    fn abandon(&self, _: sealed::Token) {}

    fn retry_by(&self) -> sealed::RetryBy<'_> {
        sealed::RetryBy::Anyone
    }

    // A token is waited on as a select's arm.
    fn waits_on(&self) -> (WaitKind, &dyn sealed::Identity) {
        (WaitKind::Select, self.token)
    }
}

impl Operation for CancelledOp<'_> {
    fn try_now(&self) -> Attempt {
        self.in_wait.assert_free("try_now");
        match self.token.is_cancelled() {
            true => Attempt::Completed,
            false => Attempt::NotReady,
        }
    }

    fn outcome(&self) -> Attempt {
        self.in_wait.assert_free("outcome");
        Attempt::Completed
    }
}

impl fmt::Debug for CancelledOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelledOp")
            .field("cancelled", &self.token.is_cancelled())
            .finish_non_exhaustive()
    }
}
