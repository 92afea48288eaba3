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
//! For its first [`SPIN_ALONE`] the spinner keeps its core and looks every few spin-loop
//! hints: a hand-off between two workers that bounce work comes back within that, and a
//! thread yield, a system call of about a microsecond on a virtual machine, would delay the
//! look that finds it. After that it yields its core between looks (see `Local::idle`): when
//! more threads are runnable than there are cores, the one it would keep waiting is often the
//! very thread that sends the work (the other worker, the driver thread with readiness
//! events, or a client on the same machine). Measured on an AMD EPYC guest (2 cores), a
//! park/unpark ping-pong between fibers on two workers: 3.7 µs a round trip when every look
//! came after 64 hints (1.7 µs there) and a thread yield, 0.6 µs with this spin.
//!
//! A look checks this worker's inbox and hand-offs, where wakes of its own fibers arrive. The
//! injector and the other workers' queues, where there is only work to steal, are checked once
//! per burst of [`LOOKS_PER_CLOCK`] looks: starting a stolen fiber a microsecond sooner gains
//! little, and a thief that took every trivial child the moment it was spawned made
//! `spawn_join` slower (0.63–0.65× tokio before, 0.75–0.81× with such a thief: each of those
//! children wakes its joiner from the other worker).

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The longest spin.
pub(super) const SPIN_FOR: Duration = Duration::from_micros(50);
/// How long a spin looks for work without yielding its core.
pub(super) const SPIN_ALONE: Duration = Duration::from_micros(8);
/// Spin-loop hints between two looks for work. One hint takes from a few cycles to some 30 ns
/// depending on the CPU (27 ns measured on an AMD EPYC guest, where 64 of them made every look
/// wait 1.7 µs), so a few keep the look frequent everywhere.
pub(super) const PAUSES_PER_LOOK: u32 = 4;
/// Looks between two reads of the clock, which ends the spin and starts its yields.
pub(super) const LOOKS_PER_CLOCK: u32 = 8;

/// What an idle spin does after a burst of looks found no work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterLooks {
    /// Look again at once.
    Spin,
    /// Yield the thread, then look again.
    YieldThread,
    /// The spin is over: sleep.
    Sleep,
}

/// One idle spin's clock: when it ends, and from when it yields its core between looks.
pub(super) struct SpinClock {
    yield_from: Instant,
    until: Instant,
}

impl SpinClock {
    /// A spin that began at `went_idle` and lasts `spin`.
    pub(super) fn new(went_idle: Instant, spin: Duration) -> SpinClock {
        SpinClock {
            yield_from: went_idle + SPIN_ALONE,
            until: went_idle + spin,
        }
    }

    /// What to do at `now`, after looks that found nothing.
    pub(super) fn after_looks(&self, now: Instant) -> AfterLooks {
        if now >= self.until {
            AfterLooks::Sleep
        } else if now >= self.yield_from {
            AfterLooks::YieldThread
        } else {
            AfterLooks::Spin
        }
    }
}
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

    #[test]
    fn a_spin_keeps_its_core_at_first_then_yields_it_between_looks_until_it_ends() {
        let went_idle = Instant::now();
        let clock = SpinClock::new(went_idle, SPIN_FOR);
        let at = |micros| clock.after_looks(went_idle + Duration::from_micros(micros));
        assert_eq!(at(0), AfterLooks::Spin);
        assert_eq!(at(SPIN_ALONE.as_micros() as u64 - 1), AfterLooks::Spin);
        assert_eq!(at(SPIN_ALONE.as_micros() as u64), AfterLooks::YieldThread);
        assert_eq!(at(SPIN_FOR.as_micros() as u64 - 1), AfterLooks::YieldThread);
        assert_eq!(at(SPIN_FOR.as_micros() as u64), AfterLooks::Sleep);
        let short = SpinClock::new(went_idle, SPIN_MIN);
        assert!(SPIN_MIN < SPIN_ALONE);
        assert_eq!(short.after_looks(went_idle), AfterLooks::Spin);
        assert_eq!(short.after_looks(went_idle + SPIN_MIN), AfterLooks::Sleep);
    }
}
