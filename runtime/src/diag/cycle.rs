//! Cycle deadlocks: a wait-for graph over waits with one known owner (a mutex's holder, the
//! fiber a join waits for), followed from a fiber suspended on such a wait.
//!
//! Why from the waiting fibers and not from a monitor: a cycle can only be closed by the last
//! of its fibers to start waiting, and its worker lists that fiber for a check (see
//! `lazy_check`); checking from there costs nothing to fibers that never wait on an owned
//! resource, finds every cycle within a look of its worker, and needs no thread.
//!
//! Why a report is certain: the walk follows, from each fiber, its published untimed wait to
//! the resource's current owner. It is done twice, and counts only if both walks saw the same
//! fibers, each suspended (latch `WAITING`) in the same wait (the same generation) with the
//! same owner. A fiber suspended across both reads did not run between them, so at one moment,
//! after the first walk and before the second, every fiber of the cycle was suspended: none
//! could release what it holds, and each waits for the next. An owner is cleared before the
//! resource is released and the release happens before its owner's next suspension (which the
//! walk reads first), so a released resource never shows its old owner. Checks from two
//! fibers of the same cycle at once are serialised and reported once.

use super::looking::Looking;
use super::record::{OwnerNow, Waiting};
use super::{report, Deadlock};
use crate::fiber::Core;
use std::collections::HashSet;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// A walk longer than this is given up (it is then not through the checker).
const MAX_CYCLE: usize = 256;

/// One fiber of a cycle, its wait and the owner of what it waits for.
#[derive(Clone)]
struct Edge {
    fiber: Arc<Core>,
    waiting: Waiting,
    owner: OwnerNow,
}

impl PartialEq for Edge {
    fn eq(&self, other: &Edge) -> bool {
        Arc::ptr_eq(&self.fiber, &other.fiber)
            && self.waiting.generation == other.waiting.generation
            && self.owner == other.owner
    }
}

/// A cycle as reported: its (fiber, wait generation) pairs, sorted.
type CycleKey = Vec<(u64, u64)>;

/// Cycles already reported.
static REPORTED: Mutex<Option<HashSet<CycleKey>>> = Mutex::new(None);

/// Looks for a cycle through `me`, which has published an owned wait and suspended; reports
/// it and, under `Deadlock::Panic`, dooms and wakes its fibers. Whether it woke them.
pub(crate) fn check(me: &Arc<Core>, looking: &Looking) -> bool {
    let policy = me.shared.config.deadlock;
    if policy == Deadlock::Off {
        return false;
    }
    // Most checks find no cycle: only a first walk that finds one serialises with the others.
    let Some(first) = walk(me, looking) else {
        return false;
    };
    let mut reported = REPORTED.lock().unwrap_or_else(|p| p.into_inner());
    if walk(me, looking).as_ref() != Some(&first) {
        return false;
    }
    let mut key: CycleKey = first
        .iter()
        .map(|edge| (edge.fiber.id.as_u64(), edge.waiting.generation))
        .collect();
    key.sort_unstable();
    if !reported.get_or_insert_with(HashSet::new).insert(key) {
        return false;
    }
    drop(reported);
    let text: Arc<str> = describe(&first).into();
    report::deadlock(&me.shared, &text);
    if policy != Deadlock::Panic {
        return false;
    }
    for edge in &first {
        edge.fiber.diag.doom(text.clone());
        edge.fiber.unpark();
    }
    true
}

/// The cycle from `me` back to `me`, if the owners lead there.
fn walk(me: &Arc<Core>, looking: &Looking) -> Option<Vec<Edge>> {
    let mut path: Vec<Edge> = Vec::new();
    let mut fiber = me.clone();
    while path.len() < MAX_CYCLE {
        if !fiber.latch.is_suspended() {
            return None;
        }
        let (waiting, owner) = fiber.diag.read(looking)?;
        let owner = owner.filter(|_| !waiting.timed)?;
        path.push(Edge {
            fiber,
            waiting,
            owner,
        });
        if owner.fiber == me.id.as_u64() {
            return Some(path);
        }
        if path
            .iter()
            .any(|edge| edge.fiber.id.as_u64() == owner.fiber)
        {
            // A cycle that does not pass through `me`: its own last fiber reported it.
            return None;
        }
        fiber = me.shared.fibers.get(owner.fiber)?;
    }
    None
}

fn describe(cycle: &[Edge]) -> String {
    let mut text = format!(
        "fibra: deadlock: {} fiber{} wait for each other in a cycle:\n",
        cycle.len(),
        if cycle.len() == 1 { "" } else { "s" }
    );
    for (index, edge) in cycle.iter().enumerate() {
        let next = &cycle[(index + 1) % cycle.len()].fiber;
        let _ = write!(
            text,
            "  {} (spawned at {})\n    waits for {} {:#x} at {}\n    held by {}",
            report::fiber_label(&edge.fiber),
            edge.fiber.location,
            edge.waiting.kind,
            edge.waiting.object,
            edge.waiting.location,
            report::fiber_label(next),
        );
        match edge.owner.took_at {
            Some(took_at) => {
                let _ = writeln!(text, ", which took it at {took_at}");
            }
            None => text.push('\n'),
        }
    }
    text
}
