//! Waiting for a fiber's result: blocking (fiber or thread) and as a future.

use super::error::JoinError;
use super::packet::Joined;
use crate::cancel::{CancelCause, CancelScope};
use crate::diag::Published;
use crate::fiber::Fiber;
use crate::sched::with_worker;
use crate::wait::{
    current_waker, in_fiber, park_current_until_as, park_fiber_checking, Check, Key,
};
use crate::wait::{Deadline, WaitKind, WaitSite};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// An owned permission to join a fiber: wait for it to finish and take its result.
///
/// `join` blocks a fiber (or a plain thread); `.await` suits async code; [`abort`](Self::abort)
/// cancels the fiber.
///
/// ```
/// fibra::run(|| {
///     let handle = fibra::spawn(|| 6 * 7);
///     assert_eq!(handle.join().unwrap(), 42);
/// });
/// ```
///
/// # Dropping the handle
///
/// Dropping the handle does not stop the fiber: it runs on, and its result is dropped. But
/// the runtime does not wait for it: once the main fiber has returned, the runtime's shutdown
/// cancels it like every other fiber still running (see [`Runtime`](crate::Runtime)'s
/// "Shutdown"). Only fibers started with [`detach`](crate::detach) are waited for then. A
/// fiber that must finish its work is detached, or joined.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// /// Sets its flag when dropped: also when its fiber unwinds.
/// struct SetOnDrop(Arc<AtomicBool>);
/// impl Drop for SetOnDrop {
///     fn drop(&mut self) {
///         self.0.store(true, Ordering::SeqCst);
///     }
/// }
///
/// let detached_finished = Arc::new(AtomicBool::new(false));
/// let dropped_ended = Arc::new(AtomicBool::new(false));
/// let (finished, ended) = (detached_finished.clone(), SetOnDrop(dropped_ended.clone()));
/// fibra::run(move || {
///     fibra::detach(move || {
///         fibra::sleep(std::time::Duration::from_millis(1));
///         finished.store(true, Ordering::SeqCst);
///     });
///     drop(fibra::spawn(move || {
///         let _ended = ended;
///         let (_never_sent, rx) = fibra::chan::bounded::<()>(0);
///         let _ = rx.recv(); // only the runtime's shutdown ends this wait
///         unreachable!("shutdown cancels the fiber whose handle was dropped");
///     }));
/// });
/// // `run` waited for the detached fiber, and cancelled the one whose handle was dropped.
/// assert!(detached_finished.load(Ordering::SeqCst));
/// assert!(dropped_ended.load(Ordering::SeqCst));
/// ```
pub struct JoinHandle<T> {
    joined: Joined<T>,
    /// The fiber's own cancel scope, which `abort` cancels.
    cancel: Arc<CancelScope>,
    /// Our registration with the runtime while awaited from outside its fibers.
    outside: Option<Key>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(joined: Joined<T>, cancel: Arc<CancelScope>) -> JoinHandle<T> {
        JoinHandle {
            joined,
            cancel,
            outside: None,
        }
    }

    /// Cancels the fiber, as tokio's `JoinHandle::abort` cancels a task: it unwinds (running
    /// its destructors) from its current or next cancellation point, together with every fiber
    /// of the scopes it has opened, and its join then reports
    /// [`JoinError::is_cancelled`]. Other fibers, its spawner among them, are not cancelled.
    ///
    /// A fiber that has finished keeps its result, and so does one that gets to its end
    /// without passing another cancellation point. One that has not started yet never starts:
    /// its closure is dropped without running (no stack is taken for it). Aborting twice is
    /// aborting once.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// fibra::run(|| {
    ///     let sleeper = fibra::spawn(|| fibra::sleep(Duration::from_secs(3600)));
    ///     sleeper.abort();
    ///     assert!(sleeper.join().unwrap_err().is_cancelled());
    ///
    ///     let quick = fibra::spawn(|| 7);
    ///     while !quick.is_finished() {
    ///         fibra::yield_now();
    ///     }
    ///     quick.abort(); // too late: the value stays
    ///     assert_eq!(quick.join().unwrap(), 7);
    /// });
    /// ```
    pub fn abort(&self) {
        self.cancel.cancel(CancelCause::Internal);
        // The fiber is not a member of its own scope (see `CancelIn::Own`): raise its hint
        // after the scope is marked, as the cancel tree does for members, and wake it.
        self.fiber().0.cancel_hint.raise();
        self.fiber().0.unpark();
    }

    /// Waits for the fiber to finish and returns its value, or why there is none.
    ///
    /// From a fiber this parks only the fiber; from any other thread it blocks the thread.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// // From a plain thread, while the runtime runs.
    /// let handle = runtime.handle().spawn(|| 6 * 7);
    /// let waiter = std::thread::spawn(move || handle.join());
    /// // The main fiber returns at once; shutting down cancels the fiber if it has not finished.
    /// runtime.block_on(|| {});
    /// match waiter.join().unwrap() {
    ///     Ok(value) => assert_eq!(value, 42),
    ///     Err(error) => assert!(error.is_cancelled()),
    /// }
    /// ```
    #[track_caller]
    pub fn join(mut self) -> Result<T, JoinError> {
        let site = join_site(self.fiber());
        wait(&self.joined, &mut self.outside, &site)
    }

    /// Whether the fiber has finished (its result is waiting).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let handle = fibra::spawn(|| ());
    ///     while !handle.is_finished() {
    ///         fibra::yield_now();
    ///     }
    ///     handle.join().unwrap();
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.joined.is_finished()
    }

    /// The fiber being joined.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let handle = fibra::Builder::new().name("worker").spawn(|| ()).unwrap();
    ///     assert_eq!(handle.fiber().name(), Some("worker"));
    ///     handle.join().unwrap();
    /// });
    /// ```
    pub fn fiber(&self) -> &Fiber {
        self.joined.fiber()
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match poll_outside(&this.joined, &mut this.outside, cx.waker()) {
            Some(result) => Poll::Ready(result),
            None => Poll::Pending,
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(key) = self.outside.take() {
            self.fiber().0.shared.outside.deregister(key);
        }
        // A result nobody takes is dropped by the packet's end, where a panic out of its
        // `Drop` cannot reach the caller, whether the fiber finished before this drop (when
        // `joined` lets go) or after (in the fiber).
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("fiber", self.fiber())
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The wait site of a join on `fiber`: only its end finishes the wait.
#[track_caller]
pub(crate) fn join_site(fiber: &Fiber) -> WaitSite<'static> {
    WaitSite::new(WaitKind::Join, &*fiber.0).ended_by(fiber.id())
}

/// Blocks the caller until `joined`'s fiber has a result.
pub(crate) fn wait<T>(
    joined: &Joined<T>,
    outside: &mut Option<Key>,
    site: &WaitSite<'_>,
) -> Result<T, JoinError> {
    // A fiber of this runtime is never left waiting by shutdown (it is abandoned with the
    // fiber it waits for), so only other callers register to be told about it.
    let shared = &*joined.fiber().0.shared;
    let fiber = in_fiber();
    let ours = fiber
        && with_worker(|local| local.is_some_and(|local| std::ptr::eq(&**local.shared(), shared)));
    let waker = current_waker();
    let mut published = None;
    loop {
        // The join's cancellation point, looked at before the poll and acted on after it: a
        // scoped child's panic cancels its joiner as it stores its result (under the packet's
        // lock), so a cancellation seen here that came with the result finds the result in
        // the poll. The outcome of a join must not depend on whether the fiber finished
        // before or during it, and a join never unwinds for a fiber that has finished. A
        // cancellation that comes after this look wakes the park below, and the next turn of
        // the loop sees it.
        let cancelled = fiber && crate::cancel::is_cancelled();
        let result = if ours {
            joined.poll_take(&waker)
        } else {
            poll_outside(joined, outside, &waker)
        };
        if let Some(result) = result {
            if result.as_ref().is_err_and(JoinError::is_cancelled) {
                // A fiber cancelled with its joiner: the joiner unwinds too, rather than
                // being handed a cancellation it did not ask about.
                crate::cancel::check_current_scope();
            }
            return result;
        }
        if cancelled {
            crate::cancel::check_current();
        }
        if published.is_none() {
            published = Published::new(site, false);
        }
        if !park_fiber_checking(Check::Never) {
            park_current_until_as(Deadline::NEVER, Some(site.kind()));
        }
    }
}

/// One poll by a caller outside the runtime's fibers.
fn poll_outside<T>(
    joined: &Joined<T>,
    outside: &mut Option<Key>,
    waker: &Waker,
) -> Option<Result<T, JoinError>> {
    let shared = &joined.fiber().0.shared;
    if let Some(result) = joined.poll_take(waker) {
        if let Some(key) = outside.take() {
            shared.outside.deregister(key);
        }
        return Some(result);
    }
    if shared.outside.register(outside, waker) {
        return None;
    }
    // The runtime has shut down and every fiber has stopped: a result is there now or never.
    Some(
        joined
            .try_take()
            .unwrap_or_else(|| Err(JoinError::cancelled())),
    )
}
