//! The closed model: each VU starts its next iteration when the previous one completed, while
//! the stages (if any) want it.

use std::sync::Arc;
use std::time::Instant;

use fibra::chan;

use crate::parse::Stages;
use crate::record::FlushOnDrop;
use crate::run::{iterate, wait_until, Shared};
use crate::scenario::StepFn;
use crate::vu::Vu;

/// Runs VU `index` of the closed model until the run is over.
pub(crate) fn closed_vu(
    index: usize,
    shared: &Arc<Shared>,
    mut steps: Vec<StepFn>,
    stages: Option<Stages>,
    _done: chan::Writer<()>,
) {
    let _flush = FlushOnDrop(&shared.recorder);
    let mut vu = Vu::new(index, shared.clone());
    let mut active = false;
    loop {
        let now = Instant::now();
        if shared.over(now) {
            break;
        }
        if let Some(stages) = &stages {
            let elapsed = now.duration_since(shared.recorder.origin());
            // VU `index` runs while the rounded target is above it.
            let level = index as f64 + 0.5;
            let wanted = stages.target_at(elapsed) >= level;
            if wanted != active {
                active = wanted;
                if wanted {
                    shared.activate();
                } else {
                    shared.deactivate();
                }
            }
            if !wanted {
                match stages.reaches(level, elapsed) {
                    // The loop's next turn sees a stop.
                    Some(at) => _ = wait_until(shared.recorder.origin() + at, &shared.stop),
                    None => break,
                }
                continue;
            }
        } else if !active {
            active = true;
            shared.activate();
        }
        if !shared.claim() {
            break;
        }
        iterate(&mut vu, &mut steps, shared, None, now);
    }
    if active {
        shared.deactivate();
    }
}
