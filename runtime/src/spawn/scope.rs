//! Borrowing structured scopes, with the shape of `std::thread::scope`.

use super::child_count::ChildCount;
use super::error::JoinError;
use super::join::{join_site, wait};
use super::packet::Packet;
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;

/// Runs `f` with a [`Scope`] in which fibers may be spawned that borrow from the caller's
/// stack, and returns only after every one of them has finished.
///
/// Children spawned with [`Scope::spawn`] may borrow anything that outlives the scope. If a
/// child panics and is not joined, its panic is re-raised here after every child has finished
/// (the first such panic, in the order they happened); a panic of `f` itself takes precedence.
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
    run_scope(None, f).unwrap_or_else(|_| {
        // Only a child's panic cancels a scope without token or deadline, and the panic
        // itself was taken through `join` (otherwise it would be re-raised here).
        panic!(
            "fibra::scope: a child panicked, which cancelled the scope body; the body took \
             that panic through `join` but was then unwound, so it has no value to return"
        )
    })
}

/// [`scope`] with a cancel token, a deadline and/or a timeout: when one fires, the body and
/// every child are cancelled (they unwind at their current or next cancellation point), the
/// scope waits for all of them, and the call returns `Err` saying which fired. A scope that was
/// cancelled returns `Err` even if its body got to its end first.
///
/// A child's panic is not a cancellation: as in [`scope`], it cancels the siblings and the body
/// and is re-raised here once all have ended. A cancellation of an outer scope passes through.
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
    run_scope(Some(options), f)
}

#[track_caller]
pub(super) fn run_scope<'env, F, T>(options: Option<ScopeOptions>, f: F) -> Result<T, Cancelled>
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let shared = crate::sched::with_worker(|local| local.map(|local| local.shared().clone()))
        .filter(|_| crate::wait::in_fiber())
        .unwrap_or_else(|| panic!("fibra::scope() called outside a fiber of a fibra runtime"));
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
    let body = Body::enter(&cancel);
    let result = panic::catch_unwind(AssertUnwindSafe(|| f(&scope)));
    drop(body);
    // Whatever happened to `f`, no child may outlive the borrows it was given; this wait is not
    // itself a cancellation point.
    shield(|| scope.state.wait_for_children());
    drop(trigger);
    let own = cancel
        .cancelled()
        .filter(|&(origin, _)| origin == cancel.id);
    match result {
        Err(payload) => match payload.downcast_ref::<Cancellation>() {
            Some(cancellation) if cancellation.origin == cancel.id => {
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

/// The scope body's membership: while it runs, the fiber is in the scope's cancel scope (and
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
        self.state.running.add();
        // The packet now counts as a child; if spawning fails, dropping it uncounts it.
        let packet = Arc::new(Packet::new(Some(self.state.clone())));
        let entry = super::entry(f, packet.clone());
        // SAFETY: erasing `'scope` from the entry is sound because nothing it borrows is used
        // after the scope returns. The scope returns (normally or by unwinding, see `scope`)
        // only once `running` is zero, i.e. once every child's packet has been dropped. The
        // entry owns one packet reference and drops it only after `f` has been consumed (run
        // to its end or dropped unstarted) and the result stored; the result, which may borrow
        // too, is dropped or taken out by a join before the packet's drop counts the child
        // gone. A child that never finishes (a runtime shut down under it, a fiber nobody can
        // wake) keeps its packet forever, so the scope never returns and its borrows stay
        // valid. Leaking a `ScopedJoinHandle` keeps a packet alive and blocks the scope, never
        // the other way round.
        let entry: super::Entry = unsafe {
            std::mem::transmute::<
                Box<dyn FnOnce(Result<(), crate::stack::StackError>) + Send + 'scope>,
                super::Entry,
            >(entry)
        };
        let spec = Spec {
            cancel: CancelIn::Scope(self.state.cancel.clone()),
            ..spec
        };
        let fiber = super::launch(&self.shared, spec, entry, super::Placement::Anywhere)?;
        Ok(ScopedJoinHandle {
            packet,
            fiber,
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
    packet: Arc<Packet<T>>,
    fiber: Fiber,
    _scope: PhantomData<&'scope ()>,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the fiber to finish and returns its value, or why there is none. A panic
    /// returned here is the caller's to handle: the scope will not re-raise it. This holds
    /// whether the child panicked before or during the join: a child's panic also cancels the
    /// scope body, but a join whose child has finished returns its result first; the body's
    /// next cancellation point then unwinds it.
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
        let site = join_site(&self.fiber);
        wait(&self.packet, &self.fiber.0.shared, &mut None, &site)
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
        self.packet.is_finished()
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
        &self.fiber
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("fiber", &self.fiber)
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// What a scope's children share with it.
pub(crate) struct ScopeState {
    /// The cancel scope of the body and the children.
    pub(crate) cancel: Arc<CancelScope>,
    /// Children whose packets still exist.
    running: ChildCount,
    /// The fiber that runs the scope, woken when `running` drops to zero.
    owner: Waker,
    next_panic: AtomicU64,
    /// The earliest panic of a child that nobody joined.
    panic: Mutex<Option<(u64, Box<dyn Any + Send + 'static>)>>,
}

impl ScopeState {
    fn new(owner: Waker, cancel: Arc<CancelScope>) -> ScopeState {
        ScopeState {
            cancel,
            running: ChildCount::new(),
            owner,
            next_panic: AtomicU64::new(0),
            panic: Mutex::new(None),
        }
    }

    pub(crate) fn next_panic_order(&self) -> u64 {
        self.next_panic.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn record_panic(&self, order: u64, payload: Box<dyn Any + Send + 'static>) {
        let mut slot = self.panic.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((earlier, _)) if *earlier < order => {}
            _ => *slot = Some((order, payload)),
        }
    }

    /// A child's packet is gone: nothing of the child touches the scope's borrows any more.
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
