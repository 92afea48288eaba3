//! Recording without contention: each worker thread accumulates into its own [`Stats`] and
//! hands it to the run's total now and then and when a VU ends.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::stats::Stats;

/// How stale the run's total may be (what the live display shows).
const FLUSH_EVERY: Duration = Duration::from_millis(100);

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

struct Local {
    run: u64,
    stats: Stats,
    since: Instant,
}

thread_local! {
    static LOCAL: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
}

/// The measurements of one run.
pub(crate) struct Recorder {
    id: u64,
    origin: Instant,
    total: Mutex<Stats>,
}

impl Recorder {
    pub(crate) fn new(origin: Instant) -> Recorder {
        Recorder {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            origin,
            total: Mutex::new(Stats::default()),
        }
    }

    /// The start of the run.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Runs `f` on this thread's part of the run's stats. `f` must not suspend the fiber.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Stats) -> R) -> R {
        LOCAL.with(|locals| {
            let mut locals = locals.borrow_mut();
            let at = match locals.iter().position(|l| l.run == self.id) {
                Some(at) => at,
                None => {
                    locals.push(Local {
                        run: self.id,
                        stats: Stats::default(),
                        since: Instant::now(),
                    });
                    locals.len() - 1
                }
            };
            f(&mut locals[at].stats)
        })
    }

    /// Hands this thread's part to the total when it was last handed over a while ago.
    pub(crate) fn flush_if_due(&self, now: Instant) {
        let due = LOCAL.with(|locals| {
            locals
                .borrow()
                .iter()
                .any(|l| l.run == self.id && now.duration_since(l.since) >= FLUSH_EVERY)
        });
        if due {
            self.flush();
        }
    }

    /// Hands this thread's part to the total.
    pub(crate) fn flush(&self) {
        let local = LOCAL.with(|locals| {
            let mut locals = locals.borrow_mut();
            let at = locals.iter().position(|l| l.run == self.id)?;
            Some(locals.swap_remove(at).stats)
        });
        if let Some(stats) = local {
            self.total
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .merge(&stats);
        }
    }

    /// Runs `f` on the total handed over so far.
    pub(crate) fn total<R>(&self, f: impl FnOnce(&mut Stats) -> R) -> R {
        f(&mut self.total.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The total, once every VU has flushed.
    pub(crate) fn into_stats(self) -> Stats {
        self.total.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// Flushes this thread's part when a VU ends, even by unwinding.
pub(crate) struct FlushOnDrop<'a>(pub &'a Recorder);

impl Drop for FlushOnDrop<'_> {
    fn drop(&mut self) {
        self.0.flush();
    }
}
