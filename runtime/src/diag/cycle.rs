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
//!
//! Why a pass of checks may skip resources ([`DeadEnds`]): a worker checks its listed fibers
//! one after another, and a convoy of a thousand fibers on one lock would have each of them
//! read through the holder and look the owner up, to find the same owner running. A check
//! only has to find the cycles whose last fiber to start waiting is the checked one (see
//! `lazy_check`), and every fiber a pass checks began its wait before the pass (it runs only
//! on the checking worker). So once a walk of the pass has seen a fiber that was not suspended
//! in an untimed wait with an owner, every resource on its way there leads, at that moment, to
//! a fiber that has yet to start the wait that would close a cycle: a fiber of the pass
//! waiting on one of them is not the last of any cycle, and is not walked. (A resource of a
//! cycle that is closed already never leads to such a fiber: its owners wait for ever.)

use super::looking::Looking;
use super::record::{OwnerNow, Resource, Waiting};
use super::table::SCRAMBLE;
use super::{report, Deadlock};
use crate::fiber::Core;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt::Write;
use std::hash::{BuildHasherDefault, Hasher};
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

/// The resources found, during one pass of a worker's checks, to lead to a fiber not
/// suspended in an owned wait (see the module docs).
#[derive(Default)]
pub(crate) struct DeadEnds(HashSet<Resource, BuildHasherDefault<IdHasher>>);

impl DeadEnds {
    fn contains(&self, resource: Resource) -> bool {
        self.0.contains(&resource)
    }

    /// Marks the resources of `path` and `then`: the walk along them ended at a fiber not
    /// suspended in an owned wait.
    fn mark(&mut self, path: &[Edge], then: impl IntoIterator<Item = Resource>) {
        let on_path = path.iter().filter_map(|edge| edge.waiting.resource);
        self.0.extend(on_path.chain(then));
    }
}

/// Looks for a cycle through `me`, which has published an owned wait and suspended since
/// before the pass that `dead` belongs to began; reports it and, under `Deadlock::Panic`,
/// dooms and wakes its fibers. Whether it woke them.
pub(crate) fn check(me: &Arc<Core>, looking: &Looking, dead: &mut DeadEnds) -> bool {
    let policy = me.shared.config.deadlock;
    if policy == Deadlock::Off {
        return false;
    }
    // Most checks find no cycle: only a first walk that finds one serialises with the others.
    let Some(first) = walk(me, looking, dead) else {
        return false;
    };
    let mut reported = REPORTED.lock().unwrap_or_else(|p| p.into_inner());
    if walk(me, looking, dead).as_ref() != Some(&first) {
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

/// The cycle from `me` back to `me`, if the owners lead there; a walk that ends at a fiber
/// not suspended in an owned wait marks the resources on its way in `dead`.
fn walk(me: &Arc<Core>, looking: &Looking, dead: &mut DeadEnds) -> Option<Vec<Edge>> {
    let mut path: Vec<Edge> = Vec::new();
    // Borrowed until it is on the path: most walks end at the first fiber, and a count
    // changed for nothing is a locked instruction on another fiber's cache line.
    let mut fiber = Cow::Borrowed(me);
    while path.len() < MAX_CYCLE {
        let skipped = Cell::new(false);
        let read = if fiber.latch.is_suspended() {
            let skip = |resource| {
                skipped.set(dead.contains(resource));
                skipped.get()
            };
            fiber.diag.read(looking, skip)
        } else {
            None
        };
        let (waiting, owner) = match read {
            Some((waiting, Some(owner))) if !waiting.timed => (waiting, owner),
            // A resource already marked: the walk leads where another one went.
            _ if skipped.get() => {
                dead.mark(&path, None);
                return None;
            }
            // A resource without an owner leads nowhere either.
            Some((waiting, None)) if !waiting.timed => {
                dead.mark(&path, waiting.resource);
                return None;
            }
            _ => {
                dead.mark(&path, Some(Resource::Fiber(fiber.id.as_u64())));
                return None;
            }
        };
        path.push(Edge {
            fiber: fiber.into_owned(),
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
        match me.shared.fibers.get(owner.fiber) {
            Some(next) => fiber = Cow::Owned(next),
            None => {
                dead.mark(&path, Some(Resource::Fiber(owner.fiber)));
                return None;
            }
        }
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

/// Fiber ids and addresses, spread with one multiplication: the hasher of the resources a pass
/// of cycle checks marks.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8 | u64::from(byte)).wrapping_mul(SCRAMBLE);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(SCRAMBLE);
    }
}

#[cfg(test)]
mod tests {
    use super::{walk, DeadEnds};
    use crate::diag::looking::Looking;
    use crate::diag::record::Resource;
    use crate::fiber::Core;
    use crate::wait::{park_current_at, Holder, WaitKind, WaitSite};
    use crate::{Deadlock, Runtime};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Three holders and the flag that lets their waiters go.
    #[derive(Default)]
    struct Locks {
        holders: [Holder; 3],
        go: AtomicBool,
    }

    impl Locks {
        /// Takes holder `held` (if any), waits on holder `waited` until `go`, lets go.
        fn hold_and_wait(&self, held: Option<usize>, waited: usize) {
            if let Some(held) = held {
                self.holders[held].acquired();
            }
            let holder = &self.holders[waited];
            let site = WaitSite::new(WaitKind::Mutex, holder).held_by(holder);
            while !self.go.load(Ordering::SeqCst) {
                park_current_at(&site);
            }
            if let Some(held) = held {
                self.holders[held].released();
            }
        }
    }

    fn core(id: crate::FiberId) -> Arc<Core> {
        crate::sched::with_running(|core| core.expect("in a fiber").shared.fibers.get(id.0))
            .expect("a live fiber")
    }

    #[test]
    fn a_walk_marks_its_way_to_a_running_owner_and_follows_no_marked_resource() {
        // No worker's own checks: the test walks by hand.
        let runtime = Runtime::builder()
            .workers(1)
            .on_deadlock(Deadlock::Off)
            .build()
            .unwrap();
        runtime.block_on(|| {
            let locks = Arc::new(Locks::default());
            let spawn = |held, waited| {
                let locks = locks.clone();
                crate::spawn(move || locks.hold_and_wait(held, waited))
            };
            // `a` and `b` wait for each other; `c` waits for what this fiber holds.
            locks.holders[2].acquired();
            let a = spawn(Some(0), 1);
            let b = spawn(Some(1), 0);
            let c = spawn(None, 2);
            crate::yield_now();
            let (a_core, c_core) = (core(a.fiber().id()), core(c.fiber().id()));
            let holder =
                |index: usize| Resource::Holder(&locks.holders[index] as *const _ as usize);
            let looking = Looking::enter();

            let mut dead = DeadEnds::default();
            let cycle = walk(&a_core, &looking, &mut dead).expect("a and b wait for each other");
            assert_eq!(cycle.len(), 2);
            assert!(dead.0.is_empty(), "a cycle marks nothing");

            assert!(walk(&c_core, &looking, &mut dead).is_none());
            let me = crate::current().id().as_u64();
            let marked = [holder(2), Resource::Fiber(me)];
            assert_eq!(
                dead.0,
                marked.into_iter().collect(),
                "c's way to its running owner"
            );

            dead.0.insert(holder(1));
            assert!(
                walk(&a_core, &looking, &mut dead).is_none(),
                "a marked resource is not followed"
            );
            drop(looking);

            locks.go.store(true, Ordering::SeqCst);
            locks.holders[2].released();
            for fiber in [&a, &b, &c] {
                fiber.fiber().unpark();
            }
            for fiber in [a, b, c] {
                fiber.join().unwrap();
            }
        });
    }
}
