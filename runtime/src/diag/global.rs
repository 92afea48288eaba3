//! Global deadlocks ("all fibers are asleep"): no fiber can run, and nothing can wake one.
//!
//! Checked by the last worker to go to sleep, so a busy runtime never pays for it. The rule
//! errs on the side of silence; a report needs every one of these, read twice around a look
//! at the process's threads, with no worker waking in between:
//!
//! - every other worker sleeps, and no queue holds work;
//! - every live fiber has started and is suspended (not woken, not unstarted);
//! - no hold is open: no timer, blocking job, future in `block_on`, socket wait (sockets
//!   wait through `block_on`), or cancel token a foreign thread could cancel;
//! - no joiner outside the runtime is registered (an async task awaiting a `JoinHandle`);
//! - the driver runs no tokio task but the runtime's own (the dump-signal watch, the
//!   monitor's probes), since a task may hold a `Fiber` or a channel end; a runtime
//!   attached to a foreign tokio runtime is never checked, nor is any runtime while another
//!   runtime of the process runs;
//! - every thread of the process that is not one of this runtime's workers, its driver
//!   thread, its monitor thread or a test harness's watchdog (`LEFT_OUT`) is blocked in an untimed futex wait
//!   (read from `/proc/self/task/*/syscall`) that nothing but another thread can end: the
//!   driver, never read as blocked, serves timers and sockets to any thread that has its
//!   tokio handle, and its wake-up is one more futex wake. Two waits qualify: a wait without
//!   deadline on a fibra primitive (a lock, a channel, a join: `OutsideWait`), which only a
//!   fiber or a thread ends; and a wait the thread has been in since before the runtime was
//!   built (not run since: the same count of switches), when the driver did not exist to be
//!   handed its waker (a test harness's main thread waiting for the test). A thread that runs,
//!   sleeps, waits with a timeout, in any other system call or in any other futex wait may
//!   still send on a channel or unpark a fiber, as may one this check cannot read; and read
//!   in two passes, with no thread switched in between, since one thread may wake another it
//!   was read after.

use super::record::Phase;
use super::{report, Deadlock, Dump};
use crate::fiber::Core;
use crate::sched::Shared;
use std::fs;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Runtimes of this process that have started and not begun to shut down.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// The threads outside any fiber in a fibra wait only a fiber or another thread can end
/// (see `OutsideWait`).
static OUTSIDE_WAITERS: ThreadIds = ThreadIds::new();
/// The threads no check reads (see `GlobalCheck::leaving_out_current_thread`): a test
/// harness's watchdog, which wakes a fiber only by cancelling a test that outlasted its
/// timeout, and whose timed wait would otherwise keep the check from ever finding the test's
/// deadlock.
static LEFT_OUT: ThreadIds = ThreadIds::new();

/// Per runtime: how often a worker woke from sleep, and what was reported last.
pub(crate) struct GlobalCheck {
    awakenings: AtomicUsize,
    /// The kernel id of the runtime's own driver thread (told apart by id, not by name: the
    /// process's fallback driver, which may wake a plain thread's timer, has the same name).
    driver_tid: Option<i32>,
    /// The runtime's own tasks on the driver (see `spawn_own_task`); below zero for a moment
    /// when one ends before it was counted.
    own_tasks: Arc<AtomicIsize>,
    counted: AtomicBool,
    /// The threads asleep when the runtime was built.
    asleep_at_start: Vec<Asleep>,
    /// The fibers of the last report, each with the generation of its wait then: the same
    /// deadlock is reported once, a new one among the same fibers (say after they caught
    /// their `Deadlocked` unwinds) again.
    reported: Mutex<Option<Vec<(u64, u64)>>>,
}

impl GlobalCheck {
    pub(crate) fn new(driver_tid: Option<i32>) -> GlobalCheck {
        super::looking::init();
        RUNNING.fetch_add(1, Ordering::SeqCst);
        GlobalCheck {
            awakenings: AtomicUsize::new(0),
            driver_tid,
            own_tasks: Arc::default(),
            counted: AtomicBool::new(true),
            asleep_at_start: asleep_threads(),
            reported: Mutex::new(None),
        }
    }

    /// The runtime begins to shut down.
    pub(crate) fn stopped(&self) {
        if self.counted.swap(false, Ordering::SeqCst) {
            RUNNING.fetch_sub(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn own_tasks(&self) -> Arc<AtomicIsize> {
        self.own_tasks.clone()
    }

    /// A worker woke from sleep.
    pub(crate) fn woke(&self) {
        self.awakenings.fetch_add(1, Ordering::SeqCst);
    }

    /// Runs `f` with the calling thread left out of every runtime's checks.
    pub(crate) fn leaving_out_current_thread<T>(f: impl FnOnce() -> T) -> T {
        let _left_out = LEFT_OUT.list_current();
        f()
    }
}

impl Drop for GlobalCheck {
    fn drop(&mut self) {
        self.stopped();
    }
}

/// Counts the calling thread, until dropped, as blocked in a fibra wait that only a fiber or
/// another thread can end (never the driver): asleep in it, the thread is blocked until one
/// of them acts.
pub(crate) struct OutsideWait {
    _listed: Listed,
}

impl OutsideWait {
    pub(crate) fn enter() -> OutsideWait {
        OutsideWait {
            _listed: OUTSIDE_WAITERS.list_current(),
        }
    }
}

/// Kernel thread ids, each listed while the guard that listed it lives.
struct ThreadIds(Mutex<Vec<i32>>);

impl ThreadIds {
    const fn new() -> ThreadIds {
        ThreadIds(Mutex::new(Vec::new()))
    }

    fn list_current(&'static self) -> Listed {
        let tid = current_tid();
        self.lock().push(tid);
        Listed { ids: self, tid }
    }

    fn snapshot(&self) -> Vec<i32> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<i32>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A thread's place in a `ThreadIds`, given up on drop.
struct Listed {
    ids: &'static ThreadIds,
    tid: i32,
}

impl Drop for Listed {
    fn drop(&mut self) {
        let mut ids = self.ids.lock();
        if let Some(at) = ids.iter().position(|&tid| tid == self.tid) {
            ids.swap_remove(at);
        }
    }
}

/// What a check asks of the worker that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Sleep until woken.
    Sleep,
    /// Every fiber is asleep and only something outside the runtime may still wake one: look
    /// again after a while (that thread may block for good, or end).
    LookAgain,
    /// A deadlock was found and a fiber woken to unwind: run it.
    Woke,
}

/// Called by a worker that has registered to sleep and found no work: if it is the last one
/// awake and nothing can wake a fiber, reports the deadlock and applies the policy.
pub(crate) fn check(shared: &Shared, me: usize) -> Next {
    let policy = shared.config.deadlock;
    if policy == Deadlock::Off || !shared.idle_all_asleep() {
        return Next::Sleep;
    }
    let awakenings = shared.global.awakenings.load(Ordering::SeqCst);
    let Some(asleep) = quiescent(shared) else {
        return Next::Sleep;
    };
    if outside_may_wake(shared) || foreign_thread_may_wake(shared, me) {
        return Next::LookAgain;
    }
    let again = quiescent(shared);
    let same = again.is_some_and(|again| {
        again.len() == asleep.len() && again.iter().zip(&asleep).all(|(a, b)| Arc::ptr_eq(a, b))
    });
    if !same
        || outside_may_wake(shared)
        || shared.global.awakenings.load(Ordering::SeqCst) != awakenings
        || !shared.idle_all_asleep()
    {
        return Next::LookAgain;
    }
    let ids: Vec<(u64, u64)> = asleep
        .iter()
        .map(|core| (core.id.as_u64(), core.diag.generation()))
        .collect();
    {
        let mut reported = shared
            .global
            .reported
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if reported.as_ref() == Some(&ids) {
            return Next::Sleep;
        }
        *reported = Some(ids);
    }
    let text: Arc<str> = format!(
        "fibra: all fibers are asleep - deadlock!\n\n{}",
        Dump::of(shared)
    )
    .into();
    report::deadlock(shared, &text);
    if policy == Deadlock::Panic {
        // Every fiber, not only the main one: a fiber in a shielded wait (a scope waiting for
        // its children) unwinds only once the wait ends, which the others' unwinding lets it.
        for core in &asleep {
            core.diag.doom(text.clone());
            core.unpark();
        }
        return Next::Woke;
    }
    Next::Sleep
}

/// Whether a task outside the fibers is known to hold a join, or to be able to run (another
/// runtime, a tokio task).
fn outside_may_wake(shared: &Shared) -> bool {
    RUNNING.load(Ordering::SeqCst) != 1
        || shared.outside.has_joiners()
        || shared.tokio.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
        || driver_runs_foreign_tasks(shared)
}

/// Whether the driver runs tasks other than the runtime's own.
pub(crate) fn driver_runs_foreign_tasks(shared: &Shared) -> bool {
    let alive = shared.tokio.metrics().num_alive_tasks();
    alive as isize > shared.global.own_tasks.load(Ordering::SeqCst)
}

/// Every live fiber, if each has started and is suspended and no hold is open.
fn quiescent(shared: &Shared) -> Option<Vec<Arc<Core>>> {
    if !shared.holds.snapshot().is_empty() {
        return None;
    }
    let fibers: Vec<Arc<Core>> = shared
        .fibers
        .snapshot()
        .into_iter()
        .filter(|core| core.diag.phase() != Phase::Done)
        .collect();
    let all_suspended = !fibers.is_empty()
        && fibers
            .iter()
            .all(|core| core.diag.phase() == Phase::Started && core.latch.is_suspended());
    all_suspended.then_some(fibers)
}

/// Whether a thread outside this runtime's workers and driver might still wake a fiber.
///
/// The threads are read one at a time, so one read as blocked may be woken by one read
/// after it, which then blocks in turn. Hence two passes: a thread counts as blocked for good
/// only if both found it asleep (not merely not yet scheduled after a wake-up) in an untimed
/// futex wait, switched out no more often in between, and no thread appeared. Then each
/// slept from its first read to its second, so at the moment between the passes all slept
/// at once, and none could have woken another since.
fn foreign_thread_may_wake(shared: &Shared, me: usize) -> bool {
    let own: Vec<i32> = (0..shared.workers())
        .filter_map(|index| shared.running.tid(index))
        .collect();
    if own.len() != shared.workers() || shared.running.tid(me) != Some(current_tid()) {
        return true;
    }
    let Some(first) = blocked_foreign_threads(shared, &own) else {
        return true;
    };
    let Some(second) = blocked_foreign_threads(shared, &own) else {
        return true;
    };
    // A thread that exited between the passes wakes nobody any more; one that appeared may.
    second.iter().any(|thread| !first.contains(thread))
}

/// Each thread of the process but `own`, the runtime's driver, its monitor and the threads
/// left out, with its count of switches, if every one of them is asleep in an untimed futex wait that only
/// another thread can end (see the module documentation).
fn blocked_foreign_threads(shared: &Shared, own: &[i32]) -> Option<Vec<(i32, u64)>> {
    // Read before the threads: one seen here and then asleep, unswitched, in both passes
    // slept in its `OutsideWait` all along.
    let outside_waiters = OUTSIDE_WAITERS.snapshot();
    let left_out = LEFT_OUT.snapshot();
    let mut blocked = Vec::new();
    for task in fs::read_dir("/proc/self/task").ok()? {
        let tid = task.ok()?.file_name().to_str()?.parse::<i32>().ok()?;
        if own.contains(&tid) || shared.global.driver_tid == Some(tid) || left_out.contains(&tid) {
            continue;
        }
        let path = format!("/proc/self/task/{tid}");
        let Ok(comm) = fs::read_to_string(format!("{path}/comm")) else {
            // The thread has exited.
            continue;
        };
        if comm.trim_end() == super::sysmon::THREAD_NAME {
            continue;
        }
        let syscall = fs::read_to_string(format!("{path}/syscall")).ok()?;
        if !in_untimed_futex_wait(&syscall) {
            return None;
        }
        let asleep = Asleep::read(tid)?;
        if !outside_waiters.contains(&tid) && !shared.global.asleep_at_start.contains(&asleep) {
            return None;
        }
        blocked.push((tid, asleep.switches));
    }
    Some(blocked)
}

/// A thread found asleep, told apart from a later thread given its id by when it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Asleep {
    tid: i32,
    /// When the thread started, in clock ticks after boot.
    started: u64,
    /// How often it had been switched out, voluntarily or not.
    switches: u64,
}

impl Asleep {
    /// Thread `tid` of this process, if it can be read and is asleep ('S').
    fn read(tid: i32) -> Option<Asleep> {
        let path = format!("/proc/self/task/{tid}");
        let stat = fs::read_to_string(format!("{path}/stat")).ok()?;
        // The command name may hold spaces and parentheses: the state follows the last ')',
        // and the start time is the 20th field after it.
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        if fields.next()? != "S" {
            return None;
        }
        let started = fields.nth(18)?.parse().ok()?;
        Some(Asleep {
            tid,
            started,
            switches: switches(&path)?,
        })
    }
}

/// Every thread of the process asleep now.
fn asleep_threads() -> Vec<Asleep> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| task.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(Asleep::read)
        .collect()
}

/// How often the thread at `path` has been switched out, voluntarily or not.
fn switches(path: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("{path}/status")).ok()?;
    let count = |field: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().parse::<u64>().ok())
    };
    Some(count("voluntary_ctxt_switches:")? + count("nonvoluntary_ctxt_switches:")?)
}

/// `/proc/<pid>/task/<tid>/syscall` of a thread blocked in `futex(addr, FUTEX_WAIT[_BITSET],
/// val, NULL, …)`.
fn in_untimed_futex_wait(syscall: &str) -> bool {
    const FUTEX_CMD_MASK: i64 = !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME) as i64;
    let fields: Vec<&str> = syscall.split_whitespace().collect();
    let number = |index: usize| {
        fields
            .get(index)
            .and_then(|field| i64::from_str_radix(field.trim_start_matches("0x"), 16).ok())
    };
    let is_futex = fields.first().and_then(|n| n.parse::<i64>().ok()) == Some(libc::SYS_futex);
    let waits = number(2).is_some_and(|op| {
        let cmd = op & FUTEX_CMD_MASK;
        cmd == i64::from(libc::FUTEX_WAIT) || cmd == i64::from(libc::FUTEX_WAIT_BITSET)
    });
    is_futex && waits && number(4) == Some(0)
}

/// The calling thread's kernel id.
pub(crate) fn current_tid() -> i32 {
    // SAFETY: `gettid` has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::in_untimed_futex_wait;

    #[test]
    fn only_an_untimed_futex_wait_counts_as_blocked() {
        let futex = libc::SYS_futex;
        assert!(in_untimed_futex_wait(&format!(
            "{futex} 0x7f00 0x89 0x0 0x0 0xffffffff 0x0 0x7ffd 0x7f01"
        )));
        // With a timeout.
        assert!(!in_untimed_futex_wait(&format!(
            "{futex} 0x7f00 0x89 0x0 0x7ffd1000 0xffffffff 0x0 0x7ffd 0x7f01"
        )));
        // A wake, not a wait.
        assert!(!in_untimed_futex_wait(&format!(
            "{futex} 0x7f00 0x81 0x1 0x0 0x0 0x0 0x7ffd 0x7f01"
        )));
        assert!(!in_untimed_futex_wait("running"));
        assert!(!in_untimed_futex_wait(
            "230 0x1 0x0 0x7ffd 0x0 0x0 0x0 0x7ffd 0x7f01"
        ));
    }
}
