//! Diagnostics: the table of live fibers, what each waits on, deadlock detection and dumps.

mod cycle;
mod dump;
mod global;
mod lazy_check;
mod looking;
mod policy;
mod record;
mod report;
mod signal;
mod sysmon;
mod table;
mod workers;

pub use dump::{Dump, FiberInfo, FiberState, HoldDump, WaitInfo, WorkerInfo};
pub(crate) use global::{current_tid, GlobalCheck, OutsideWait};
pub(crate) use lazy_check::{
    run_all as run_all_checks, run_periodic as run_periodic_checks, LazyChecks,
};
pub use policy::{Deadlock, Deadlocked};
pub(crate) use record::{Record, Shape, Tag};
pub(crate) use signal::print_dump_on;
pub(crate) use sysmon::{start as start_sysmon, Sysmon};
pub(crate) use table::FiberTable;
pub(crate) use workers::{tick, WorkerSlot, WorkerSlots};

use crate::fiber::Core;
use crate::sched::with_running_clock;
use crate::wait::WaitSite;
use std::sync::Arc;

/// A dump of the current runtime: every live fiber, every worker and the open holds.
///
/// Safe while fibers run; each fiber is read on its own, so fibers that change state during
/// the dump may be shown in their old or new state.
///
/// With the environment variable `FIBRA_DUMP_SIGNAL` set to `SIGQUIT` or `SIGUSR1` when a
/// runtime is built, that signal prints the runtime's dump to stderr (Go's goroutine dump on
/// `kill -QUIT`), and the program goes on. The dump is made on the driver thread, from tokio's
/// signal support, never inside a signal handler; the signal keeps that meaning for the rest
/// of the process, also after the runtime has shut down (then it does nothing). Another value
/// is reported in one line on stderr and no signal is watched.
///
/// # Panics
///
/// Outside a fibra runtime (use [`Handle::dump`](crate::Handle::dump) from other threads).
///
/// ```
/// fibra::run(|| {
///     let dump = fibra::dump();
///     let me = dump.fibers.iter().find(|f| f.id == fibra::current().id().as_u64()).unwrap();
///     assert_eq!(me.state, fibra::FiberState::Running);
///     assert!(dump.to_string().contains("\"main\""));
/// });
/// ```
#[track_caller]
pub fn dump() -> Dump {
    crate::Handle::try_current()
        .unwrap_or_else(|| panic!("fibra::dump() called outside a fibra runtime"))
        .dump()
}

/// Whether wait sites are recorded: always, except in the `diag_overhead` bench's build with
/// the `nodiag` feature, which measures what recording costs. A constant rather than `cfg`s
/// so that both forms are always compiled.
pub(crate) const RECORDS_WAITS: bool = !cfg!(feature = "nodiag");

/// The running fiber's published wait, ended (and cleared) on drop: the one place a wait site
/// is recorded.
pub(crate) struct Published {
    core: *const Core,
    ending: Option<record::Ending>,
}

impl Published {
    /// Publishes `site` for the running fiber; `None` outside a fiber.
    #[inline]
    pub(crate) fn new(site: &WaitSite<'_>, timed: bool) -> Option<Published> {
        let (core, since) =
            with_running_clock(|core, clock| core.map(|core| (core as *const Core, clock)))?;
        // SAFETY: the running fiber's `Core` is alive while it runs (its worker lent it a
        // reference for this resume), and again whenever it runs after a park; the guard is
        // only used by the fiber itself.
        let core = unsafe { &*core };
        if !RECORDS_WAITS {
            return Some(Published { core, ending: None });
        }
        let ending = core.diag.publish(site, timed, since);
        Some(Published { core, ending })
    }
}

impl Published {
    /// Ends the wait; returns the fiber it was published for (the running one).
    #[inline]
    pub(crate) fn end(self) -> *const Core {
        self.core
    }
}

impl Drop for Published {
    #[inline]
    fn drop(&mut self) {
        if let Some(ending) = self.ending {
            // SAFETY: as in `new`: dropped by the fiber while it runs.
            unsafe { &*self.core }.diag.clear(ending);
        }
    }
}

/// After a fiber's park: unwinds it if a deadlock check doomed it. Inlined: after every park
/// it is one load.
#[inline]
pub(crate) fn unwind_if_doomed(core: &Core) {
    if core.diag.is_doomed() {
        unwind_doomed(core);
    }
}

/// A fiber whose unwinds are held (see `FiberCtx::holds_unwinds`: a scope waiting for its
/// children must not be unwound out of its wait) drops the verdict and goes on waiting. The
/// verdict was about this wait: it ends only once the others' unwinding frees it (a scope's
/// children end, a holder lets go), and then the deadlock it described is over; a later one
/// is found afresh.
#[cold]
fn unwind_doomed(core: &Core) {
    let report = core.diag.take_doom();
    if crate::fiber_ctx::with(|ctx| ctx.holds_unwinds()) {
        return;
    }
    if let Some(report) = report {
        std::panic::panic_any(Deadlocked::new(report));
    }
}

/// Called by a worker about to sleep: the last one checks for a global deadlock (see
/// `global`), and looks again later while only something outside the runtime could still
/// wake a fiber. True when the check woke a fiber (`Deadlock::Panic`): then it must not sleep.
pub(crate) fn before_sleep(shared: &Arc<crate::sched::Shared>, me: usize) -> bool {
    let next = global::check(shared, me);
    shared
        .running
        .look_again(shared, me, next == global::Next::LookAgain);
    next == global::Next::Woke
}

/// Called by a fiber about to park: whether its worker must list it for a cycle check (see
/// `lazy_check`): its published wait asks for one and it is not listed yet.
pub(crate) fn check_due(core: &Core) -> bool {
    !core.check_noted.get()
        && core.diag.check_due().is_some()
        && core.shared.config.deadlock != Deadlock::Off
}

/// Spawns one of the runtime's own tasks on the driver (a signal watch, a probe), which the
/// global deadlock check does not count as a task that could wake a fiber.
pub(crate) fn spawn_own_task(
    shared: &Arc<crate::sched::Shared>,
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::task::AbortHandle {
    let own = shared.global.own_tasks();
    let ended = own.clone();
    let handle = shared.tokio.spawn(async move {
        task.await;
        ended.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    });
    // Counted once spawned, uncounted before it ends: meanwhile the check sees one task more
    // than its own, which only makes it look again later.
    own.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    handle.abort_handle()
}

/// Registers a new fiber in its runtime's table.
pub(crate) fn register(core: &Arc<Core>) {
    core.shared.fibers.insert(core);
}
