//! The monitor thread ("sysmon"): warns about a fiber that runs too long without suspending,
//! a worker whose thread is blocked inside a fiber, and a stalled driver thread; and asks each
//! worker it finds running a fiber to arm its older timed waits (see `wait::LazyTimers`).
//!
//! It reads what the workers publish anyway — the fiber each runs and its slice count — every
//! tick (a few milliseconds) while any worker is awake, every half threshold while they all
//! sleep but the driver runs tasks other than the runtime's own, and otherwise waits, untimed,
//! until a worker wakes from sleep (one load of a flag on that path). Fibers waiting for a
//! timer, a socket or a future keep no monitor awake: with every worker asleep only a foreign
//! task on the driver can stall anything, as the driver runs nothing else that could block.
//!
//! A slice that has held its worker for half the threshold (the same fiber and count at every
//! look) is asked to end at the fiber's next runtime operation, as Go's sysmon preempts a
//! goroutine that has run for 10 ms: its preempt flag is set and its cancel hint raised, so the
//! one load every cancellation point makes already sends it to look (see `cancel::point`).
//! Reductions count operations, not time, so a fiber whose operations each take long (process
//! spawns and kills, large writes to a socket whose peer keeps up) could run far past the
//! threshold before its budget is used up; asked, it yields at once. A slice that still holds its worker past the threshold is
//! diagnosed once, at a later look: from the worker thread's state in
//! `/proc/self/task/<tid>/stat`, a thread asleep in the kernel ('S' or 'D') is blocked in a
//! call that is not a fibra wait (fibra waits switch fibers and leave the thread running); any
//! other state means the fiber computes without reaching a runtime operation.
//!
//! The driver is probed with a task that only records when it ran: a probe still unanswered
//! past the threshold means the driver thread runs something that does not yield.
//!
//! A thread that is runnable but not scheduled is not held by its fiber or task: unless it
//! sleeps in the kernel, only the CPU time it has had counts (`schedstat`, read only for
//! slices and probes that outlast a tick), so a worker waiting for a CPU on a loaded machine
//! is not reported.

use super::report::fiber_label;
use super::{Dump, FiberState};
use crate::fiber::Core;
use crate::sched::Shared;
use std::fs;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The tick bounds: short thresholds need short ticks, and a tick this long already costs
/// next to nothing.
const TICK: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(10));

/// The monitor's side of `Shared`: how workers wake it, and how shutdown stops it.
#[derive(Default)]
pub(crate) struct Sysmon {
    /// Set while the monitor waits for work to start.
    parked: AtomicBool,
    stopped: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Sysmon {
    /// A worker woke from sleep: work may have started.
    #[inline]
    pub(crate) fn worker_woke(&self) {
        if self.parked.load(Ordering::SeqCst) {
            self.notify();
        }
    }

    /// Stops the monitor (at shutdown).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.notify();
    }

    #[cold]
    fn notify(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.parked.store(false, Ordering::SeqCst);
        self.wake.notify_all();
    }
}

/// Starts the monitor thread of `shared`; it ends at shutdown (`Sysmon::stop`).
pub(crate) fn start(shared: &Arc<Shared>) -> std::io::Result<thread::JoinHandle<()>> {
    let shared = shared.clone();
    thread::Builder::new()
        .name(THREAD_NAME.to_owned())
        .spawn(move || Monitor::new(shared).run())
}

/// Asks a fiber to end its slice at its next runtime operation: the one load of its cancel
/// hint that every cancellation point makes sends it to look (see `cancel::point`).
fn ask_to_yield(core: &Core) {
    core.diag.request_preempt();
    core.cancel_hint.raise();
}

/// The monitor thread's name; the global deadlock check knows it as the runtime's own.
pub(crate) const THREAD_NAME: &str = "fibra-sysmon";

/// A slice as last seen on one worker.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slice {
    fiber: u64,
    count: u64,
}

#[derive(Clone, Copy)]
struct Seen {
    slice: Slice,
    since: Instant,
    waited: CpuTime,
    stage: Stage,
}

/// How far the monitor has gone with a slice that holds its worker.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Running,
    /// Asked to yield at its next runtime operation.
    Asked,
    /// Still running past the threshold, and reported.
    Reported,
}

/// A thread's CPU time when a slice (or probe) was first seen to outlast a tick: a thread
/// that is runnable but not scheduled (a loaded machine) is not held by the fiber or task.
#[derive(Clone, Copy)]
enum CpuTime {
    NotRead,
    Read(Instant, u64),
    Unknown,
}

impl CpuTime {
    fn read(tid: Option<i32>) -> CpuTime {
        tid.and_then(cpu_time)
            .map_or(CpuTime::Unknown, |ns| CpuTime::Read(Instant::now(), ns))
    }

    /// How long of the `wall` time since `since` thread `tid` was held: all of it while it
    /// sleeps in the kernel; otherwise the time before this was read plus the CPU time it has
    /// had since. The monitor means to read one `tick` after `since`; when it read later, it
    /// was itself kept off the CPU (a loaded machine), and so, likely, was the thread: at most
    /// one tick before the read counts.
    fn held(self, tid: Option<i32>, since: Instant, wall: Duration, tick: Duration) -> Duration {
        let asleep = tid
            .and_then(thread_state)
            .is_some_and(|state| state == 'S' || state == 'D');
        match self {
            CpuTime::Read(at, before) if !asleep => {
                let ran = tid
                    .and_then(cpu_time)
                    .map_or(0, |now| now.saturating_sub(before));
                at.saturating_duration_since(since).min(tick) + Duration::from_nanos(ran)
            }
            _ => wall,
        }
    }
}

/// A probe of the driver in flight.
struct Probe {
    sent: Instant,
    /// Nanoseconds after `sent` at which the driver ran it, plus one; 0 until then.
    answered: Arc<AtomicU64>,
    waited: CpuTime,
    warned: bool,
}

struct Monitor {
    shared: Arc<Shared>,
    threshold: Duration,
    tick: Duration,
    seen: Vec<Option<Seen>>,
    probe: Option<Probe>,
    /// The driver thread, as the first probe found it (0 before).
    driver_tid: Arc<AtomicI32>,
    /// Only a driver thread of fibra's own is watched: an attached tokio runtime has threads
    /// of its own to run tasks on.
    watch_driver: bool,
}

impl Monitor {
    fn new(shared: Arc<Shared>) -> Monitor {
        let threshold = shared.config.stuck;
        let watch_driver =
            shared.tokio.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread;
        Monitor {
            tick: (threshold / 4).clamp(TICK.0, TICK.1),
            threshold,
            seen: vec![None; shared.workers()],
            probe: None,
            driver_tid: Arc::default(),
            watch_driver,
            shared,
        }
    }

    fn run(mut self) {
        let shared = self.shared.clone();
        let sysmon = &shared.sysmon;
        loop {
            let idle = self.idle();
            let guard = sysmon.lock.lock().unwrap_or_else(|p| p.into_inner());
            if sysmon.stopped.load(Ordering::SeqCst) {
                return;
            }
            if idle {
                // Announce the wait, then look again: a worker that wakes after our look sees
                // the flag (both sides SeqCst), one that woke before is seen by the look.
                sysmon.parked.store(true, Ordering::SeqCst);
                if self.idle() {
                    self.seen.fill(None);
                    let _guard = sysmon
                        .wake
                        .wait_while(guard, |_| {
                            sysmon.parked.load(Ordering::SeqCst)
                                && !sysmon.stopped.load(Ordering::SeqCst)
                        })
                        .unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                sysmon.parked.store(false, Ordering::SeqCst);
            }
            // With every worker asleep only the driver is watched, and a stall is still seen
            // before it is half a threshold old.
            let tick = if shared.idle_all_asleep() {
                (self.threshold / 2).max(self.tick)
            } else {
                self.tick
            };
            drop(
                sysmon
                    .wake
                    .wait_timeout(guard, tick)
                    .unwrap_or_else(|p| p.into_inner()),
            );
            if sysmon.stopped.load(Ordering::SeqCst) {
                return;
            }
            self.look_at_workers();
            if self.watch_driver {
                self.look_at_driver();
            }
        }
    }

    /// Whether nothing can be running: every worker sleeps and the driver runs no task but the
    /// runtime's own. Open holds (fibers in timed or external waits) do not count: what they
    /// wait for is served by the driver, which only a foreign task can stall.
    fn idle(&self) -> bool {
        let shared = &self.shared;
        shared.idle_all_asleep()
            && !super::global::driver_runs_foreign_tasks(shared)
            && self.probe.is_none()
    }

    fn look_at_workers(&mut self) {
        let now = Instant::now();
        let ask_after = self.ask_after();
        for index in 0..self.seen.len() {
            let Some(fiber) = self.shared.running.running(index) else {
                self.seen[index] = None;
                continue;
            };
            self.shared.running.request_arm(index);
            let slice = Slice {
                fiber,
                count: self
                    .shared
                    .running
                    .counters(index)
                    .slices
                    .load(Ordering::Relaxed),
            };
            let tid = self.shared.running.tid(index);
            match &mut self.seen[index] {
                Some(seen) if seen.slice == slice => {
                    if let CpuTime::NotRead = seen.waited {
                        // Read only for slices that outlast a tick.
                        seen.waited = CpuTime::read(tid);
                    }
                    let wall = now.saturating_duration_since(seen.since);
                    if seen.stage == Stage::Reported || wall < ask_after {
                        continue;
                    }
                    let ran = seen.waited.held(tid, seen.since, wall, self.tick);
                    match seen.stage {
                        // Reported only at a later look, so that a fiber that yields when
                        // asked never is.
                        Stage::Running if ran >= ask_after => {
                            seen.stage = Stage::Asked;
                            if let Some(core) = self.shared.fibers.get(fiber) {
                                ask_to_yield(&core);
                            }
                        }
                        Stage::Asked if ran >= self.threshold => {
                            seen.stage = Stage::Reported;
                            self.diagnose(index, fiber, ran);
                        }
                        _ => {}
                    }
                }
                seen => {
                    *seen = Some(Seen {
                        slice,
                        since: now,
                        waited: CpuTime::NotRead,
                        stage: Stage::Running,
                    })
                }
            }
        }
    }

    /// How long a slice may hold its worker before the fiber is asked to yield.
    fn ask_after(&self) -> Duration {
        self.threshold / 2
    }

    /// Worker `index` has run `fiber` for `ran` in one slice.
    fn diagnose(&self, index: usize, fiber: u64, ran: Duration) {
        let Some(core) = self.shared.fibers.get(fiber) else {
            return;
        };
        let label = fiber_label(&core);
        let ms = ran.as_millis();
        let blocked = self
            .shared
            .running
            .tid(index)
            .and_then(thread_state)
            .is_some_and(|state| state == 'S' || state == 'D');
        if blocked {
            let dump = Dump::of(&self.shared);
            let behind = dump
                .fibers
                .iter()
                .filter(|info| {
                    info.worker == Some(index)
                        && matches!(info.state, FiberState::Ready | FiberState::Unstarted)
                })
                .count();
            // A fiber in a fibra wait that holds its thread is unwinding: it must not let the
            // worker's other fibers run (they would see the thread panicking), so it blocks.
            let wait = dump
                .fibers
                .iter()
                .find(|info| info.id == fiber)
                .and_then(|info| info.wait.as_ref());
            if let Some(wait) = wait {
                let owner = match wait.owner {
                    Some(owner) => format!(" held by fiber {owner}"),
                    None => String::new(),
                };
                emit(&format!(
                    "fibra: worker {index} has been blocked for {ms} ms by {label} (spawned at \
                     {}), which is unwinding and waits for {}{owner} at {}: an unwinding fiber \
                     blocks its worker's thread while it waits, so {behind} ready fibers of \
                     this worker cannot run meanwhile, and if what it waits for needs one of \
                     them, it waits for ever. Do not wait for locks or channels in destructors \
                     that run while a fiber unwinds (a cancellation unwinds).",
                    core.location, wait.kind, wait.site
                ));
                return;
            }
            emit(&format!(
                "fibra: worker {index} has been blocked for {ms} ms in {label} (spawned at {}) \
                 by a call that blocks its thread outside fibra; {behind} ready fibers of this \
                 worker cannot run meanwhile. Run blocking calls with fibra::blocking (files: \
                 fibra::fs).",
                core.location
            ));
        } else {
            // Asked again: a cancellation point that is not a checkpoint may have taken the
            // first request and left the yield to the next reduction charged.
            ask_to_yield(&core);
            emit(&format!(
                "fibra: {label} (spawned at {}) has run for {ms} ms on worker {index} without \
                 yielding; it is asked to yield at its next fibra::checkpoint() (every runtime \
                 operation is one). Call fibra::checkpoint() in long computations.",
                core.location
            ));
        }
    }

    fn look_at_driver(&mut self) {
        let Some(probe) = &mut self.probe else {
            self.probe = Some(self.send_probe());
            return;
        };
        let tid = match self.driver_tid.load(Ordering::Relaxed) {
            0 => None,
            tid => Some(tid),
        };
        let answered = probe.answered.load(Ordering::Acquire);
        if answered != 0 {
            let stalled = probe.waited.held(
                tid,
                probe.sent,
                Duration::from_nanos(answered - 1),
                self.tick,
            );
            if probe.warned {
                emit(&format!(
                    "fibra: the driver thread was stalled for {} ms in all",
                    stalled.as_millis()
                ));
            }
            self.probe = None;
            return;
        }
        if let CpuTime::NotRead = probe.waited {
            // Read only for probes that outlast a tick.
            probe.waited = CpuTime::read(tid);
        }
        let wall = probe.sent.elapsed();
        if probe.warned || wall < self.threshold {
            return;
        }
        let waited = probe.waited.held(tid, probe.sent, wall, self.tick);
        if waited >= self.threshold {
            probe.warned = true;
            emit(&format!(
                "fibra: the driver thread has been stalled for {} ms: a task on it does not \
                 yield, so every timer and socket of the runtime waits. A tokio::spawn made in a \
                 fiber runs its task on the driver thread; run blocking work with \
                 fibra::blocking, and heavy async work on a tokio runtime of your own.",
                waited.as_millis()
            ));
        }
    }

    fn send_probe(&self) -> Probe {
        let sent = Instant::now();
        let answered = Arc::new(AtomicU64::new(0));
        let answer = answered.clone();
        let driver_tid = self.driver_tid.clone();
        super::spawn_own_task(&self.shared, async move {
            driver_tid.store(super::current_tid(), Ordering::Relaxed);
            answer.store(sent.elapsed().as_nanos() as u64 + 1, Ordering::Release);
        });
        Probe {
            sent,
            answered,
            // Read once the probe outlasts a tick, as for slices.
            waited: CpuTime::NotRead,
            warned: false,
        }
    }
}

/// The state letter of thread `tid` of this process (`R`, `S`, `D`, …), if it can be read.
pub(super) fn thread_state(tid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state follows the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Nanoseconds of CPU thread `tid` of this process has had (the first field of its
/// `schedstat`), if the kernel keeps it.
fn cpu_time(tid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

fn emit(text: &str) {
    tracing::warn!(target: "fibra::sysmon", "{text}");
    eprintln!("{text}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_calling_thread_runs() {
        let state = super::thread_state(super::super::current_tid());
        assert_eq!(state, Some('R'));
    }

    #[test]
    fn a_threads_cpu_time_is_read_and_grows_while_it_computes() {
        let tid = super::super::current_tid();
        let before = super::cpu_time(tid).expect("schedstat is readable");
        let start = std::time::Instant::now();
        while super::cpu_time(tid).unwrap() == before {
            assert!(start.elapsed().as_secs() < 60, "the CPU time never moved");
        }
    }

    #[test]
    fn a_late_first_read_counts_one_tick_before_it_and_the_cpu_time_after_it() {
        use super::CpuTime;
        use std::time::{Duration, Instant};
        let since = Instant::now();
        let tick = Duration::from_millis(5);
        let tid = super::super::current_tid();
        // Read as if the monitor itself had been kept off the CPU for 80 ms after `since`.
        let before = super::cpu_time(tid).expect("schedstat is readable");
        let late = CpuTime::Read(since + Duration::from_millis(80), before);
        let wall = Duration::from_millis(100);
        let held = late.held(Some(tid), since, wall, tick);
        assert!(held >= tick, "the tick before the read counts: {held:?}");
        let ran = Duration::from_nanos(super::cpu_time(tid).unwrap() - before);
        assert!(
            held <= tick + ran,
            "only one tick of the 80 ms before the read counts: {held:?}"
        );
    }
}
