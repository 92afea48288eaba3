//! [`Barrier`]: arrivals counted under the internal lock; each waiter's outcome is written into
//! its own queue entry by whoever releases it, so a waiter of an old generation never mistakes
//! a later generation's state for its own.

use fibra_runtime::loom::sync::Lock;
use fibra_runtime::wait::{current_waker, Key, WaitList, WakeList};
use fibra_runtime::wait::{Deadline, TimedOut, Wait, WaitKind, WaitSite, Waitable};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A cyclic barrier: each [`wait`](Self::wait) parks the caller until `parties` callers have
/// arrived, then releases them all and starts the next cycle.
///
/// The last arrival is the leader; [`wait_with_action`](Self::wait_with_action) runs an action
/// in it before anyone is released. A wait that times out before its cycle completes, or an
/// action that panics, *breaks* the barrier: everyone waiting, and every later arrival, gets
/// [`BarrierError::Broken`] until [`reset`](Self::reset). A cycle all of whose parties have
/// arrived is complete even while its leader's action runs: a wait of the next cycle that
/// times out meanwhile breaks the barrier for the next cycle, and the complete one is released
/// when the action returns, its parties whose deadlines passed meanwhile included. The
/// waiters of a cycle are released in arrival order after those of earlier cycles, so an
/// action that parks holds back the cycles that complete while it runs.
/// [`wait_async`](Self::wait_async) and [`wait_with_action_async`](Self::wait_with_action_async)
/// are the forms for async code; fibers, threads and tasks may be parties of one cycle.
///
/// ```
/// use fibra::sync::Barrier;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let (barrier, leaders) = (Barrier::new(4), AtomicUsize::new(0));
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..4 {
///             s.spawn(|| {
///                 for _round in 0..3 {
///                     if barrier.wait().unwrap().is_leader() {
///                         leaders.fetch_add(1, Ordering::SeqCst);
///                     }
///                 }
///             });
///         }
///     });
/// });
/// assert_eq!(leaders.load(Ordering::SeqCst), 3); // one per cycle
/// ```
pub struct Barrier {
    parties: usize,
    state: Lock<State>,
}

pub(crate) struct State {
    /// Arrivals in the current generation.
    arrived: usize,
    generation: u64,
    broken: bool,
    /// Complete generations whose leaders run their actions: their waiters stay queued, in
    /// front of any later generation's, until the leader is done (see `settle`).
    acting: Vec<u64>,
    /// Complete generations whose leaders are done but whose waiters are still queued behind
    /// an earlier generation whose leader acts.
    released: Vec<u64>,
    waiting: WaitList<Arrival>,
    /// The entries `Arrivals::abandon` queued again for parties whose deadlines passed after
    /// their cycle completed, by generation and index, for each to wait on (see `Late`).
    late: Vec<(u64, usize, Key)>,
    /// The first generation after the last [`Barrier::reset`]: a leader of an earlier one
    /// whose action fails breaks nothing, the reset having broken its waiters already.
    reset_at: u64,
}

/// Ordered as the queue is, by generation and then by index (the first fields), so that a
/// party queued again with `push_sorted` gets its place back.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Arrival {
    generation: u64,
    index: usize,
    /// Whether the party waits with a deadline; never for an entry queued again.
    timed: bool,
    /// Set by whoever breaks the barrier before waking this waiter.
    broken: bool,
}

/// What a successful [`Barrier::wait`] tells its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierWaitResult {
    index: usize,
    leader: bool,
}

impl BarrierWaitResult {
    /// The caller's place in its cycle's arrivals: 0 for the first, `parties - 1` for the
    /// leader.
    ///
    /// ```
    /// let b = fibra::sync::Barrier::new(1);
    /// assert_eq!(b.wait().unwrap().index(), 0);
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether the caller arrived last (and ran the action, if any).
    ///
    /// ```
    /// let b = fibra::sync::Barrier::new(1);
    /// assert!(b.wait().unwrap().is_leader());
    /// ```
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}

/// Why a [`Barrier`] wait failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierError {
    /// The barrier is broken: a wait timed out, an action panicked, or it was reset while this
    /// caller waited.
    Broken,
    /// This caller's own wait timed out before its cycle completed (and broke the barrier for
    /// the others).
    TimedOut,
}

impl fmt::Display for BarrierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BarrierError::Broken => "the barrier is broken",
            BarrierError::TimedOut => "the barrier wait timed out",
        })
    }
}

impl std::error::Error for BarrierError {}

impl Barrier {
    const_unless_loom! {
        /// A barrier for `parties` callers per cycle.
        ///
        /// # Panics
        ///
        /// If `parties` is 0.
        ///
        /// ```should_panic
        /// fibra::sync::Barrier::new(0);
        /// ```
        #[track_caller]
        pub fn new(parties: usize) -> Barrier {
            assert!(parties > 0, "Barrier::new(0): a barrier needs at least one party");
            Barrier {
                parties,
                state: Lock::new(State {
                    arrived: 0,
                    generation: 0,
                    broken: false,
                    acting: Vec::new(),
                    released: Vec::new(),
                    waiting: WaitList::new(),
                    late: Vec::new(),
                    reset_at: 0,
                }),
            }
        }
    }

    /// How many callers each cycle waits for.
    ///
    /// ```
    /// assert_eq!(fibra::sync::Barrier::new(3).parties(), 3);
    /// ```
    pub fn parties(&self) -> usize {
        self.parties
    }

    /// Parks the caller until all parties have arrived.
    ///
    /// ```
    /// let b = fibra::sync::Barrier::new(2);
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let other = s.spawn(|| b.wait().unwrap().index());
    ///         let mine = b.wait().unwrap().index();
    ///         assert_eq!(mine + other.join().unwrap(), 1); // one is 0, the other 1
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn wait(&self) -> Result<BarrierWaitResult, BarrierError> {
        self.arrive(None::<fn()>, Deadline::NEVER)
    }

    /// Like [`wait`](Self::wait); the last arrival runs `action` before anyone is released
    /// (the others' actions are dropped unrun). If `action` panics, the barrier breaks and the
    /// panic continues in the leader.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let (b, phase) = (fibra::sync::Barrier::new(3), AtomicUsize::new(0));
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         for _ in 0..3 {
    ///             s.spawn(|| {
    ///                 b.wait_with_action(|| { phase.fetch_add(1, Ordering::SeqCst); }).unwrap();
    ///                 // Everyone sees the action's effect once released.
    ///                 assert_eq!(phase.load(Ordering::SeqCst), 1);
    ///             });
    ///         }
    ///     });
    /// });
    /// ```
    #[track_caller]
    pub fn wait_with_action(
        &self,
        action: impl FnOnce(),
    ) -> Result<BarrierWaitResult, BarrierError> {
        self.arrive(Some(action), Deadline::NEVER)
    }

    /// Like [`wait`](Self::wait), waiting at most `timeout` for the other parties to arrive.
    /// Timing out breaks the barrier for everyone waiting. Once the cycle is complete the
    /// timeout no longer applies: the caller is released with the others when the leader's
    /// action returns, however long it runs.
    ///
    /// ```
    /// use fibra::sync::BarrierError;
    /// use std::time::Duration;
    ///
    /// let b = fibra::sync::Barrier::new(2);
    /// assert_eq!(b.wait_timeout(Duration::from_millis(1)), Err(BarrierError::TimedOut));
    /// assert!(b.is_broken());
    /// ```
    #[track_caller]
    pub fn wait_timeout(&self, timeout: Duration) -> Result<BarrierWaitResult, BarrierError> {
        self.arrive(None::<fn()>, Deadline::after(timeout))
    }

    /// A future that waits as [`wait`](Self::wait) does. The caller arrives when the future is
    /// first polled (the last arrival completes the cycle within that poll). Dropping the
    /// future after it arrived and before its cycle completed breaks the barrier, as a wait
    /// that gives up does; once the cycle is complete, dropping it changes nothing.
    ///
    /// ```
    /// use fibra::sync::Barrier;
    ///
    /// let b = Barrier::new(2);
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         let fiber = s.spawn(|| b.wait().unwrap().index());
    ///         let task = fibra::block_on(b.wait_async()).unwrap().index();
    ///         assert_eq!(task + fiber.join().unwrap(), 1); // one is 0, the other 1
    ///     });
    /// });
    /// ```
    pub fn wait_async(&self) -> BarrierWait<'_> {
        let nothing: fn() = || {};
        self.wait_with_action_async(nothing)
    }

    /// A future that waits as [`wait_with_action`](Self::wait_with_action) does, with the
    /// rules of [`wait_async`](Self::wait_async): if it arrives last, it runs `action` within
    /// that poll before anyone is released (a synchronous closure: nothing in it is awaited).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let (b, phase) = (fibra::sync::Barrier::new(2), AtomicUsize::new(0));
    /// let bump = || {
    ///     phase.fetch_add(1, Ordering::SeqCst);
    /// };
    /// fibra::run(|| {
    ///     fibra::scope(|s| {
    ///         s.spawn(|| {
    ///             b.wait_with_action(bump).unwrap();
    ///             assert_eq!(phase.load(Ordering::SeqCst), 1);
    ///         });
    ///         fibra::block_on(b.wait_with_action_async(bump)).unwrap();
    ///         // Only the leader, whichever party arrived last, ran its action.
    ///         assert_eq!(phase.load(Ordering::SeqCst), 1);
    ///     });
    /// });
    /// ```
    pub fn wait_with_action_async<F: FnOnce()>(&self, action: F) -> BarrierWait<'_, F> {
        BarrierWait {
            barrier: self,
            state: BarrierWaitState::Start(action),
        }
    }

    /// Whether the barrier is broken.
    ///
    /// ```
    /// assert!(!fibra::sync::Barrier::new(2).is_broken());
    /// ```
    pub fn is_broken(&self) -> bool {
        self.state.lock().broken
    }

    /// Breaks the barrier for whoever is waiting now, then starts afresh: not broken, no
    /// arrivals. A leader whose action is still running belongs to the time before: its
    /// action failing later does not break the barrier again.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let b = fibra::sync::Barrier::new(2);
    /// let _ = b.wait_timeout(Duration::from_millis(1));
    /// assert!(b.is_broken());
    /// b.reset();
    /// assert!(!b.is_broken());
    /// ```
    pub fn reset(&self) {
        let mut wakers = WakeList::new();
        let mut state = self.state.lock();
        break_all(&mut state, &mut wakers);
        state.broken = false;
        state.arrived = 0;
        state.generation += 1;
        state.reset_at = state.generation;
    }

    /// Ends the part of `generation`'s leader: its waiters are released, or, if `!ok` (the
    /// action unwound), the barrier breaks, unless it was reset since the cycle completed.
    fn acted(&self, generation: u64, ok: bool) {
        let mut wakers = WakeList::new();
        let mut state = self.state.lock();
        state.acting.retain(|&acting| acting != generation);
        if ok {
            state.released.push(generation);
        } else if generation >= state.reset_at {
            state.broken = true;
        }
        settle(&mut state, &mut wakers);
    }

    #[track_caller]
    fn arrive(
        &self,
        action: Option<impl FnOnce()>,
        deadline: Deadline,
    ) -> Result<BarrierWaitResult, BarrierError> {
        let (generation, index, key) = match self.join(deadline.instant().is_some(), current_waker)
        {
            Joined::Broken => return Err(BarrierError::Broken),
            Joined::Leader { generation, index } => return Ok(self.lead(generation, index, action)),
            Joined::Waiting {
                generation,
                index,
                key,
            } => (generation, index, key),
        };
        let site = WaitSite::new(WaitKind::Barrier, self);
        let late = Late(self, generation, index);
        let outcome = match Wait::new(Arrivals(self), key).block_at(deadline, &site) {
            Err(TimedOut) => match late.take() {
                // The deadline passed after the cycle completed: the party is released with
                // its cycle.
                Some(key) => Wait::new(Arrivals(self), key).block_at(Deadline::NEVER, &site),
                None => Err(TimedOut),
            },
            done => done,
        };
        std::mem::forget(late);
        outcome.unwrap_or(Err(BarrierError::TimedOut))
    }

    /// Counts an arrival, under the lock: the last of its cycle is to lead it; any other joins
    /// the queue, with the waker `waker` makes (called only then).
    fn join(&self, timed: bool, waker: impl FnOnce() -> Waker) -> Joined {
        let mut state = self.state.lock();
        if state.broken {
            return Joined::Broken;
        }
        let (generation, index) = (state.generation, state.arrived);
        if index + 1 < self.parties {
            let arrival = Arrival {
                generation,
                index,
                timed,
                broken: false,
            };
            let key = state.waiting.push_back(arrival, waker());
            state.arrived += 1;
            return Joined::Waiting {
                generation,
                index,
                key,
            };
        }
        // Later arrivals belong to the next generation.
        state.generation += 1;
        state.arrived = 0;
        state.acting.push(generation);
        Joined::Leader { generation, index }
    }

    /// The leader of `generation`: runs `action`, then releases its cycle.
    fn lead(
        &self,
        generation: u64,
        index: usize,
        action: Option<impl FnOnce()>,
    ) -> BarrierWaitResult {
        if let Some(action) = action {
            let on_unwind = Acting(self, generation);
            action();
            std::mem::forget(on_unwind);
        }
        self.acted(generation, true);
        BarrierWaitResult {
            index,
            leader: true,
        }
    }
}

/// How an arrival went, decided under the lock.
enum Joined {
    Broken,
    Leader {
        generation: u64,
        index: usize,
    },
    Waiting {
        generation: u64,
        index: usize,
        key: Key,
    },
}

/// Wakes everyone waiting, telling them the barrier is broken.
fn break_all(state: &mut State, wakers: &mut WakeList) {
    state.broken = true;
    while let Some(arrival) = state.waiting.front_mut() {
        arrival.broken = true;
        wakers.push(state.waiting.pop_front().expect("the front was just seen"));
    }
}

/// Wakes the waiters at the front of the queue whose fate is decided: those of a generation
/// whose leader is done are released; if the barrier is broken, those of a generation whose
/// leader failed, and of the incomplete one, are told so. Stops at a generation whose leader
/// still acts (its waiters are its to release, and the later ones queue behind them), and at
/// the incomplete generation while the barrier holds.
fn settle(state: &mut State, wakers: &mut WakeList) {
    while let Some(front) = state.waiting.front_mut() {
        let generation = front.generation;
        if state.acting.contains(&generation) {
            break;
        }
        if !state.released.contains(&generation) {
            if !state.broken {
                break;
            }
            front.broken = true;
        }
        wakers.push(state.waiting.pop_front().expect("the front was just seen"));
    }
    // A released generation is remembered only while some of its waiters are queued.
    let oldest = state
        .waiting
        .front()
        .map_or(u64::MAX, |front| front.generation);
    state.released.retain(|&generation| generation >= oldest);
}

/// A party whose first wait may end in `Arrivals::abandon` queueing it again: dropped (the
/// party unwinds), it removes that entry, which nobody would collect.
struct Late<'a>(&'a Barrier, u64, usize);

impl Late<'_> {
    /// The entry queued again for this party, if any.
    fn take(&self) -> Option<Key> {
        take_late(&mut self.0.state.lock(), self.1, self.2)
    }
}

impl Drop for Late<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        if let Some(key) = take_late(&mut state, self.1, self.2) {
            state.waiting.remove(key);
        }
    }
}

fn take_late(state: &mut State, generation: u64, index: usize) -> Option<Key> {
    let at = state
        .late
        .iter()
        .position(|&(g, i, _)| (g, i) == (generation, index))?;
    Some(state.late.swap_remove(at).2)
}

/// A leader running its action: dropped (the action unwound), it breaks the barrier.
struct Acting<'a>(&'a Barrier, u64);

impl Drop for Acting<'_> {
    fn drop(&mut self) {
        self.0.acted(self.1, false);
    }
}

/// The waits on a [`Barrier`], kept out of its public API.
#[derive(Clone, Copy)]
struct Arrivals<'a>(&'a Barrier);

impl Waitable for Arrivals<'_> {
    type State = State;
    type Entry = Arrival;
    type Output = Result<BarrierWaitResult, BarrierError>;

    fn lock(&self) -> &Lock<State> {
        &self.0.state
    }

    fn list(state: &mut State) -> &mut WaitList<Arrival> {
        &mut state.waiting
    }

    fn woken(
        &self,
        _: &mut State,
        arrival: Arrival,
        _: &Waker,
        _: &mut WakeList,
    ) -> Result<Self::Output, Key> {
        Ok(if arrival.broken {
            Err(BarrierError::Broken)
        } else {
            Ok(BarrierWaitResult {
                index: arrival.index,
                leader: false,
            })
        })
    }

    fn abandon(&self, state: &mut State, arrival: Arrival, woken: bool, wakers: &mut WakeList) {
        if woken {
            return;
        }
        if arrival.generation == state.generation {
            // A party of the incomplete generation that stops waiting (timed out, unwinding,
            // or its future dropped) means this cycle can never complete: everyone else would wait for
            // ever.
            state.broken = true;
            settle(state, wakers);
        } else if arrival.timed {
            // Its generation is complete (its leader, or an earlier one, acts): a deadline
            // passing now ends nothing, the party keeps its place until the cycle's release.
            // Done here, under the lock that removed the entry, so that no release or break
            // slips in between. A party unwinding instead leaves it to `Late` to remove.
            // Only a blocking wait is timed (a future has no deadline of its own), so the
            // caller's waker, queued again here, is the one that waits for the entry.
            let (generation, index) = (arrival.generation, arrival.index);
            let again = Arrival {
                timed: false,
                ..arrival
            };
            let key = state.waiting.push_sorted(again, current_waker());
            state.late.push((generation, index, key));
        }
        // An untimed party of a complete generation unwinds (or its future is dropped): it
        // leaves nobody short.
    }
}

/// The future of [`Barrier::wait_async`] and [`Barrier::wait_with_action_async`].
///
/// ```
/// use fibra::sync::{Barrier, BarrierWait};
///
/// let b = Barrier::new(1);
/// let wait: BarrierWait<'_> = b.wait_async();
/// assert!(futures::executor::block_on(wait).unwrap().is_leader()); // the only party
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct BarrierWait<'a, F = fn()> {
    barrier: &'a Barrier,
    state: BarrierWaitState<'a, F>,
}

enum BarrierWaitState<'a, F> {
    /// Not arrived yet.
    Start(F),
    Waiting(Wait<Arrivals<'a>>),
    Done,
}

// The action is only ever moved out and called, never pinned.
impl<F> Unpin for BarrierWait<'_, F> {}

impl<F: FnOnce()> Future for BarrierWait<'_, F> {
    type Output = Result<BarrierWaitResult, BarrierError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match std::mem::replace(&mut this.state, BarrierWaitState::Done) {
            BarrierWaitState::Start(action) => {
                match this.barrier.join(false, || cx.waker().clone()) {
                    Joined::Broken => Poll::Ready(Err(BarrierError::Broken)),
                    Joined::Leader { generation, index } => {
                        Poll::Ready(Ok(this.barrier.lead(generation, index, Some(action))))
                    }
                    Joined::Waiting { key, .. } => {
                        this.state =
                            BarrierWaitState::Waiting(Wait::new(Arrivals(this.barrier), key));
                        Poll::Pending
                    }
                }
            }
            BarrierWaitState::Waiting(mut wait) => {
                let outcome = wait.poll(cx);
                if outcome.is_pending() {
                    this.state = BarrierWaitState::Waiting(wait);
                }
                outcome
            }
            BarrierWaitState::Done => panic!("barrier wait polled after completion"),
        }
    }
}

impl<F> fmt::Debug for BarrierWait<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            BarrierWaitState::Start(_) => "start",
            BarrierWaitState::Waiting(_) => "waiting",
            BarrierWaitState::Done => "done",
        };
        f.debug_struct("BarrierWait")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("parties", &self.parties)
            .field("broken", &self.is_broken())
            .finish_non_exhaustive()
    }
}
