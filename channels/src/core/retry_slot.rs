//! The right to retry on one side of a channel (see `op::patience`): at most one blocked caller
//! per side retries unregistered at a time, so that retrying does not break the FIFO order of
//! blocked callers.

use fibra_runtime::loom::sync::atomic::{AtomicUsize, Ordering};
use fibra_runtime::wait::RETRY_TURNS;

/// How many times a caller yields, waiting for a retry slot held by another, before it gives
/// up its turn and registers at once. A holder that runs stops at its next retry once it sees
/// the contention mark, so a live one frees the slot well within this (twice the retries a
/// holder may make) unless its worker is far behind; in that rare case the waiting caller only
/// registers before it.
const YIELDS_FOR_A_TURN: u32 = 2 * RETRY_TURNS;

/// Nobody retries on this side.
pub(crate) const FREE: usize = 0;
/// A caller retries here.
const HELD: usize = 1;
/// A caller retries here and another waits for its turn.
const CONTENDED: usize = 2;

/// The right to retry on one side of a channel.
#[derive(Debug, Default)]
pub struct RetrySlot(pub(crate) AtomicUsize);

impl RetrySlot {
    #[inline(always)]
    pub(crate) fn try_take(&self) -> bool {
        self.0.load(Ordering::Relaxed) == FREE
            && self
                .0
                .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Waits (yielding) until a held slot is free, marked contended meanwhile so that its
    /// holder stops retrying. False when the holder has not freed it after
    /// [`YIELDS_FOR_A_TURN`] yields.
    pub(crate) fn wait_free(&self) -> bool {
        let marked = self
            .0
            .compare_exchange(HELD, CONTENDED, Ordering::Relaxed, Ordering::Relaxed);
        if marked.is_ok() || marked == Err(CONTENDED) {
            for _ in 0..YIELDS_FOR_A_TURN {
                fibra_runtime::yield_now();
                if self.0.load(Ordering::Relaxed) == FREE {
                    return true;
                }
            }
            return false;
        }
        true
    }

    #[inline(always)]
    pub(crate) fn is_contended(&self) -> bool {
        self.0.load(Ordering::Relaxed) == CONTENDED
    }

    /// Frees the slot. Release: a caller that waited for it and then registers does so after
    /// the holder's registration.
    #[inline(always)]
    pub(crate) fn release(&self) {
        self.0.store(FREE, Ordering::Release);
    }
}
