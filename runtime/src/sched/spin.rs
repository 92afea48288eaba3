//! How long an idle worker spins before it sleeps: only while hand-offs are arriving.
//!
//! Waking a sleeping worker costs a futex call on both sides and a trip through the OS
//! scheduler; a hand-off between fibers on two workers usually comes back well within
//! [`SPIN_FOR`], so a worker whose work keeps coming back soon spins that long. A worker whose
//! spins find nothing halves its next spin each time, down to none, so that on a loaded
//! machine it does not take CPU from the threads it waits for; work arriving during a spin, or
//! soon after the worker went to sleep (a spin would have caught it), doubles it again. "Soon"
//! counts to the unpark that woke the worker, not to when its thread ran again: on a busy
//! machine that wake-up latency alone can exceed [`SPIN_FOR`], and counting it would keep a
//! worker sleeping through every hand-off of a stream that spins would catch.
//!
//! Between looks the spinner yields its core (see `Local::idle`): when more threads are
//! runnable than there are cores, the one it would keep waiting is often the very thread that
//! sends the work (the other worker, the driver thread with readiness events, or a client on
//! the same machine).

use std::cell::Cell;
use std::time::Duration;

/// The longest spin.
pub(super) const SPIN_FOR: Duration = Duration::from_micros(50);
/// The spin a worker that stopped spinning starts growing from again.
const SPIN_MIN: Duration = Duration::from_micros(4);

/// One worker's next spin; used only on its thread.
pub(super) struct Spin(Cell<Duration>);

impl Spin {
    pub(super) fn new() -> Spin {
        Spin(Cell::new(SPIN_FOR))
    }

    /// How long the next idle spin lasts.
    pub(super) fn next(&self) -> Duration {
        self.0.get()
    }

    /// Work came during a spin, or within [`SPIN_FOR`] of going idle.
    pub(super) fn work_came_soon(&self) {
        self.0.set((self.0.get() * 2).clamp(SPIN_MIN, SPIN_FOR));
    }

    /// A spin ended without work.
    pub(super) fn spun_for_nothing(&self) {
        let half = self.0.get() / 2;
        self.0.set(if half < SPIN_MIN {
            Duration::ZERO
        } else {
            half
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_that_find_nothing_stop_and_work_that_comes_soon_brings_them_back() {
        let spin = Spin::new();
        assert_eq!(spin.next(), SPIN_FOR);
        for _ in 0..5 {
            spin.spun_for_nothing();
        }
        assert_eq!(
            spin.next(),
            Duration::ZERO,
            "no spin once spins keep finding nothing"
        );
        spin.work_came_soon();
        assert_eq!(spin.next(), SPIN_MIN);
        for _ in 0..5 {
            spin.work_came_soon();
        }
        assert_eq!(
            spin.next(),
            SPIN_FOR,
            "hand-offs arriving: the full spin, no more"
        );
        spin.spun_for_nothing();
        assert_eq!(spin.next(), SPIN_FOR / 2);
    }
}
