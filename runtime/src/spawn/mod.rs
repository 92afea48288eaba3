//! Spawning fibers: the per-spawn [`Builder`], the free functions, join handles and scopes.

mod child_count;
mod detach;
mod error;
mod helpers;
mod join;
mod packet;
mod pinned;
mod scope;
mod timeout;

pub use detach::detach;
pub(crate) use detach::Supervisor;
pub(crate) use error::panic_message;
pub use error::JoinError;
pub use helpers::{parallel_map, parallel_map_limited, race};
pub use join::JoinHandle;
pub use scope::{scope, scope_with, Scope, ScopedJoinHandle};
pub use timeout::{timeout, Elapsed};

use crate::cancel::{self, CancelGroup, CancelScope};
use crate::fiber::{Core, Entry, Fiber};
use crate::fiber_ctx;
use crate::runtime::Handle;
use crate::sched::{charge, with_worker, Shared};
use crate::stack::{self, StackError};
use crate::wait::{in_fiber, yield_fiber};
pub(crate) use packet::Packet;
pub(crate) use pinned::Pinned;
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
        let handle = Handle::try_current()
            .unwrap_or_else(|| panic!("fibra::spawn() called outside a fibra runtime"));
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
        let spec = self.spec();
        let packet = Arc::new(Packet::new(None));
        let entry = entry(f, packet.clone());
        let fiber = launch(&handle.shared, spec, entry, Placement::Anywhere)?;
        Ok(JoinHandle::new(packet, fiber))
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
        let handle = Handle::try_current()
            .unwrap_or_else(|| panic!("fibra::Builder::spawn_in() called outside a fibra runtime"));
        let spec = Spec {
            cancel: CancelIn::Scope(group.scope().clone()),
            ..self.spec()
        };
        let packet = Arc::new(Packet::new(None));
        let entry = entry(f, packet.clone());
        let fiber = launch(&handle.shared, spec, entry, Placement::Anywhere)?;
        Ok(JoinHandle::new(packet, fiber))
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
        let spec = self.spec();
        let shared = with_worker(|local| local.map(|local| local.shared().clone()))
            .filter(|_| in_fiber())
            .unwrap_or_else(|| panic!("fibra::spawn_local() called outside a fiber"));
        let packet = Arc::new(Packet::new(None));
        let entry = Pinned::new(entry_local(f, packet.clone())).into_entry();
        let fiber = launch(&shared, spec, entry, Placement::Here)?;
        Ok(JoinHandle::new(packet, fiber))
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
/// # Where the fiber runs
///
/// A fiber that has started stays on the worker thread that started it, so the runtime picks
/// that worker once, at the start. The new fiber waits, unstarted, in the spawning worker's
/// queue (a spawn from outside the runtime goes to a queue shared by all workers). Each worker
/// has a load: the fibers living on it plus those handed to it that have not started
/// (see [`Handle::worker_loads`]). The rule:
///
/// - A worker starts a fiber from its own queue itself while its load is at most 2 above the
///   least loaded worker's; otherwise it hands the fiber to that least loaded worker, which
///   starts it, and wakes that worker. The hand-off counts on the target at once, so a burst
///   of long-lived fibers (an accept loop, a fan-out) spreads over the workers even when the
///   others are slow to wake.
/// - An idle worker takes unstarted fibers from other workers' queues only while its own
///   load is within the same margin.
/// - A fiber that is joined soon after it is spawned usually starts right where it was spawned
///   (depth first), because the loads barely change in between.
///
/// # Panics
///
/// Outside a fibra runtime, or when no stack can be had (see [`Builder::spawn`]).
///
/// ```
/// fibra::run(|| {
///     let handles: Vec<_> = (0..10u64).map(|i| fibra::spawn(move || i * i)).collect();
///     let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
///     assert_eq!(sum, 285);
/// });
/// ```
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new()
        .spawn(f)
        .unwrap_or_else(|error| panic!("fibra::spawn: {error}"))
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
    Builder::new()
        .spawn_local(f)
        .unwrap_or_else(|error| panic!("fibra::spawn_local: {error}"))
}

/// Where a new fiber may start.
pub(crate) enum Placement {
    /// On any worker: it waits in a stealable queue (or the injector).
    Anywhere,
    /// On the calling worker, for good.
    Here,
}

/// Creates a fiber, not yet queued.
pub(crate) fn create(shared: &Arc<Shared>, spec: Spec, entry: Entry) -> io::Result<Arc<Core>> {
    let stack_size = spec.stack_size.unwrap_or(shared.config.stack_size);
    stack::check_size(stack_size).map_err(io::Error::other)?;
    let ticket = stack::admit().map_err(io::Error::other)?;
    let ctx = fiber_ctx::with(|ctx| {
        ctx.child(match spec.cancel {
            CancelIn::Inherit => ctx.cancel.clone(),
            CancelIn::Scope(scope) => Some(scope),
        })
    });
    let core = Arc::new(Core::new(
        spec.name,
        spec.location,
        stack_size,
        shared.clone(),
        entry,
        ticket,
        ctx,
    ));
    crate::diag::register(&core);
    if let Some(scope) = &core.ctx.borrow().cancel {
        scope.join(&core);
        // The spawner's scope may have been cancelled before the join.
        core.resync_cancel_hint(Some(scope));
    }
    Ok(core)
}

/// Creates a fiber and queues it.
pub(crate) fn launch(
    shared: &Arc<Shared>,
    spec: Spec,
    entry: Entry,
    placement: Placement,
) -> io::Result<Fiber> {
    let core = create(shared, spec, entry)?;
    let fiber = Fiber(core.clone());
    with_worker(|local| match (local, placement) {
        (Some(local), Placement::Here) => local.pin(core),
        (Some(local), Placement::Anywhere) if Arc::ptr_eq(local.shared(), shared) => {
            local.push_unstarted(core)
        }
        (_, Placement::Anywhere) => shared.inject(core),
        (None, Placement::Here) => unreachable!("a local spawn is made on a worker"),
    });
    if charge() {
        yield_fiber();
    }
    Ok(fiber)
}

/// The entry of a fiber running `f`: its result (or panic) goes to `packet`.
pub(crate) fn entry<'a, F, T>(
    f: F,
    packet: Arc<Packet<T>>,
) -> Box<dyn FnOnce(Result<(), StackError>) + Send + 'a>
where
    F: FnOnce() -> T + Send + 'a,
    T: Send + 'a,
{
    Box::new(move |start| packet.complete(run_entry(f, start)))
}

/// As [`entry`], for a fiber that never leaves its worker.
pub(crate) fn entry_local<'a, F, T>(
    f: F,
    packet: Arc<Packet<T>>,
) -> impl FnOnce(Result<(), StackError>) + 'a
where
    F: FnOnce() -> T + 'a,
    T: 'a,
{
    move |start| packet.complete(run_entry(f, start))
}

/// Runs `f` if the fiber got a stack, catching its panic.
pub(crate) fn run_entry<F, T>(f: F, start: Result<(), StackError>) -> Result<T, JoinError>
where
    F: FnOnce() -> T,
{
    match start {
        Ok(()) => {
            let outcome = panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
                if cancel::is_cancellation(&*payload) {
                    JoinError::cancelled()
                } else {
                    JoinError::panicked(payload)
                }
            });
            // The scope may end as soon as this fiber's packet is gone; do not keep it alive.
            drop(fiber_ctx::replace_cancel(None));
            outcome
        }
        Err(error) => {
            drop(f);
            Err(JoinError::panicked(Box::new(format!(
                "fibra: the fiber could not start: {error}"
            ))))
        }
    }
}
