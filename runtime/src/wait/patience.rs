//! The patience policy (documented on the `wait` module): [`Backoff`] for a peer a few
//! instructions from done, [`RetryBudget`] (spending [`RETRY_TURNS`] at [`yield_cost`] a
//! retry) for a caller whose peer is usually a moment away.

use crate::fiber::Suspend;
use crate::sched::with_worker;

/// The fiber turns a blocked channel operation (or select) may spend on retries before it
/// registers a waiter. A retry costs a turn for every fiber that runs before the caller tries
/// again (see [`RetryBudget::retry`]): with many fibers ready on the worker and none of them
/// woken an operation parks at once, since a yield would run every one of them before it
/// could try again, and a wake-up costs less than that; with one peer ready (or none, the
/// peer running on another worker) it retries `RETRY_TURNS` times.
///
/// ```
/// assert!(fibra::wait::RETRY_TURNS > 0);
/// ```
#[cfg(not(loom))]
pub const RETRY_TURNS: u32 = 32;
/// The fiber turns a blocked channel operation (or select) may spend on retries before it
/// registers a waiter. Zero under loom.
#[cfg(loom)]
pub const RETRY_TURNS: u32 = 0;

/// The first retries made with nothing else ready on the worker, which pause the thread
/// instead of yielding it (see [`RetryBudget::retry`]). Few: a consumer that polls its
/// producers' channel every few hundred nanoseconds takes the channel's lines away from them
/// at every poll, where one that yields its thread lets them fill a batch (`select2`, two
/// producers and a consumer on two workers, took some 15 % longer with half the budget
/// pausing: median of eight runs, fibra ÷ tokio 0.82 against 0.71).
const PAUSING_RETRIES: u32 = 3;
/// Spin-loop hints in a retry that pauses: about 100 ns where one takes 27 ns (an AMD EPYC
/// guest), less on CPUs with shorter hints.
const PAUSES_PER_RETRY: u32 = 4;

/// Whether a retry made alone on its worker, with `left` turns left before it, pauses rather
/// than yields the thread: those made while fewer than [`PAUSING_RETRIES`] turns of the budget
/// are spent do.
#[inline]
fn pauses_alone(left: u32) -> bool {
    RETRY_TURNS - left < PAUSING_RETRIES
}

/// How many fiber turns a [`yield_now`](crate::yield_now) by the caller costs now: one for
/// every fiber that runs on its worker before it runs again, and at least one (a yield with
/// nothing else ready still spends a turn of the worker). One off a worker.
///
/// On one worker, where no other worker can take the spawned fibers:
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
/// runtime.block_on(|| {
///     assert_eq!(fibra::wait::yield_cost(), 1);
///     let one = fibra::spawn(|| {});
///     assert_eq!(fibra::wait::yield_cost(), 1);
///     let two = fibra::spawn(|| {});
///     assert_eq!(fibra::wait::yield_cost(), 2);
///     one.join().unwrap();
///     two.join().unwrap();
/// });
/// assert_eq!(fibra::wait::yield_cost(), 1);
/// ```
#[inline]
pub fn yield_cost() -> u32 {
    u32::try_from(turns_of_a_yield()).unwrap_or(u32::MAX)
}

/// [`yield_cost`], before it is narrowed to a `u32`.
#[inline]
fn turns_of_a_yield() -> usize {
    with_worker(|local| local.map_or(0, |local| local.ready_len())).max(1)
}

/// The retries one blocked caller has left before it registers and parks: [`RETRY_TURNS`]
/// fiber turns, each retry costing [`yield_cost`] of them. Once a retry would cost more than
/// is left, or the caller [gives up](RetryBudget::give_up), none are left: a caller that
/// registered parks at once from then on.
///
/// On one worker with nothing else ready, where a retry costs one turn:
///
/// ```
/// use fibra::wait::{RetryBudget, RETRY_TURNS};
///
/// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
/// runtime.block_on(|| {
///     let mut budget = RetryBudget::new();
///     let mut retries = 0;
///     while budget.retry() {
///         retries += 1;
///     }
///     assert_eq!(retries, RETRY_TURNS);
///     assert!(budget.is_spent());
///
///     let mut budget = RetryBudget::new();
///     budget.give_up();
///     assert!(!budget.retry());
/// });
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RetryBudget {
    /// Fiber turns left to spend on retries.
    left: u32,
}

impl RetryBudget {
    /// A budget of [`RETRY_TURNS`] turns.
    pub const fn new() -> RetryBudget {
        RetryBudget { left: RETRY_TURNS }
    }

    /// Spends one retry: if stepping aside costs no more turns than are left, steps aside (so
    /// whoever the caller waits for may run) and returns true, and the caller tries again;
    /// otherwise spends every turn left and returns false, and the caller registers and parks.
    /// With fibers woken on the worker and waiting to run, the caller runs again right after
    /// them (and after any unstarted fibers, which may start first), for a turn each;
    /// otherwise it yields, for [`yield_cost`] turns. With nothing else ready on the worker
    /// the peer runs on another worker: the first few retries then pause the thread a moment
    /// (an answer from another core comes within a few hundred nanoseconds, less than a thread
    /// yield costs), and the later ones yield the worker's thread, so a peer whose worker
    /// waits for the same CPU runs.
    ///
    /// On one worker, a fiber that wakes its peer and then waits for the peer's answer gets
    /// it by a retry, ahead of the fibers that yielded:
    ///
    /// ```
    /// use fibra::wait::{current_waker, park_current, RetryBudget};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::{Arc, Mutex};
    ///
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// runtime.block_on(|| {
    ///     let answered = Arc::new(AtomicBool::new(false));
    ///     let waker = Arc::new(Mutex::new(None));
    ///     let peer = {
    ///         let (answered, waker) = (answered.clone(), waker.clone());
    ///         fibra::spawn(move || {
    ///             *waker.lock().unwrap() = Some(current_waker());
    ///             park_current();
    ///             answered.store(true, Ordering::Relaxed);
    ///         })
    ///     };
    ///     // Many yielders: a plain yield would cost more turns than a budget holds.
    ///     let yielders: Vec<_> = (0..2 * fibra::wait::RETRY_TURNS)
    ///         .map(|_| fibra::spawn(|| (0..3).for_each(|_| fibra::yield_now())))
    ///         .collect();
    ///     fibra::yield_now(); // everybody starts; the peer parks
    ///     waker.lock().unwrap().take().unwrap().wake();
    ///     let mut budget = RetryBudget::new();
    ///     assert!(budget.retry());
    ///     assert!(answered.load(Ordering::Relaxed));
    ///     peer.join().unwrap();
    ///     yielders.into_iter().for_each(|y| y.join().unwrap());
    /// });
    /// ```
    #[inline]
    pub fn retry(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        let (cost, why, alone) = with_worker(|local| match local {
            Some(local) => match local.ahead_of_retry() {
                Some(ahead) => (ahead.max(1), Suspend::Retry, false),
                None => {
                    let ready = local.ready_len();
                    (ready.max(1), Suspend::Yield, ready == 0)
                }
            },
            // Outside a fiber the yield is the thread's already.
            None => (1, Suspend::Yield, false),
        });
        if cost > self.left as usize {
            self.left = 0;
            return false;
        }
        let pauses = alone && pauses_alone(self.left);
        // No more than `left`, so it fits.
        self.left -= cost as u32;
        crate::this_fiber::yield_as(why);
        if alone {
            // The fiber's yield came straight back: the peer runs on another worker. Its answer
            // usually comes within a few hundred nanoseconds, less than a thread yield costs on
            // a virtual machine (about a microsecond), so the first retries only pause. On a
            // loaded machine the peer's worker may wait for this CPU, and every retry would find
            // nothing until the budget is spent: the later ones yield the thread.
            if pauses {
                for _ in 0..PAUSES_PER_RETRY {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// Spends every turn left: retrying cannot help, or the caller has registered.
    pub fn give_up(&mut self) {
        self.left = 0;
    }

    /// Whether no retries are left.
    pub fn is_spent(&self) -> bool {
        self.left == 0
    }
}

impl Default for RetryBudget {
    fn default() -> RetryBudget {
        RetryBudget::new()
    }
}

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

    /// Waits a moment: a spin while few were made, then a thread yield.
    // Under loom, a loom yield, so the model runs the peer.
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_first_retries_alone_pause_and_the_rest_yield_the_thread() {
        let mut budget = RetryBudget::new();
        let mut pausing = 0;
        let mut yielding = 0;
        // Each retry alone costs one turn; `retry` asks before it spends it.
        while budget.left > 0 {
            if pauses_alone(budget.left) {
                assert_eq!(yielding, 0, "no pause after the thread yields began");
                pausing += 1;
            } else {
                yielding += 1;
            }
            budget.left -= 1;
        }
        assert_eq!(pausing, PAUSING_RETRIES);
        assert_eq!(yielding, RETRY_TURNS - PAUSING_RETRIES);
    }
}
