//! Taking holds for the calling fiber's external waits.

use crate::sched::with_worker;
use crate::wait::running_fiber;
use fibra_driver::{Hold, HoldKind};

/// Takes a hold on the current runtime for a wait of `kind` started at the caller's location,
/// owned by the running fiber; `None` off the runtime's workers (nothing to diagnose there).
#[track_caller]
pub(crate) fn take(kind: HoldKind) -> Option<Hold> {
    let holds = with_worker(|local| local.map(|local| local.shared().holds.clone()))?;
    let owner = running_fiber().map(|fiber| fiber.id().as_u64());
    Some(holds.take(kind, owner))
}
