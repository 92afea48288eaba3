//! Spawning fibers: the per-spawn [`Builder`], the free functions, join handles and scopes.

mod child_count;
mod detach;
mod error;
mod helpers;
mod join;
mod packet;
mod pinned;
mod race;
mod scope;
mod scope_local;
mod timeout;
mod turns;

pub use detach::detach;
pub(crate) use detach::Supervisor;
pub(crate) use error::panic_message;
pub use error::JoinError;
pub use helpers::{parallel_chunks, parallel_map, parallel_map_limited};
pub use join::JoinHandle;
pub use scope::{scope, scope_with, Scope, ScopedJoinHandle};
pub use timeout::{timeout, Elapsed};

use crate::cancel::{self, CancelGroup, CancelScope};
use crate::fiber::{Core, Entry, Fiber};
use crate::fiber_ctx;
use crate::runtime::Handle;
use crate::sched::{with_worker, Shared};
use crate::stack::{self, StackError};
use crate::wait::{charge_and_maybe_yield, in_fiber};
pub(crate) use packet::{complete, JoinableEntry, Joined, Packet};
pub(crate) use pinned::Pinned;
pub use race::{__race_macro, race, race_with, Racers};
use std::io;
use std::panic::{self, AssertUnwindSafe, Location};
use std::sync::Arc;

/// Configures one spawn, like [`std::thread::Builder`]: a name (for diagnostics and the stack
/// overflow report) and a stack size.
///
/// ```
/// fibra::run(|| {
///     let handle = fibra::Builder::new()
///         .name("parser")
///         .stack_size(256 * 1024)
///         .spawn(|| fibra::current().name().map(str::to_owned))
///         .unwrap();
///     assert_eq!(handle.join().unwrap().as_deref(), Some("parser"));
/// });
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a Builder does nothing until one of its spawn methods is called"]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
}

/// A spawn's settings, resolved at the spawn call.
pub(crate) struct Spec {
    name: Option<Arc<str>>,
    stack_size: Option<usize>,
    location: &'static Location<'static>,
    pub(crate) cancel: CancelIn,
}

/// Which cancel scope a new fiber belongs to.
pub(crate) enum CancelIn {
    /// The spawner's current one.
    Inherit,
    /// This one (a scope's children, detached fibers under the supervisor).
    Scope(Arc<CancelScope>),
    /// A scope of its own inside `parent`, which its [`JoinHandle::abort`] cancels. The fiber is
    /// a member of `parent` (which wakes it when a cancellation comes through it), not of its
    /// own scope, whose only canceller, `abort`, wakes it directly.
    Own {
        own: Arc<CancelScope>,
        parent: Option<Arc<CancelScope>>,
    },
}

impl Spec {
    /// No name, the default stack, the spawner's cancel scope.
    pub(crate) fn at(location: &'static Location<'static>) -> Spec {
        Spec {
            name: None,
            stack_size: None,
            location,
            cancel: CancelIn::Inherit,
        }
    }

    pub(crate) fn main(location: &'static Location<'static>, stack_size: usize) -> Spec {
        Spec {
            name: Some(Arc::from("main")),
            stack_size: Some(stack_size),
            location,
            cancel: CancelIn::Inherit,
        }
    }
}

impl Builder {
    /// A builder with no name and the runtime's default stack size.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the fiber.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let h = fibra::Builder::new().name("x").spawn(|| ()).unwrap();
    ///     assert_eq!(h.fiber().name(), Some("x"));
    ///     h.join().unwrap();
    /// });
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Sets the usable stack size in bytes (rounded up to whole pages, at least 16 KiB).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let h = fibra::Builder::new().stack_size(64 * 1024).spawn(|| 1).unwrap();
    ///     assert_eq!(h.join().unwrap(), 1);
    /// });
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    #[track_caller]
    fn spec(self) -> Spec {
        Spec {
            name: self.name.map(Arc::from),
            stack_size: self.stack_size,
            location: Location::caller(),
            cancel: CancelIn::Inherit,
        }
    }

    /// Spawns a fiber on the current runtime; any worker may start it.
    ///
    /// # Errors
    ///
    /// When no stack can be had for it (the `vm.max_map_count` limit with `mprotect` guards,
    /// or the address-space bound on live stacks); the error says what to change.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let h = fibra::Builder::new().spawn(|| "hi").unwrap();
    ///     assert_eq!(h.join().unwrap(), "hi");
    /// });
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.spawn_current("fibra::Builder::spawn", f)
    }

    /// [`Builder::spawn`], for a function named `called` in the panic of a call outside a
    /// runtime.
    #[track_caller]
    fn spawn_current<F, T>(self, called: &'static str, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let handle = current_handle(called);
        self.spawn_on(&handle, f)
    }

    /// Spawns a fiber on the runtime of `handle`, from any thread.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// let handle = runtime.handle();
    /// let total = runtime.block_on(|| {
    ///     let h = fibra::Builder::new().spawn_on(&handle, || 2).unwrap();
    ///     h.join().unwrap()
    /// });
    /// assert_eq!(total, 2);
    /// ```
    #[track_caller]
    pub fn spawn_on<F, T>(self, handle: &Handle, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        launch_joinable(
            &handle.shared,
            self.spec(),
            Placement::Anywhere,
            JoinableEntry::new(f),
        )
    }

    /// Spawns a fiber on the current runtime in `group` instead of the spawner's cancel scope:
    /// it unwinds when the group is cancelled, and not when the spawner's scope is.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// fibra::run(|| {
    ///     let group = fibra::CancelGroup::new();
    ///     let token = fibra::CancelToken::new();
    ///     let mut worker = None;
    ///     let options = fibra::ScopeOptions::new().token(token.clone());
    ///     let outcome = fibra::scope_with(options, |_| {
    ///         let spawn = fibra::Builder::new().spawn_in(&group, || {
    ///             fibra::sleep(Duration::from_millis(2));
    ///             7
    ///         });
    ///         worker = Some(spawn.unwrap());
    ///         token.cancel();
    ///         fibra::sleep(Duration::from_secs(3600)); // unwound by the token
    ///     });
    ///     assert!(outcome.is_err());
    ///     // The spawner's scope was cancelled, not the group: the worker ran to its end.
    ///     assert_eq!(worker.unwrap().join().unwrap(), 7);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_in<F, T>(self, group: &CancelGroup, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let handle = current_handle("fibra::Builder::spawn_in");
        let spec = Spec {
            cancel: CancelIn::Scope(group.scope().clone()),
            ..self.spec()
        };
        launch_joinable(
            &handle.shared,
            spec,
            Placement::Anywhere,
            JoinableEntry::new(f),
        )
    }

    /// Spawns a fiber that stays on the current worker and so needs no `Send`.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// # Panics
    ///
    /// Outside a fiber of a fibra runtime.
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// fibra::run(|| {
    ///     let shared = Rc::new(5);
    ///     let h = fibra::Builder::new().spawn_local(move || *shared + 1).unwrap();
    ///     assert_eq!(h.join().unwrap(), 6);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_local<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        self.spawn_local_as("fibra::Builder::spawn_local", f)
    }

    /// [`Builder::spawn_local`], for a function named `called` in the panic of a call outside
    /// a fiber.
    #[track_caller]
    fn spawn_local_as<F, T>(self, called: &'static str, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let spec = self.spec();
        let shared = fiber_runtime(called);
        launch_joinable(&shared, spec, Placement::Here, JoinableEntry::local(f))
    }

    /// Spawns a fiber in `scope`; it may borrow from outside the scope.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// ```
    /// fibra::run(|| {
    ///     let words = ["a", "bb", "ccc"];
    ///     let total = fibra::scope(|s| {
    ///         let h = fibra::Builder::new()
    ///             .name("counter")
    ///             .spawn_scoped(s, || words.iter().map(|w| w.len()).sum::<usize>())
    ///             .unwrap();
    ///         h.join().unwrap()
    ///     });
    ///     assert_eq!(total, 6);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_scoped<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        scope.spawn_with(self.spec(), f)
    }
}

/// Spawns a fiber on the current runtime and returns a handle to join it.
///
/// The fiber runs `f` on one of the runtime's workers. It starts on some worker — often the
/// spawner's own — and never moves to another once started, so `f` must be `Send` (see
/// [`spawn_local`] for one that is not). Dropping the [`JoinHandle`] lets the fiber run on
/// (see [its docs](JoinHandle#dropping-the-handle)); to borrow from the spawner, use a
/// [`scope`](crate::scope()).
///
/// ```
/// fibra::run(|| {
///     let handles: Vec<_> = (0..10u64).map(|i| fibra::spawn(move || i * i)).collect();
///     let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
///     assert_eq!(sum, 285);
/// });
/// ```
///
/// # Panics
///
/// Outside a fibra runtime (spawn through a [`Handle`](crate::Handle) from other threads), or
/// when no stack can be had (see [`Builder::spawn`]).
///
/// # Placement
///
/// The runtime picks the worker once, when the fiber starts, by load: a worker starts the
/// fibers it spawns itself unless it is busier than the least loaded worker by more than a
/// small margin, and then hands them to that worker in runs, so that fibers spawned one after
/// another (often partners: pairs, pipelines) mostly share a worker, and a burst of
/// long-lived fibers (an accept loop's connections) spreads over all workers. A fiber joined
/// soon after it is spawned usually starts where it was spawned. Idle workers take unstarted
/// fibers from busy ones. [`Handle::worker_loads`](crate::Handle::worker_loads) shows the loads.
///
/// # In which order fibers start
///
/// The fibers one fiber spawns between two of its suspensions (parks, yields, its end) form a
/// batch. On the worker that spawned them, the fibers of a batch start in spawn order, and the
/// newest batch starts first, so a tree of spawns and joins runs depth first; so that newer
/// batches cannot starve an older one, every few dozen scheduling steps the last fiber of the
/// oldest batch queued below them starts out of turn. A fiber woken
/// while a batch is starting runs once the rest of that batch has started; a fiber that
/// yields runs after all of these (see [`yield_now`](crate::yield_now)). Other workers take
/// unstarted fibers oldest first, so with more than one worker the start order is not fixed.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let started = fibra::Runtime::builder().workers(1).build().unwrap().block_on(|| {
///     let started = Arc::new(Mutex::new(Vec::new()));
///     let children: Vec<_> = (0..4)
///         .map(|i| {
///             let started = started.clone();
///             fibra::spawn(move || started.lock().unwrap().push(i))
///         })
///         .collect();
///     children.into_iter().for_each(|child| child.join().unwrap());
///     Arc::try_unwrap(started).unwrap().into_inner().unwrap()
/// });
/// assert_eq!(started, [0, 1, 2, 3]);
/// ```
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match Builder::new().spawn_current("fibra::spawn", f) {
        Ok(handle) => handle,
        Err(error) => panic!("fibra::spawn: {error}"),
    }
}

/// Spawns a fiber that stays on the current worker; it needs no `Send`.
///
/// # Panics
///
/// Outside a fiber, or when no stack can be had (see [`Builder::spawn`]).
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// fibra::run(|| {
///     let counter = Rc::new(Cell::new(0));
///     let c = counter.clone();
///     fibra::spawn_local(move || c.set(c.get() + 1)).join().unwrap();
///     assert_eq!(counter.get(), 1);
/// });
/// ```
#[track_caller]
pub fn spawn_local<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    match Builder::new().spawn_local_as("fibra::spawn_local", f) {
        Ok(handle) => handle,
        Err(error) => panic!("fibra::spawn_local: {error}"),
    }
}

/// The current runtime; panics at the caller's line, naming `called`, outside one.
#[track_caller]
pub(crate) fn current_handle(called: &str) -> Handle {
    // Not `unwrap_or_else`: a closure would report its own line instead of the caller's.
    match Handle::try_current() {
        Some(handle) => handle,
        // The usual way here is a tokio task or a thread of an application that has a fibra
        // runtime, so the message names the way in from there.
        None => panic!(
            "{called}() called outside a fibra runtime; from another thread or a tokio task, \
             spawn through the runtime's Handle (Runtime::handle, BackgroundRuntime::handle)"
        ),
    }
}

/// The runtime of the calling fiber; panics at the caller's line, naming `called`, outside a
/// fiber.
#[track_caller]
pub(crate) fn fiber_runtime(called: &str) -> Arc<Shared> {
    match with_worker(|local| local.map(|local| local.shared().clone())).filter(|_| in_fiber()) {
        Some(shared) => shared,
        None => panic!("{called}() called outside a fiber"),
    }
}

/// Creates and queues a fiber with a [`JoinHandle`]: its result goes to its packet, which the
/// handle joins, and it gets a cancel scope of its own (inside the one `spec` names), which
/// [`JoinHandle::abort`] cancels.
fn launch_joinable<T>(
    shared: &Arc<Shared>,
    mut spec: Spec,
    placement: Placement,
    entry: JoinableEntry<T>,
) -> io::Result<JoinHandle<T>> {
    let parent = match std::mem::replace(&mut spec.cancel, CancelIn::Inherit) {
        CancelIn::Inherit => fiber_ctx::with(|ctx| ctx.cancel.clone()),
        CancelIn::Scope(scope) => Some(scope),
        CancelIn::Own { .. } => unreachable!("a spawn's own scope is made here"),
    };
    let own = CancelScope::new(parent.clone());
    spec.cancel = CancelIn::Own {
        own: own.clone(),
        parent,
    };
    let fiber = launch(shared, spec, entry.entry, Packet::joined(None), placement)?;
    // SAFETY: the fiber was made with a joined packet and a `JoinableEntry<T>`'s entry, and
    // this is its one handle.
    let joined = unsafe { Joined::new(fiber) };
    Ok(JoinHandle::new(joined, own))
}

/// Where a new fiber may start.
pub(crate) enum Placement {
    /// On any worker: it waits in a stealable queue (or the injector).
    Anywhere,
    /// On the calling worker, for good.
    Here,
}

/// Creates a fiber, not yet queued, with `packet` for its result.
pub(crate) fn create(
    shared: &Arc<Shared>,
    spec: Spec,
    entry: Entry,
    packet: Packet,
) -> io::Result<Arc<Core>> {
    let stack_size = spec.stack_size.unwrap_or(shared.config.stack_size);
    stack::check_size(stack_size).map_err(io::Error::other)?;
    let ticket = stack::admit().map_err(io::Error::other)?;
    // The innermost scope, and the one the fiber joins to be woken by its cancellation.
    let (cancel, member_of) = match spec.cancel {
        CancelIn::Inherit => {
            let inherited = fiber_ctx::with(|ctx| ctx.cancel.clone());
            (inherited.clone(), inherited)
        }
        CancelIn::Scope(scope) => (Some(scope.clone()), Some(scope)),
        CancelIn::Own { own, parent } => (Some(own), parent),
    };
    let ctx = fiber_ctx::with(|ctx| ctx.child(cancel));
    let core = Arc::new(Core::new(
        spec.name,
        spec.location,
        stack_size,
        shared.clone(),
        (entry, ticket),
        ctx,
        packet,
    ));
    crate::diag::register(&core);
    if let Some(scope) = member_of {
        scope.join(&core);
    }
    // The spawner's scope may have been cancelled before the join.
    core.resync_cancel_hint(core.ctx.borrow().cancel.as_deref());
    Ok(core)
}

/// Creates a fiber with `packet` for its result and queues it.
pub(crate) fn launch(
    shared: &Arc<Shared>,
    spec: Spec,
    entry: Entry,
    packet: Packet,
    placement: Placement,
) -> io::Result<Fiber> {
    let core = create(shared, spec, entry, packet)?;
    let fiber = Fiber(core.clone());
    with_worker(|local| match (local, placement) {
        (Some(local), Placement::Here) => local.pin(core),
        (Some(local), Placement::Anywhere) if Arc::ptr_eq(local.shared(), shared) => {
            local.push_unstarted(core)
        }
        (_, Placement::Anywhere) => shared.inject(core),
        (None, Placement::Here) => unreachable!("a local spawn is made on a worker"),
    });
    charge_and_maybe_yield();
    Ok(fiber)
}

/// How a fiber that unwound with `payload` ended.
fn join_error(payload: Box<dyn std::any::Any + Send>) -> JoinError {
    if cancel::is_cancellation(&*payload) {
        JoinError::cancelled()
    } else {
        JoinError::panicked(payload)
    }
}

/// Runs `f` if the fiber got a stack, catching its panic.
pub(crate) fn run_entry<F, T>(f: F, start: Result<(), StackError>) -> Result<T, JoinError>
where
    F: FnOnce() -> T,
{
    match start {
        Ok(()) => {
            let outcome = panic::catch_unwind(AssertUnwindSafe(f)).map_err(join_error);
            // A fiber-local's drop that panics ends the fiber as a panic of its body would:
            // its joiner gets it (unless the body failed first) instead of waiting for ever
            // for a result the unwind would have lost.
            match (outcome, panic::catch_unwind(fiber_ctx::end_fiber)) {
                (Ok(_), Err(payload)) => Err(join_error(payload)),
                (outcome, _) => outcome,
            }
        }
        // A captured value's drop that panics is the fiber's outcome, as above.
        Err(StackError::Cancelled) => {
            panic::catch_unwind(AssertUnwindSafe(|| drop(f))).map_err(join_error)?;
            Err(JoinError::cancelled())
        }
        Err(error) => {
            panic::catch_unwind(AssertUnwindSafe(|| drop(f))).map_err(join_error)?;
            Err(JoinError::panicked(Box::new(format!(
                "fibra: the fiber could not start: {error}"
            ))))
        }
    }
}
