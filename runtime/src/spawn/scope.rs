//! Borrowing structured scopes, with the shape of `std::thread::scope`.

use super::child_count::ChildCount;
use super::error::JoinError;
use super::join::{join_site, wait};
use super::packet::{JoinableEntry, Joined, Packet};
use super::{Builder, CancelIn, Spec};
use crate::cancel::{
    shield, CancelCause, CancelScope, Cancellation, Cancelled, ScopeOptions, Trigger,
};
use crate::fiber::Fiber;
use crate::fiber_ctx;
use crate::sched::Shared;
use crate::wait::{current_waker, park_current};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;

/// Runs `f` with a [`Scope`] in which fibers may be spawned that borrow from the caller's
/// stack, and returns only after every one of them has finished.
///
/// Children spawned with [`Scope::spawn`] may borrow anything that outlives the scope. A
/// child's panic cancels its siblings and the body (see [`Scope`]); a panic taken through
/// [`ScopedJoinHandle::join`] is the joiner's, and a panic nobody joined is re-raised here
/// after every child has finished (the first such panic, in the order they happened); a panic
/// of `f` itself takes precedence.
///
/// # Panics
///
/// Outside a fiber of a fibra runtime; and as described above.
///
/// ```
/// fibra::run(|| {
///     let mut numbers = vec![1, 2, 3, 4, 5, 6];
///     let total = std::sync::atomic::AtomicU64::new(0);
///     fibra::scope(|s| {
///         for chunk in numbers.chunks_mut(2) {
///             let total = &total;
///             s.spawn(move || {
///                 for n in chunk.iter_mut() {
///                     *n *= 10;
///                     total.fetch_add(*n, std::sync::atomic::Ordering::Relaxed);
///                 }
///             });
///         }
///     });
///     assert_eq!(numbers, [10, 20, 30, 40, 50, 60]);
///     assert_eq!(total.into_inner(), 210);
/// });
/// ```
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    scope_as("fibra::scope", f)
}

/// [`scope`], for a helper named `called` (in the panic of a call outside a fiber).
#[track_caller]
pub(super) fn scope_as<'env, F, T>(called: &'static str, f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    run_scope(called, None, f).unwrap_or_else(|_| {
        // Only a child's panic cancels a scope without token or deadline, and the panic
        // itself was taken through `join` (otherwise it would be re-raised here).
        panic!(
            "fibra::scope: a child panicked, which cancelled the scope body; the body took \
             that panic through `join` but was then unwound, so it has no value to return"
        )
    })
}

/// [`scope`] with a cancel token, a deadline and/or a timeout: when one fires, the body and
/// every child are cancelled (they unwind at their current or next cancellation point; a child
/// that has not started yet never starts, its closure dropped without running), the scope
/// waits for all of them, and the call returns `Err` saying which fired. A scope that was
/// cancelled returns `Err` even if its body got to its end first. A token fires on the thread
/// that cancels it, before [`CancelToken::cancel`](crate::CancelToken::cancel) returns.
///
/// A child's panic is not a cancellation: as in [`scope`], it cancels the siblings and the body
/// and, unless taken through a join, is re-raised here once all have ended. A cancellation of
/// an outer scope passes through.
///
/// # Panics
///
/// Outside a fiber of a fibra runtime; with a child's or the body's panic.
///
/// ```
/// use std::time::Duration;
///
/// let outcome = fibra::run(|| {
///     fibra::scope_with(fibra::ScopeOptions::new().timeout(Duration::from_millis(5)), |s| {
///         s.spawn(|| fibra::sleep(Duration::from_secs(3600)));
///         fibra::sleep(Duration::from_secs(3600));
///     })
/// });
/// assert_eq!(outcome.unwrap_err().cause(), fibra::CancelCause::Deadline);
/// ```
#[track_caller]
pub fn scope_with<'env, F, T>(options: ScopeOptions, f: F) -> Result<T, Cancelled>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    run_scope("fibra::scope_with", Some(options), f)
}

/// A scope; `called` names the public function in the panic of a call outside a fiber.
#[track_caller]
pub(super) fn run_scope<'env, F, T>(
    called: &'static str,
    options: Option<ScopeOptions>,
    f: F,
) -> Result<T, Cancelled>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let shared = crate::sched::with_worker(|local| local.map(|local| local.shared().clone()))
        .filter(|_| crate::wait::in_fiber());
    // Not `unwrap_or_else`: a closure would report its own line instead of the caller's.
    let Some(shared) = shared else {
        panic!("{called}() called outside a fiber of a fibra runtime");
    };
    let cancel = CancelScope::new(fiber_ctx::with(|ctx| ctx.cancel.clone()));
    // Not through a closure, which would end `track_caller`: the trigger's hold records the
    // caller's location.
    #[allow(clippy::manual_map)]
    let trigger = match options {
        Some(options) => Some(Trigger::start(&shared, options, &cancel)),
        None => None,
    };
    let scope = Scope {
        state: Arc::new(ScopeState::new(current_waker(), cancel.clone())),
        shared,
        _scope: PhantomData,
        _env: PhantomData,
    };
    let body = Body::enter(&scope.state.body_scope());
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
    drop(body);
    // Whatever happened to `f`, no child may outlive the borrows it was given; this wait is not
    // itself a cancellation point, and nothing may unwind out of it: the children would then
    // outlive the frames they borrow from, so that aborts.
    let waited = panic::catch_unwind(AssertUnwindSafe(|| {
        shield(|| scope.state.wait_for_children())
    }));
    if waited.is_err() {
        eprintln!(
            "fibra: a scope's wait for its children unwound; aborting, as the children may \
             still borrow from the frames it would free"
        );
        std::process::abort();
    }
    drop(trigger);
    let own = cancel
        .cancelled()
        .filter(|&(origin, _)| origin == cancel.id);
    match result {
        Err(payload) => match payload.downcast_ref::<Cancellation>() {
            Some(cancellation)
                if cancellation.origin == cancel.id
                    || cancellation.origin == scope.state.body_scope().id =>
            {
                match scope.state.take_panic() {
                    // A child's panic cancelled the body: that panic is the outcome.
                    Some(child_panic) => panic::resume_unwind(child_panic),
                    None => Err(Cancelled {
                        cause: cancellation.cause,
                    }),
                }
            }
            _ => panic::resume_unwind(payload),
        },
        Ok(value) => match scope.state.take_panic() {
            Some(child_panic) => panic::resume_unwind(child_panic),
            None => match own {
                Some((_, cause)) if cause != CancelCause::Internal => Err(Cancelled { cause }),
                _ => Ok(value),
            },
        },
    }
}

/// The cancel scope of `scope`'s body and children.
pub(crate) fn cancel_scope_of(scope: &Scope<'_, '_>) -> Arc<CancelScope> {
    scope.state.cancel.clone()
}

/// What a child's panic cancels: the body and the children each run in a cancel scope inside
/// the scope's own, so that a token or deadline still reaches both, while the cancellation a
/// panic causes can be lifted once the body has joined that panic.
struct PanicCancel {
    body: Arc<CancelScope>,
    children: Arc<CancelScope>,
    /// Child panics not yet taken through `join`.
    unjoined: usize,
}

impl PanicCancel {
    fn new(scope: &Arc<CancelScope>) -> PanicCancel {
        PanicCancel {
            body: CancelScope::new(Some(scope.clone())),
            children: CancelScope::new(Some(scope.clone())),
            unjoined: 0,
        }
    }
}

/// The scope body's membership: while it runs, the fiber is in the body's cancel scope (and
/// is woken if it is cancelled); afterwards it is back in its own.
struct Body {
    previous: Option<Arc<CancelScope>>,
}

impl Body {
    fn enter(scope: &Arc<CancelScope>) -> Body {
        scope.join(&crate::current().0);
        let previous = fiber_ctx::replace_cancel(Some(scope.clone()));
        Body { previous }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        // The scope may still wake this fiber spuriously once; every wait loops.
        drop(fiber_ctx::replace_cancel(self.previous.take()));
    }
}

/// A scope to spawn borrowing fibers in; see [`scope`].
///
/// # When a child panics
///
/// A child's panic cancels its siblings and the scope body: each unwinds at its current or
/// next cancellation point, so that a body waiting for something the child would have done
/// does not wait for ever. A [`join`](ScopedJoinHandle::join) of the panicked child is the
/// exception, and its outcome does not depend on timing:
///
/// - The join returns `Err` with the payload (see [`JoinError::into_panic`]) whether the child
///   panicked before the join or while the body waited in it; a join never unwinds for a
///   child that has finished.
/// - That panic is the caller's: the scope does not re-raise it. Once every child panic so far
///   has been taken through a join by the body, the body is no longer cancelled by them: it
///   goes on past its cancellation points and the scope returns its value, as with
///   `std::thread::scope`. Children spawned from then on run normally; siblings that were
///   cancelled stay cancelled (their joins report [`JoinError::is_cancelled`]).
/// - A panic nobody joined still makes the scope panic with it once every child has finished,
///   whether or not the body was unwound first.
///
/// ```
/// fibra::run(|| {
///     let value = fibra::scope(|s| {
///         let child = s.spawn(|| panic!("boom"));
///         let payload = child.join().unwrap_err().into_panic();
///         assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
///         // The body is not cancelled by a panic it has taken: this sleep is not unwound.
///         fibra::sleep(std::time::Duration::from_millis(1));
///         s.spawn(|| 6).join().unwrap() + 1
///     });
///     assert_eq!(value, 7);
/// });
/// ```
pub struct Scope<'scope, 'env: 'scope> {
    pub(super) state: Arc<ScopeState>,
    pub(super) shared: Arc<Shared>,
    /// Invariant in `'scope`, as `std::thread::Scope`: children cannot shorten it.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    /// Spawns a child fiber that may borrow from outside the scope.
    ///
    /// # Panics
    ///
    /// If no stack can be had for the fiber (see [`Builder::spawn_scoped`] for the
    /// non-panicking form).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let greeting = String::from("hello");
    ///     let length = fibra::scope(|s| s.spawn(|| greeting.len()).join().unwrap());
    ///     assert_eq!(length, 5);
    /// });
    /// ```
    ///
    /// # Which cancellation reaches the child
    ///
    /// The child belongs to the scope it is spawned on, `self`, wherever the spawn is made: it
    /// is cancelled when this scope is cancelled or when any scope enclosing this one is, and
    /// not by a scope nested inside this one, even if the spawning fiber runs in it. So an
    /// inner [`scope_with`](crate::scope_with) can stop an accept loop while the connections
    /// it spawned on an outer scope run on.
    ///
    /// ```
    /// use fibra::{CancelToken, ScopeOptions};
    ///
    /// fibra::run(|| {
    ///     let (go, wait) = fibra::chan::bounded::<()>(1);
    ///     let inner_stop = CancelToken::new();
    ///     let finished = fibra::scope(|outer| {
    ///         let mut on_outer = None;
    ///         let options = ScopeOptions::new().token(inner_stop.clone());
    ///         let inner = fibra::scope_with(options, |inner| {
    ///             // Spawned from the inner scope's body, on the outer scope.
    ///             on_outer = Some(outer.spawn(move || wait.recv().is_some()));
    ///             // Spawned on the inner scope: its token cancels this one.
    ///             inner.spawn(|| loop {
    ///                 fibra::park();
    ///             });
    ///             inner_stop.cancel();
    ///         });
    ///         assert!(inner.is_err(), "the inner scope was cancelled");
    ///         go.send(()).unwrap();
    ///         on_outer.unwrap().join().unwrap()
    ///     });
    ///     assert!(finished, "the inner scope's token did not reach the outer scope's child");
    ///
    ///     // A cancelled outer scope reaches the children of the scopes inside it.
    ///     let outer_stop = CancelToken::new();
    ///     let outer = fibra::scope_with(ScopeOptions::new().token(outer_stop.clone()), |_| {
    ///         fibra::scope(|inner| {
    ///             inner.spawn(|| loop {
    ///                 fibra::park();
    ///             });
    ///             outer_stop.cancel();
    ///         }); // ends only once its child has unwound
    ///     });
    ///     assert!(outer.is_err());
    /// });
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        Builder::new()
            .spawn_scoped(self, f)
            .unwrap_or_else(|error| panic!("fibra: cannot spawn a scoped fiber: {error}"))
    }

    pub(super) fn spawn_with<F, T>(
        &'scope self,
        spec: Spec,
        f: F,
    ) -> std::io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        // SAFETY: the child's borrows, and its result's, are the scope's (`'scope`); see
        // `spawn_entry` for why they outlive the entry and the packet's end.
        let entry = unsafe { JoinableEntry::new_unchecked(f) };
        self.spawn_entry(spec, super::Placement::Anywhere, entry)
    }

    /// Spawns the child that runs `entry`, placed as `placement` says.
    ///
    /// The entry may borrow for `'scope`, and its result too: that is sound because nothing
    /// they borrow is used after the scope returns. The scope returns (normally or by
    /// unwinding, see `scope`) only once `running` is zero, i.e. once every child's packet has
    /// ended, and a packet ends only after the entry has been consumed (run to its end, or
    /// dropped unstarted with the fiber's `Core`, whose packet goes after its body) and its
    /// result stored, and after the handle has let go; the result, which may borrow too, is
    /// dropped or taken out by a join before the end counts the child gone. (A `Pinned`
    /// entry, off its thread, leaks its closure rather than dropping it.) A child that never
    /// finishes (a runtime shut down under it, a fiber nobody can wake) never ends its packet,
    /// nor does one abandoned mid-run, so the scope never returns and its borrows stay valid.
    /// Leaking a `ScopedJoinHandle` keeps a packet from ending and blocks the scope, never
    /// the other way round.
    pub(super) fn spawn_entry<T: 'scope>(
        &'scope self,
        spec: Spec,
        placement: super::Placement,
        entry: JoinableEntry<T>,
    ) -> std::io::Result<ScopedJoinHandle<'scope, T>> {
        self.state.running.add();
        // The packet now counts as a child; if spawning fails, dropping it uncounts it.
        let packet = Packet::joined(Some(self.state.clone()));
        let spec = Spec {
            cancel: CancelIn::Scope(self.state.children_scope()),
            ..spec
        };
        let fiber = super::launch(&self.shared, spec, entry.entry, packet, placement)?;
        Ok(ScopedJoinHandle {
            // SAFETY: the fiber was made with a joined packet and a `JoinableEntry<T>`'s
            // entry, and this is its one handle.
            joined: unsafe { Joined::new(fiber) },
            _scope: PhantomData,
        })
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("running", &self.state.running.live())
            .finish()
    }
}

/// An owned permission to join a scoped fiber.
///
/// ```
/// fibra::run(|| {
///     fibra::scope(|s| {
///         let handle = s.spawn(|| 1 + 1);
///         assert_eq!(handle.join().unwrap(), 2);
///     });
/// });
/// ```
pub struct ScopedJoinHandle<'scope, T> {
    joined: Joined<T>,
    _scope: PhantomData<&'scope ()>,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the fiber to finish and returns its value, or why there is none.
    ///
    /// A child that panicked gives `Err` with its payload, whether it panicked before the join
    /// or while the caller waited in it. The panic is then the caller's to handle: the scope
    /// does not re-raise it, and once the body has joined every child panic so far, it is no
    /// longer cancelled by them (see [`Scope`]).
    ///
    /// ```
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let child = s.spawn(|| 20 + 1);
    ///         assert_eq!(child.join().unwrap(), 21);
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        let site = join_site(self.joined.fiber());
        let result = wait(&self.joined, &mut None, &site);
        if result.as_ref().is_err_and(JoinError::is_panic) {
            self.joined.panic_joined();
        }
        result
    }

    /// Whether the fiber has finished.
    ///
    /// ```
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let handle = s.spawn(|| ());
    ///         while !handle.is_finished() {
    ///             fibra::yield_now();
    ///         }
    ///     });
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.joined.is_finished()
    }

    /// The fiber being joined.
    ///
    /// ```
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let handle = s.spawn(|| ());
    ///         assert_eq!(handle.fiber().name(), None);
    ///     });
    /// });
    /// ```
    pub fn fiber(&self) -> &Fiber {
        self.joined.fiber()
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("fiber", self.fiber())
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// What a scope's children share with it.
pub(crate) struct ScopeState {
    /// The cancel scope of the body and the children: a token, deadline or helper such as
    /// `race` cancels this one.
    pub(crate) cancel: Arc<CancelScope>,
    /// What a child's panic cancels (see `PanicCancel`).
    panic_cancel: Mutex<PanicCancel>,
    /// The children's first cancel scope, and whether a lift has replaced it: spawns read
    /// these instead of taking the lock.
    first_children: Arc<CancelScope>,
    children_renewed: AtomicBool,
    /// Children whose packets have not ended.
    running: ChildCount,
    /// The fiber that runs the scope, woken when `running` drops to zero.
    owner: Waker,
    next_panic: AtomicU64,
    /// The earliest panic of a child that nobody joined.
    panic: Mutex<Option<(u64, Box<dyn Any + Send + 'static>)>>,
}

impl ScopeState {
    fn new(owner: Waker, cancel: Arc<CancelScope>) -> ScopeState {
        let panic_cancel = PanicCancel::new(&cancel);
        ScopeState {
            first_children: panic_cancel.children.clone(),
            children_renewed: AtomicBool::new(false),
            panic_cancel: Mutex::new(panic_cancel),
            cancel,
            running: ChildCount::new(),
            owner,
            next_panic: AtomicU64::new(0),
            panic: Mutex::new(None),
        }
    }

    fn lock_panic_cancel(&self) -> std::sync::MutexGuard<'_, PanicCancel> {
        // Never held across user code.
        self.panic_cancel.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cancel scope the body runs in now.
    fn body_scope(&self) -> Arc<CancelScope> {
        self.lock_panic_cancel().body.clone()
    }

    /// The cancel scope new children join.
    fn children_scope(&self) -> Arc<CancelScope> {
        if self.children_renewed.load(Ordering::Acquire) {
            self.lock_panic_cancel().children.clone()
        } else {
            self.first_children.clone()
        }
    }

    /// A child panicked: its siblings and the body are cancelled until the panic is joined.
    pub(crate) fn child_panicked(&self) {
        let mut panic_cancel = self.lock_panic_cancel();
        panic_cancel.unjoined += 1;
        panic_cancel.children.cancel(CancelCause::Internal);
        panic_cancel.body.cancel(CancelCause::Internal);
    }

    /// A join took a child's panic. Once every panic so far has been taken that way, and the
    /// last by the body itself (not unwinding), the cancellation the panics caused is lifted:
    /// the body and the children spawned from now on run in fresh cancel scopes (siblings
    /// already cancelled stay so).
    pub(crate) fn panic_joined(&self) {
        let fresh_body = {
            let mut panic_cancel = self.lock_panic_cancel();
            panic_cancel.unjoined -= 1;
            let body = &panic_cancel.body;
            let in_body = fiber_ctx::with(|ctx| {
                ctx.cancel
                    .as_ref()
                    .is_some_and(|scope| Arc::ptr_eq(scope, body))
            });
            let by_panic = body
                .cancelled()
                .is_some_and(|(origin, _)| origin == body.id);
            // An unwinding body keeps its scope: its unwind is matched against it.
            if panic_cancel.unjoined > 0 || !in_body || !by_panic || std::thread::panicking() {
                return;
            }
            *panic_cancel = PanicCancel::new(&self.cancel);
            self.children_renewed.store(true, Ordering::Release);
            panic_cancel.body.clone()
        };
        let me = crate::current();
        fresh_body.join(&me.0);
        drop(fiber_ctx::replace_cancel(Some(fresh_body.clone())));
        me.0.resync_cancel_hint(Some(&fresh_body));
    }

    pub(crate) fn next_panic_order(&self) -> u64 {
        self.next_panic.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn record_panic(&self, order: u64, payload: Box<dyn Any + Send + 'static>) {
        let replaced = {
            let mut slot = self.panic.lock().unwrap_or_else(|p| p.into_inner());
            match &*slot {
                Some((earlier, _)) if *earlier < order => return,
                _ => slot.replace((order, payload)),
            }
        };
        // Dropped once the lock is released (as `payload` is on the early return): a payload's
        // drop may park its fiber, and a sibling that panics on the same worker meanwhile would
        // stop the worker's thread at this lock.
        drop(replaced);
    }

    /// A child's packet has ended: nothing of the child touches the scope's borrows any more.
    pub(crate) fn child_gone(&self) {
        if self.running.gone() {
            self.owner.wake_by_ref();
        }
    }

    fn wait_for_children(&self) {
        while !self.running.all_gone() {
            park_current();
        }
    }

    fn take_panic(&self) -> Option<Box<dyn Any + Send + 'static>> {
        let mut slot = self.panic.lock().unwrap_or_else(|p| p.into_inner());
        slot.take().map(|(_, payload)| payload)
    }
}
