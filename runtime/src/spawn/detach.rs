//! Detached fibers under the runtime's supervisor.

use super::{launch, run_entry, CancelIn, Packet, Placement, Spec};
use crate::cancel::CancelScope;
use crate::fiber::{Core, Entry};
use crate::loom::sync::Lock;
use crate::sched::Shared;
use crate::wait::{
    current_waker, Deadline, PlainWaitable, Wait, WaitKind, WaitList, WaitSite, WakeList,
};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What a runtime knows of its detached fibers.
pub(crate) struct Supervisor {
    /// Detached fibers belong to this scope, cancelled when a drain times out.
    pub(crate) cancel: Arc<CancelScope>,
    live: AtomicUsize,
    /// Set once the runtime has shut down: the detached fibers it abandoned never finish, and
    /// none can start, so there is nothing left to wait for.
    closed: AtomicBool,
    /// Callers of [`Supervisor::drain`], all woken when the last detached fiber finishes or
    /// the runtime shuts down.
    drainers: Lock<WaitList<()>>,
}

impl Supervisor {
    pub(crate) fn new() -> Supervisor {
        Supervisor {
            cancel: CancelScope::new(None),
            live: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            drainers: Lock::new(WaitList::new()),
        }
    }

    fn finished(&self) {
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.wake_drainers();
        }
    }

    /// The runtime has shut down (every worker has left): wakes the drainers, and every
    /// drain from now on returns at once.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake_drainers();
    }

    fn wake_drainers(&self) {
        let mut wakers = WakeList::new();
        let mut drainers = self.drainers.lock();
        while let Some(waker) = drainers.pop_front() {
            wakers.push(waker);
        }
        drop(drainers);
        wakers.wake_all();
    }

    /// Whether no detached fiber runs, or can run any more.
    fn drained(&self) -> bool {
        self.live.load(Ordering::Acquire) == 0 || self.closed.load(Ordering::Acquire)
    }

    /// Waits until no detached fiber runs, or until `deadline`; true if none runs.
    #[track_caller]
    pub(crate) fn drain(&self, deadline: Deadline) -> bool {
        let site = WaitSite::new(WaitKind::Join, self);
        loop {
            if self.drained() {
                return true;
            }
            let key = {
                let mut drainers = self.drainers.lock();
                // Read again under the lock: the last fiber's `finished`, and `close`, empty
                // the list under it after their change, so a drainer listed now is woken.
                if self.drained() {
                    return true;
                }
                drainers.push_back((), current_waker())
            };
            if Wait::new(Drainers(self), key)
                .block_at(deadline, &site)
                .is_err()
            {
                return self.drained();
            }
        }
    }

    /// At the end of `run`: waits for detached fibers up to `timeout`, then cancels the rest
    /// and waits as long again for them to unwind.
    pub(crate) fn drain_at_exit(&self, timeout: Option<std::time::Duration>) {
        let deadline = || timeout.map_or(Deadline::NEVER, Deadline::after);
        if !self.drain(deadline()) {
            self.cancel.cancel(crate::CancelCause::Internal);
            self.drain(deadline());
        }
    }
}

/// The drains waiting on a [`Supervisor`].
struct Drainers<'a>(&'a Supervisor);

impl PlainWaitable for Drainers<'_> {
    type Entry = ();

    fn lock(&self) -> &Lock<WaitList<()>> {
        &self.0.drainers
    }

    /// Nothing to pass on: every drainer is woken at once.
    fn abandon(&self, _: &mut WaitList<()>, _: (), _: bool, _: &mut WakeList) {}
}

/// Runs `f` in a fiber nobody joins, under the runtime's supervisor: a panic is logged through
/// `tracing` at error level (with the fiber's name, id and spawn location), or printed on
/// stderr in one line when no `tracing` subscriber takes it, and dropped, never taking the
/// program down. [`run`](crate::run) waits for detached fibers before it returns
/// (see [`RuntimeBuilder::shutdown_timeout`](crate::RuntimeBuilder::shutdown_timeout)); a
/// fiber from [`spawn`](crate::spawn()) whose handle was dropped is cancelled instead.
///
/// # Panics
///
/// Outside a fibra runtime, or when no stack can be had.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// let done = Arc::new(AtomicBool::new(false));
/// let flag = done.clone();
/// fibra::run(move || fibra::detach(move || flag.store(true, Ordering::SeqCst)));
/// // `run` drained the detached fiber before returning.
/// assert!(done.load(Ordering::SeqCst));
/// ```
#[track_caller]
pub fn detach<F>(f: F)
where
    F: FnOnce() + Send + 'static,
{
    let handle = super::current_handle("fibra::detach");
    detach_on(&handle.shared, Location::caller(), f);
}

fn detach_on<F>(shared: &Arc<Shared>, location: &'static Location<'static>, f: F)
where
    F: FnOnce() + Send + 'static,
{
    let supervisor = &shared.supervisor;
    supervisor.live.fetch_add(1, Ordering::AcqRel);
    let owner = shared.clone();
    let entry = Entry::new(move |start, _: *const Core| {
        if let Err(error) = run_entry(f, start) {
            if error.is_panic() {
                report_panic(location, &error);
            }
        }
        owner.supervisor.finished();
    });
    let spec = Spec {
        cancel: CancelIn::Scope(supervisor.cancel.clone()),
        ..Spec::at(location)
    };
    if let Err(error) = launch(shared, spec, entry, Packet::unjoined(), Placement::Anywhere) {
        supervisor.finished();
        panic!("fibra::detach: {error}");
    }
}

/// Tells of a detached fiber's panic, which nobody joins: through `tracing` if a subscriber
/// takes errors here, else on stderr, so that it is never lost silently.
fn report_panic(location: &'static Location<'static>, error: &crate::JoinError) {
    let fiber = crate::wait::running_fiber();
    let name = fiber.as_ref().and_then(|f| f.name()).unwrap_or("<unnamed>");
    let id = fiber.as_ref().map(|f| f.id().as_u64());
    if tracing::enabled!(tracing::Level::ERROR) {
        tracing::error!(
            fiber.name = name,
            fiber.id = id,
            spawned_at = %location,
            "detached fiber panicked: {error}"
        );
    } else {
        let id = id.map_or_else(String::new, |id| format!(" (id {id})"));
        eprintln!(
            "fibra: detached fiber '{name}'{id} spawned at {location}: {error} (the panic is \
             dropped)"
        );
    }
}
