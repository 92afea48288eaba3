//! The patience policy (documented on the `wait` module): [`Backoff`] for a peer a few
//! instructions from done, [`RETRIES_BEFORE_REGISTERING`] for a channel operation.

/// How many times a blocked channel operation (or select) yields and tries again before it
/// registers a waiter. Zero under loom.
///
/// ```
/// assert!(fibra::wait::RETRIES_BEFORE_REGISTERING > 0);
/// ```
#[cfg(not(loom))]
pub const RETRIES_BEFORE_REGISTERING: u32 = 32;
/// How many times a blocked channel operation (or select) yields and tries again before it
/// registers a waiter. Zero under loom.
#[cfg(loom)]
pub const RETRIES_BEFORE_REGISTERING: u32 = 0;

/// Spins before each thread yield.
#[cfg(not(loom))]
const SPINS: u32 = 64;

/// Waits out a peer on another thread that is a few instructions from finishing what it
/// started: spins [`snooze`](Backoff::snooze) by snooze a little, then yields the thread.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let ready = AtomicBool::new(false);
/// std::thread::scope(|s| {
///     s.spawn(|| ready.store(true, Ordering::Release));
///     let mut backoff = fibra::wait::Backoff::new();
///     while !ready.load(Ordering::Acquire) {
///         backoff.snooze();
///     }
/// });
/// ```
#[derive(Debug, Default)]
pub struct Backoff {
    #[cfg(not(loom))]
    spins: u32,
}

impl Backoff {
    /// A backoff that starts with spinning.
    pub const fn new() -> Backoff {
        Backoff {
            #[cfg(not(loom))]
            spins: 0,
        }
    }

    /// Waits a moment: a spin while few were made, then a thread yield (under loom, a loom
    /// yield, so the model runs the peer).
    #[inline]
    pub fn snooze(&mut self) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        if self.spins < SPINS {
            self.spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}
