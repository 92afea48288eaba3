//! [`Once`], and the run-once protocol under it, [`OnceCell`](crate::OnceCell) and
//! [`Lazy`](crate::Lazy): one atomic word says incomplete, complete, poisoned, or which caller
//! is running the initializer; the others wait on an [`EventCount`] for it to change.

use crate::event_count::{Announced, EventCount};
use crate::owner::Owner;
use fibra_runtime::wait::{Deadline, WaitKind, WaitSite};
use std::any::Any;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{ready, Context, Poll};

const INCOMPLETE: u64 = 0;
const COMPLETE: u64 = 1;
const POISONED: u64 = 2;
// Any other value: the `Owner` running the initializer (all are at least `Owner::MIN`).
const _: () = assert!(Owner::MIN > POISONED);

/// What an initializer that panics leaves behind (a cancelled one always leaves the state
/// incomplete).
#[derive(Clone, Copy)]
pub(crate) enum OnPanic {
    /// Incomplete: a later caller runs its own initializer.
    Retry,
    /// Poisoned for good: every later caller panics, naming the type `what`.
    Poison { what: &'static str },
}

pub(crate) struct OnceState {
    word: AtomicU64,
    changed: EventCount,
}

/// What a caller found when it tried to claim the run.
enum Attempt<'a> {
    /// It runs the initializer.
    Claimed(Claim<'a>),
    /// A run has completed.
    Complete,
    /// Another caller runs the initializer.
    Running,
}

impl OnceState {
    const_unless_loom! {
        pub(crate) fn new() -> OnceState {
            OnceState {
                word: AtomicU64::new(INCOMPLETE),
                changed: EventCount::new(),
            }
        }
    }

    /// Whether an initializer has completed; what it wrote is then visible.
    pub(crate) fn is_complete(&self) -> bool {
        self.word.load(Ordering::Acquire) == COMPLETE
    }

    /// Runs `init` unless an initializer has completed; parks while another caller runs one.
    /// An `Err` from `init`, or its caller's cancellation, leaves it incomplete. Returns
    /// `init`'s result, or `Ok` if someone else completed. A wait is recorded at the caller's
    /// location.
    ///
    /// Panics if poisoned, or if `init` (directly or not) calls back into the same state.
    #[track_caller]
    pub(crate) fn run<E>(
        &self,
        on_panic: OnPanic,
        init: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        if self.is_complete() {
            return Ok(());
        }
        self.run_slow(on_panic, init)
    }

    #[cold]
    #[track_caller]
    fn run_slow<E>(
        &self,
        on_panic: OnPanic,
        init: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let me = Owner::current();
        loop {
            match self.try_claim(on_panic, me) {
                Attempt::Claimed(mut claim) => {
                    let result = claim.run(init);
                    claim.finish(result.is_ok());
                    return result;
                }
                Attempt::Complete => return Ok(()),
                Attempt::Running => {
                    let site = WaitSite::new(WaitKind::Once, self);
                    // Without a deadline the wait cannot time out.
                    let _ = self
                        .changed
                        .wait_until(|| !self.is_running(), Deadline::NEVER, &site);
                }
            }
        }
    }

    /// A future that claims the run for `init` and runs it, or waits for the caller running
    /// one; see [`RunAsync`].
    pub(crate) fn run_async<I: Initializer>(
        &self,
        on_panic: OnPanic,
        init: I,
    ) -> RunAsync<'_, I, I::Future> {
        RunAsync {
            once: self,
            on_panic,
            me: Owner::fresh(),
            step: Step::Start(init),
        }
    }

    /// Claims the run for `me` if nobody has claimed or completed it.
    ///
    /// Panics if poisoned, or if `me` is running the initializer already.
    fn try_claim(&self, on_panic: OnPanic, me: Owner) -> Attempt<'_> {
        let me = me.as_u64();
        match self
            .word
            .compare_exchange(INCOMPLETE, me, Ordering::Acquire, Ordering::Acquire)
        {
            Ok(_) => Attempt::Claimed(Claim {
                once: Some(self),
                on_panic,
            }),
            Err(COMPLETE) => Attempt::Complete,
            Err(POISONED) => {
                let what = match on_panic {
                    OnPanic::Poison { what } => what,
                    OnPanic::Retry => unreachable!("only a poisoning state is poisoned"),
                };
                panic!("{what} instance has previously been poisoned");
            }
            Err(owner) if owner == me => panic!(
                "recursive initialization: the initializer called back into the \
                 once-cell it is initializing, which would deadlock"
            ),
            Err(_) => Attempt::Running,
        }
    }

    /// Publishes the initializer's outcome and wakes the waiters.
    fn publish(&self, to: u64) {
        self.word.store(to, Ordering::Release);
        self.changed.advance();
    }

    fn is_running(&self) -> bool {
        self.word.load(Ordering::Acquire) >= Owner::MIN
    }
}

/// The right to run the initializer, held by the one caller that claimed it. Dropping it
/// unfinished (the caller's future was dropped, or its fiber unwound) leaves the state
/// incomplete, so that a waiter runs its own initializer.
pub(crate) struct Claim<'a> {
    /// `None` once the outcome is published.
    once: Option<&'a OnceState>,
    on_panic: OnPanic,
}

impl Claim<'_> {
    /// Runs `step`: the initializer, or a part of it (one poll of its future). If it unwinds,
    /// publishes what `on_panic` (or a cancellation) leaves, then goes on unwinding.
    fn run<R>(&mut self, step: impl FnOnce() -> R) -> R {
        match panic::catch_unwind(AssertUnwindSafe(step)) {
            Ok(result) => result,
            Err(payload) => {
                self.publish(after_unwind(self.on_panic, &*payload));
                panic::resume_unwind(payload);
            }
        }
    }

    /// Publishes the initializer's outcome: complete (what it wrote is then visible), or
    /// incomplete (it failed: a later caller runs its own).
    pub(crate) fn finish(mut self, complete: bool) {
        self.publish(if complete { COMPLETE } else { INCOMPLETE });
    }

    fn publish(&mut self, to: u64) {
        if let Some(once) = self.once.take() {
            once.publish(to);
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.publish(INCOMPLETE);
    }
}

/// How a [`RunAsync`] starts its initializer once it has claimed the run.
pub(crate) trait Initializer {
    type Future: Future;

    /// Starts the initializer. Runs inside [`Claim::run`], so it may run the whole initializer
    /// synchronously.
    fn start(self) -> Self::Future;
}

impl<F: FnOnce() -> Fut, Fut: Future> Initializer for F {
    type Future = Fut;

    fn start(self) -> Fut {
        self()
    }
}

enum Step<'a, I, Fut> {
    /// Not claimed yet: the next poll tries.
    Start(I),
    /// Another caller runs the initializer: waiting for it to finish.
    Waiting(I, Announced<'a, OnceState>),
    /// Claimed: polling the initializer. Boxed, to poll it pinned without projecting the pin;
    /// a state is initialized once, so this allocates once (and again only after a failure).
    Running(Claim<'a>, Pin<Box<Fut>>),
    Done,
}

/// The async form of [`OnceState::run`]: the first poll tries to claim the run; the winner
/// starts its initializer and polls it, the others wait for the winner to finish and then try
/// again. Ready with `None` once a run has completed (this one's initializer unused), or with
/// the initializer's output and the [`Claim`], whose holder stores the output and finishes.
///
/// Dropped while its initializer runs, it leaves the state incomplete (the [`Claim`]'s drop). Its
/// owner is its own number, so a recursive call from inside its initializer — which runs in a
/// poll, on whatever fiber or thread polls it — cannot be told from a wait for another caller:
/// it waits for itself, for ever.
///
/// Panics, when polled, if the state is poisoned, and as the initializer panics.
pub(crate) struct RunAsync<'a, I, Fut> {
    once: &'a OnceState,
    on_panic: OnPanic,
    me: Owner,
    step: Step<'a, I, Fut>,
}

// The initializer is never pinned (it is moved out to start it) and its future is boxed.
impl<I, Fut> Unpin for RunAsync<'_, I, Fut> {}

/// What a [`RunAsync`] resolves to.
pub(crate) type Outcome<'a, T> = Option<(T, Claim<'a>)>;

impl<'a, I: Initializer> Future for RunAsync<'a, I, I::Future> {
    type Output = Outcome<'a, <I::Future as Future>::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            match std::mem::replace(&mut this.step, Step::Done) {
                Step::Start(init) => match this.once.try_claim(this.on_panic, this.me) {
                    Attempt::Claimed(mut claim) => {
                        let init = claim.run(|| Box::pin(init.start()));
                        this.step = Step::Running(claim, init);
                    }
                    Attempt::Complete => return Poll::Ready(None),
                    Attempt::Running => {
                        let wait = Announced::new(&this.once.changed, this.once, |once| {
                            !once.is_running()
                        });
                        this.step = Step::Waiting(init, wait);
                    }
                },
                Step::Waiting(init, mut wait) => {
                    if wait.poll(cx).is_pending() {
                        this.step = Step::Waiting(init, wait);
                        return Poll::Pending;
                    }
                    this.step = Step::Start(init);
                }
                Step::Running(mut claim, mut init) => match claim.run(|| init.as_mut().poll(cx)) {
                    Poll::Ready(output) => return Poll::Ready(Some((output, claim))),
                    Poll::Pending => {
                        this.step = Step::Running(claim, init);
                        return Poll::Pending;
                    }
                },
                Step::Done => panic!("a run-once future polled after completion"),
            }
        }
    }
}

/// The state an unwinding initializer leaves. A cancellation is not a failure of the
/// initializer — the caller's scope gave up on it — so it leaves the state incomplete and a
/// waiter runs the initializer instead; a panic follows `on_panic`.
fn after_unwind(on_panic: OnPanic, payload: &(dyn Any + Send)) -> u64 {
    match on_panic {
        _ if fibra_runtime::is_cancellation(payload) => INCOMPLETE,
        OnPanic::Retry => INCOMPLETE,
        OnPanic::Poison { .. } => POISONED,
    }
}

/// Runs a one-time initialization: the first [`call_once`](Self::call_once) runs its closure,
/// concurrent callers park until it has finished, later ones return at once.
///
/// If the closure panics the `Once` is poisoned for good: every later `call_once` panics. A
/// closure that unwinds because its fiber was cancelled (a timeout, a cancelled scope) does not
/// poison it: the `Once` stays incomplete, and the next caller — a fiber parked on it
/// meanwhile, or a later one — runs its own closure.
///
/// ```
/// use fibra::sync::Once;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// static INIT: Once = Once::new();
/// static RUNS: AtomicUsize = AtomicUsize::new(0);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..4 {
///             s.spawn(|| INIT.call_once(|| { RUNS.fetch_add(1, Ordering::SeqCst); }));
///         }
///     });
/// });
/// assert_eq!(RUNS.load(Ordering::SeqCst), 1);
/// assert!(INIT.is_completed());
/// ```
pub struct Once {
    state: OnceState,
}

const ONCE: OnPanic = OnPanic::Poison { what: "Once" };

impl Once {
    const_unless_loom! {
        /// A `Once` that has not run.
        ///
        /// ```
        /// assert!(!fibra::sync::Once::new().is_completed());
        /// ```
        pub fn new() -> Once {
            Once {
                state: OnceState::new(),
            }
        }
    }

    /// Runs `f` if no call has completed yet, parking while another caller runs its closure.
    ///
    /// # Panics
    ///
    /// If a closure panicked before (the `Once` is poisoned), and if `f` itself calls
    /// `call_once` on the same `Once` (which would deadlock).
    ///
    /// ```
    /// let once = fibra::sync::Once::new();
    /// let mut runs = 0;
    /// once.call_once(|| runs += 1);
    /// once.call_once(|| runs += 1);
    /// assert_eq!(runs, 1);
    /// ```
    ///
    /// ```should_panic
    /// let once = fibra::sync::Once::new();
    /// let _ = std::panic::catch_unwind(|| once.call_once(|| panic!("boom")));
    /// once.call_once(|| {}); // poisoned
    /// ```
    #[track_caller]
    pub fn call_once(&self, f: impl FnOnce()) {
        let _: Result<(), Infallible> = self.state.run(ONCE, || {
            f();
            Ok(())
        });
    }

    /// A future that runs the future `f` returns if no call has completed yet, or waits while
    /// another caller (a fiber in [`call_once`](Self::call_once), or a future) runs its
    /// closure. `f` is called only by the caller that runs it. The wait begins when the
    /// future is first polled.
    ///
    /// If `f` or its future panics, the `Once` is poisoned, as with `call_once`. Dropping the
    /// future while its closure's future runs leaves the `Once` incomplete: a waiter runs its
    /// own closure instead.
    ///
    /// A future is not its polling fiber or thread, so a call back into this `Once` from inside
    /// `f`'s future, blocking or async, is not detected as recursion: it waits for itself, for
    /// ever.
    ///
    /// # Panics
    ///
    /// When polled, if a closure panicked before (the `Once` is poisoned).
    ///
    /// ```
    /// use fibra::sync::Once;
    ///
    /// static SETUP: Once = Once::new();
    /// futures::executor::block_on(async {
    ///     SETUP.call_once_async(|| async { /* connect, load, ... */ }).await;
    ///     SETUP.call_once_async(|| async { unreachable!("done already") }).await;
    /// });
    /// assert!(SETUP.is_completed());
    /// ```
    pub fn call_once_async<F, Fut>(&self, f: F) -> CallOnce<'_, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = ()>,
    {
        CallOnce {
            run: self.state.run_async(ONCE, f),
        }
    }

    /// Whether a call has completed.
    ///
    /// ```
    /// let once = fibra::sync::Once::new();
    /// once.call_once(|| {});
    /// assert!(once.is_completed());
    /// ```
    pub fn is_completed(&self) -> bool {
        self.state.is_complete()
    }
}

impl Default for Once {
    fn default() -> Self {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once")
            .field("completed", &self.is_completed())
            .finish_non_exhaustive()
    }
}

/// The future of [`Once::call_once_async`].
///
/// Dropped while it initialises, it lets another caller take over; forgotten
/// (`std::mem::forget`) after its first poll, it keeps the initialisation claimed for
/// good, and every other caller waits for ever (as with tokio's `OnceCell`).
#[must_use = "futures do nothing unless polled"]
pub struct CallOnce<'a, F, Fut> {
    run: RunAsync<'a, F, Fut>,
}

impl<F, Fut> Future for CallOnce<'_, F, Fut>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(((), claim)) = ready!(Pin::new(&mut self.run).poll(cx)) {
            claim.finish(true);
        }
        Poll::Ready(())
    }
}

impl<F, Fut> fmt::Debug for CallOnce<'_, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOnce").finish_non_exhaustive()
    }
}
