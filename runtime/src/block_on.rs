//! Futures from fibers: polling in place, parking between polls.

use crate::diag::Published;
use crate::wait::{
    current_waker, park_current_until, with_waker, Deadline, TimedOut, WaitKind, WaitSite,
};
use fibra_driver::HoldKind;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Runs `fut` to completion in the calling fiber: polls it in place with the fiber's waker and
/// parks the fiber between polls (on a plain thread, parks the thread). The future runs on the
/// fiber's own worker, which is inside the driver's tokio context, so it needs no `Send` and
/// any tokio-based library works. A future that is ready at its first poll costs no park; one
/// that wakes itself while polled (as tokio's `yield_now` does here) lets the worker's other
/// fibers run before it is polled again. Every call is a cancellation point, ready or not.
///
/// `block_on` may be nested (a future that itself calls `block_on`); a panic in the future
/// unwinds into the caller.
///
/// Do not hold a tokio runtime's context guard (`tokio::runtime::Handle::enter`) across this
/// or any other wait of a fiber: other fibers of the worker run meanwhile and enter and leave
/// contexts of their own, and tokio requires its guards to be dropped in reverse order. Enter
/// a context inside the future instead, or use [`Handle::block_on`](crate::Handle::block_on).
///
/// ```
/// fibra::run(|| {
///     let value = fibra::block_on(async {
///         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///         7
///     });
///     assert_eq!(value, 7);
/// });
/// ```
#[track_caller]
#[inline]
pub fn block_on<F: Future>(fut: F) -> F::Output {
    block_on_as(WaitKind::BlockOn, fut)
}

/// [`block_on`], recording a wait of `kind`.
#[track_caller]
#[inline]
pub(crate) fn block_on_as<F: Future>(kind: WaitKind, fut: F) -> F::Output {
    block_on_until_as(kind, fut, Deadline::NEVER, Nesting::Any)
        .unwrap_or_else(|TimedOut| unreachable!("a wait without a deadline never times out"))
}

/// [`block_on`], giving up at `deadline` (an `Instant` or a [`Deadline`]) with
/// [`TimedOut`] if `fut` is not ready by then; `fut` is dropped unfinished. A future ready at
/// its first poll is returned whatever the deadline.
///
/// ```
/// use fibra::{Deadline, TimedOut};
/// use std::time::Duration;
///
/// fibra::run(|| {
///     let soon = Deadline::after(Duration::from_millis(1));
///     assert_eq!(fibra::block_on_until(std::future::pending::<()>(), soon), Err(TimedOut));
///     assert_eq!(fibra::block_on_until(async { 7 }, Deadline::NEVER), Ok(7));
/// });
/// ```
///
/// # Errors
///
/// [`TimedOut`] when `deadline` passed before `fut` was ready.
#[track_caller]
#[inline]
pub fn block_on_until<F: Future>(
    fut: F,
    deadline: impl Into<Deadline>,
) -> Result<F::Output, TimedOut> {
    block_on_until_as(WaitKind::BlockOn, fut, deadline.into(), Nesting::Any)
}

/// [`block_on_until`] for a *leaf* future, one whose `poll` never waits itself (calls no
/// `block_on`, parks nothing, takes no fibra lock or channel that may block): a reactor's
/// readiness future, a oneshot receiver. Such a future keeps the fiber's own waker from its
/// first poll, so a wait costs no allocation and no second poll before the park. The socket
/// waits of fibra's I/O crates use it.
///
/// A future that does wait inside `poll` may consume the fiber's wake-up there and leave
/// this call parked until the next one (never unsound, but a hang); use [`block_on_until`]
/// for those.
///
/// # Errors
///
/// [`TimedOut`] when `deadline` passed before `fut` was ready.
#[doc(hidden)]
#[track_caller]
#[inline]
pub fn block_on_leaf_until<F: Future>(
    fut: F,
    deadline: impl Into<Deadline>,
) -> Result<F::Output, TimedOut> {
    block_on_until_as(WaitKind::BlockOn, fut, deadline.into(), Nesting::Leaf)
}

/// Whether a future's `poll` may itself wait (see [`block_on_leaf_until`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Nesting {
    Any,
    Leaf,
}

/// [`block_on_until`], recording a wait of `kind`.
#[track_caller]
#[inline]
fn block_on_until_as<F: Future>(
    kind: WaitKind,
    fut: F,
    deadline: Deadline,
    nesting: Nesting,
) -> Result<F::Output, TimedOut> {
    // A cancellation point costing a reduction even when `fut` is ready at once, so a loop of
    // ready waits can be cancelled and shares its worker. Before the poll: a cancelled wait
    // takes nothing from its future.
    crate::checkpoint();
    let mut fut = pin!(fut);
    if let Poll::Ready(value) = poll_in_place(fut.as_mut()) {
        return Ok(value);
    }
    wait_for(kind, fut, deadline, nesting)
}

/// Polls `fut` with the caller's own waker, borrowed.
#[inline]
fn poll_in_place<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    with_waker(|waker| fut.poll(&mut Context::from_waker(waker)))
}

/// The rest of [`block_on_until_as`] once the first poll returned `Pending`; kept out of
/// line so the ready path stays small at every call site.
#[track_caller]
#[inline(never)]
#[cold]
fn wait_for<F: Future>(
    kind: WaitKind,
    mut fut: Pin<&mut F>,
    deadline: Deadline,
    nesting: Nesting,
) -> Result<F::Output, TimedOut> {
    // One hold for the wait, named for what the future is.
    let _hold = crate::holds::take(match kind {
        WaitKind::Blocking => HoldKind::Blocking,
        _ => HoldKind::Future,
    });
    let timed = deadline.instant().is_some();
    if nesting == Nesting::Leaf {
        // A leaf future's poll never waits itself, so the wait is published once for all.
        let _published = Published::new(&WaitSite::new(kind, &*fut), timed);
        // The future holds the caller's waker from the first poll, and nothing but its wake
        // takes the unpark token meant for this loop: any return from the park is worth a poll.
        loop {
            if deadline.has_passed() {
                return Err(TimedOut);
            }
            park_current_until(deadline);
            if let Poll::Ready(value) = poll_in_place(fut.as_mut()) {
                return Ok(value);
            }
        }
    }
    // From here on the future gets a waker of this call's own: a nested `block_on` that parks
    // may consume the fiber's unpark token meant for us, but not our flag.
    let wake = Arc::new(Flagged {
        woken: AtomicBool::new(false),
        unpark: current_waker(),
    });
    let waker = Waker::from(wake.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = fut.as_mut().poll(&mut cx) {
            return Ok(value);
        }
        if wake.woken.swap(false, Ordering::Acquire) {
            // Woken during its own poll: most likely by itself, asking to let others run
            // (tokio's `yield_now` off tokio's workers does). Polling again at once would keep
            // the worker's other fibers, and any cancellation, out for as long as it asks.
            if deadline.has_passed() {
                return Err(TimedOut);
            }
            let_others_run();
            continue;
        }
        // Published only while parked here: a poll may wait itself (a nested `block_on`, a
        // lock), and while it does, that wait is what the fiber waits on.
        let _published = Published::new(&WaitSite::new(kind, &*fut), timed);
        loop {
            if deadline.has_passed() {
                return Err(TimedOut);
            }
            park_current_until(deadline);
            if wake.woken.swap(false, Ordering::Acquire) {
                break;
            }
        }
    }
}

/// Yields the caller (a fiber to its worker's other fibers, a thread to the OS) as a
/// cancellation point: a cancellation that came meanwhile unwinds here.
#[cold]
#[inline(never)]
fn let_others_run() {
    crate::yield_now();
    crate::cancel::check_current();
}

/// A waker that records its wake before unparking the fiber or thread.
struct Flagged {
    woken: AtomicBool,
    unpark: Waker,
}

impl Wake for Flagged {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.unpark.wake_by_ref();
    }
}

/// `fut.wait()`: [`block_on`] as a method, so fiber code reads in order.
///
/// ```
/// use fibra::WaitExt;
///
/// fibra::run(|| {
///     let (tx, rx) = tokio::sync::oneshot::channel();
///     fibra::spawn(move || tx.send(5).unwrap());
///     assert_eq!(rx.wait().unwrap(), 5);
/// });
/// ```
pub trait WaitExt: Future + Sized {
    /// Runs the future to completion in the calling fiber (see [`block_on`]).
    #[track_caller]
    fn wait(self) -> Self::Output {
        block_on(self)
    }
}

impl<F: Future> WaitExt for F {}
