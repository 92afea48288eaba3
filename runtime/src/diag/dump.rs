//! A snapshot of a runtime for people and tools: `Display` reads like a goroutine dump,
//! `serde::Serialize` gives JSON.

use super::looking::Looking;
use super::record::{coarse_now, Phase};
use crate::fiber::{Core, NO_HOME};
use crate::sched::Shared;
use crate::wait::WaitKind;
use serde::Serialize;
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Every live fiber, every worker and the open holds of a runtime, from
/// [`dump`](crate::dump) or [`Handle::dump`](crate::Handle::dump).
///
/// ```
/// fibra::run(|| {
///     let dump = fibra::dump();
///     assert_eq!(dump.workers.len(), fibra::Handle::current().workers());
///     let json = serde_json::to_string(&dump).unwrap();
///     assert!(json.contains("\"state\":\"running\""));
/// });
/// ```
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct Dump {
    /// The fibers that have not finished, by id.
    pub fibers: Vec<FiberInfo>,
    /// The workers, by index.
    pub workers: Vec<WorkerInfo>,
    /// The open holds (pending timers, blocking jobs, futures), oldest first.
    pub holds: Vec<HoldDump>,
}

/// One fiber in a [`Dump`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct FiberInfo {
    /// Its id ([`FiberId::as_u64`](crate::FiberId::as_u64)).
    pub id: u64,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// What it is doing.
    pub state: FiberState,
    /// The worker it runs on, once it has one.
    pub worker: Option<usize>,
    /// Where it was spawned.
    pub spawned_at: String,
    /// What it waits for, when it waits in a call that records its site.
    pub wait: Option<WaitInfo>,
    /// Whether its cancel scope has been cancelled (it unwinds at its next cancellation
    /// point).
    pub cancelling: bool,
}

/// What a [`FiberInfo`] is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FiberState {
    /// Spawned, not started yet.
    Unstarted,
    /// Waiting in its worker's queue to run.
    Ready,
    /// Running on its worker now.
    Running,
    /// Suspended until something wakes it.
    Parked,
}

impl fmt::Display for FiberState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FiberState::Unstarted => "unstarted",
            FiberState::Ready => "ready",
            FiberState::Running => "running",
            FiberState::Parked => "parked",
        })
    }
}

/// The wait of a [`FiberInfo`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct WaitInfo {
    /// What it waits for.
    pub kind: WaitKind,
    /// The address of the object waited on (or, for a join, the fiber id).
    pub object: usize,
    /// Where the blocking call was made.
    pub site: String,
    /// The line of `site`.
    pub line: u32,
    /// Whether the wait has a deadline.
    pub timed: bool,
    /// How long it has waited, in milliseconds.
    pub waited_ms: f64,
    /// The fiber that must let go first (a mutex's holder, the fiber joined), if known.
    pub owner: Option<u64>,
    /// Where that owner took the resource, if known.
    pub owner_took_at: Option<String>,
}

/// One worker in a [`Dump`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct WorkerInfo {
    /// Its index ([`current_worker`](crate::current_worker)).
    pub index: usize,
    /// The fiber it runs, if it runs one.
    pub running: Option<u64>,
    /// Its load: the fibers living on it plus the unstarted ones handed to it.
    pub load: usize,
}

/// One open hold in a [`Dump`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct HoldDump {
    /// What is waited for (`timer`, `blocking`, `future`, `cancel token`).
    pub kind: String,
    /// Where the wait began.
    pub site: String,
    /// The waiting fiber, if a fiber waits.
    pub fiber: Option<u64>,
    /// How long it has been open, in milliseconds.
    pub open_ms: f64,
}

impl Dump {
    pub(crate) fn of(shared: &Shared) -> Dump {
        let now = Instant::now();
        let looking = Looking::enter();
        let fibers = shared
            .fibers
            .snapshot()
            .iter()
            .filter_map(|core| fiber_info(shared, core, &looking))
            .collect();
        drop(looking);
        let workers = (0..shared.workers())
            .map(|index| WorkerInfo {
                index,
                running: shared.running.running(index),
                load: shared.loads.get(index),
            })
            .collect();
        let holds = shared
            .holds
            .snapshot()
            .into_iter()
            .map(|hold| HoldDump {
                kind: hold.kind.to_string(),
                site: hold.location.to_string(),
                fiber: hold.owner,
                open_ms: millis(now.saturating_duration_since(hold.since)),
            })
            .collect();
        Dump {
            fibers,
            workers,
            holds,
        }
    }

    /// The fiber with id `id`, if it is in the dump.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let me = fibra::current().id().as_u64();
    ///     assert_eq!(fibra::dump().fiber(me).unwrap().name.as_deref(), Some("main"));
    /// });
    /// ```
    pub fn fiber(&self, id: u64) -> Option<&FiberInfo> {
        self.fibers.iter().find(|fiber| fiber.id == id)
    }
}

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

fn fiber_info(shared: &Shared, core: &Core, looking: &Looking) -> Option<FiberInfo> {
    let phase = core.diag.phase();
    if phase == Phase::Done {
        return None;
    }
    let home = core.home.load(Ordering::Relaxed);
    let worker = (home != NO_HOME).then_some(home);
    let state = if phase == Phase::Unstarted {
        FiberState::Unstarted
    } else if core.latch.is_suspended() {
        FiberState::Parked
    } else if worker.is_some_and(|home| shared.running.running(home) == Some(core.id.as_u64())) {
        FiberState::Running
    } else {
        FiberState::Ready
    };
    let wait = core
        .diag
        .read(looking, |_| false)
        .map(|(waiting, owner)| WaitInfo {
            kind: waiting.kind,
            object: waiting.object,
            site: waiting.location.to_string(),
            line: waiting.location.line(),
            timed: waiting.timed,
            waited_ms: millis(Duration::from_nanos(
                coarse_now().saturating_sub(waiting.since),
            )),
            owner: owner.map(|owner| owner.fiber),
            owner_took_at: owner
                .and_then(|owner| owner.took_at)
                .map(ToString::to_string),
        });
    Some(FiberInfo {
        id: core.id.as_u64(),
        name: core.name.as_deref().map(str::to_owned),
        state,
        worker,
        spawned_at: core.location.to_string(),
        wait,
        // The monitor raises the hint too, to preempt the fiber.
        cancelling: core.cancel_hint.is_raised() && !core.diag.preempt_requested(),
    })
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fibra dump: {} fibers, {} workers, {} open holds",
            self.fibers.len(),
            self.workers.len(),
            self.holds.len()
        )?;
        for fiber in &self.fibers {
            writeln!(f)?;
            write!(f, "fiber {}", fiber.id)?;
            if let Some(name) = &fiber.name {
                write!(f, " {name:?}")?;
            }
            write!(f, " [{}", fiber.state)?;
            if let Some(wait) = &fiber.wait {
                write!(f, " on {}, {} ms", wait.kind, wait.waited_ms)?;
            }
            if let Some(worker) = fiber.worker {
                write!(f, ", worker {worker}")?;
            }
            if fiber.cancelling {
                f.write_str(", cancelling")?;
            }
            writeln!(f, "]:")?;
            if let Some(wait) = &fiber.wait {
                write!(
                    f,
                    "    waits for {} {:#x} at {}",
                    wait.kind, wait.object, wait.site
                )?;
                if wait.timed {
                    f.write_str(" (with a deadline)")?;
                }
                writeln!(f)?;
                if let Some(owner) = wait.owner {
                    write!(f, "    held by fiber {owner}")?;
                    if let Some(took_at) = &wait.owner_took_at {
                        write!(f, ", taken at {took_at}")?;
                    }
                    writeln!(f)?;
                }
            }
            writeln!(f, "    spawned at {}", fiber.spawned_at)?;
        }
        writeln!(f)?;
        for worker in &self.workers {
            write!(f, "worker {}: ", worker.index)?;
            match worker.running {
                Some(id) => write!(f, "running fiber {id}")?,
                None => f.write_str("idle")?,
            }
            writeln!(f, ", load {}", worker.load)?;
        }
        for hold in &self.holds {
            write!(f, "hold: {} taken at {}", hold.kind, hold.site)?;
            if let Some(fiber) = hold.fiber {
                write!(f, " by fiber {fiber}")?;
            }
            writeln!(f, ", open {} ms", hold.open_ms)?;
        }
        Ok(())
    }
}
