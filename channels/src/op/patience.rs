//! Retrying before waiting: a blocking operation (or select) that found nothing ready yields
//! and tries again (spending a `fibra_runtime::wait::RetryBudget`, the toolkit's patience
//! policy) before it registers and parks; and [`run_one`], the loop of every blocking single
//! operation.
//!
//! The party that makes it ready is usually a moment away — ready on this worker, or running
//! on another — and an operation completed by a plain retry costs neither side the channel's
//! lock nor a wake-up: the other side finds nobody registered and takes the lock-free path.
//!
//! Retrying must not break the FIFO order of blocked callers, so at most one caller retries on
//! each side of a channel at a time: it holds that side's [`RetrySlot`]. A caller that finds
//! the slot held marks it contended and waits (yielding) until the slot is free, without
//! trying its operation meanwhile; the holder, seeing the mark, stops retrying, registers, and
//! only then frees the slot, so whoever waited registers behind it. The holder frees the slot
//! when its [`Patience`] is dropped too, so a caller that unwinds (a panic, a cancellation)
//! frees it. A holder that never runs again, though — a `Patience` leaked, or kept by a fiber
//! that parks for good or is abandoned — would keep every later caller waiting for its turn
//! forever, so that wait is bounded: after `YIELDS_FOR_A_TURN` yields a caller gives up its
//! turn and registers without retrying (only FIFO order among the callers blocked at that
//! moment can suffer, never progress).

use super::operation::sealed::RetryBy;
use super::operation::{Attempt, Operation};
use super::wait::{wait_then, Woken};
use crate::core::retry_slot::RetrySlot;
use fibra_runtime::wait::{Deadline, RetryBudget};
use std::fmt;

/// The most channel sides one [`Patience`] retries on (a select's arms); a wait on more
/// registers at once. Small, because a `Patience` is made for every blocking call.
const MAX_SLOTS: usize = 4;

/// The retry turns one blocking operation or select has left before it waits, and the retry
/// slots it holds meanwhile (module documentation). Freed on drop.
///
/// ```
/// use fibra::chan::op::{Attempt, Operation, Patience, RecvOp};
/// let (tx, rx) = fibra::chan::bounded::<u8>(1);
/// fibra::run(|| {
///     let recv = RecvOp::new(&rx);
///     let mut patience = Patience::new();
///     let sender = fibra::spawn_local(move || tx.send(1).unwrap());
///     assert_eq!(recv.try_now(), Attempt::NotReady);
///     assert!(patience.retry(&[Some(&recv)])); // the sender runs meanwhile
///     assert_eq!(recv.try_now(), Attempt::Completed);
///     sender.join().unwrap();
/// });
/// ```
pub struct Patience<'a> {
    slots: [Option<&'a RetrySlot>; MAX_SLOTS],
    count: usize,
    holding: bool,
    /// Whether `slots` holds the retried operations' slots already (see `for_one`), so the
    /// first retry does not gather them.
    gathered: bool,
    budget: RetryBudget,
}

impl<'a> Patience<'a> {
    /// Patience with every retry left. Costs nothing until the first [`Patience::retry`], so
    /// it can be made before an operation is known to block.
    ///
    /// ```
    /// let _patience = fibra::chan::op::Patience::new();
    /// ```
    pub const fn new() -> Self {
        Patience {
            slots: [None; MAX_SLOTS],
            count: 0,
            holding: false,
            gathered: false,
            budget: RetryBudget::new(),
        }
    }

    /// Patience for retrying on `op` alone, its slot gathered now, where the operation's type
    /// is known: a blocking call's first retry then makes no virtual call.
    #[inline]
    pub(crate) fn for_one<O: Operation>(op: &'a O) -> Self {
        let mut patience = Patience::new();
        patience.gathered = patience.gather(op.retry_by());
        if !patience.gathered {
            patience.budget.give_up();
        }
        patience
    }

    #[inline(always)]
    fn held(&self) -> impl Iterator<Item = &'a RetrySlot> + '_ {
        self.slots[..self.count].iter().flatten().copied()
    }

    /// Uses up one retry of waiting on `ops` (the same operations on every call): steps aside
    /// (whoever makes an operation ready may run on this worker: the fibers woken on it, else
    /// every ready fiber) and returns true, after which the caller tries its operations again
    /// instead of waiting. False once stepping aside would cost more turns than are left (see
    /// `fibra::wait::RetryBudget`; all of them are then
    /// used up), when another caller is blocked behind this one, or when retrying cannot help
    /// (one of `ops` is a send on a rendezvous channel, whose peer may be retrying too, or a
    /// wait for a close): the caller then waits with [`Patience::wait`]. The first retry may
    /// first wait its turn (a bounded number of yields) behind another caller retrying on the
    /// same channel, and gives up retrying if that caller does not let go meanwhile.
    ///
    /// ```
    /// use fibra::chan::op::{Patience, RecvOp, SendOp};
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let recv = RecvOp::new(&rx);
    /// let mut patience = Patience::new();
    /// let mut retries = 0;
    /// while patience.retry(&[Some(&recv)]) {
    ///     retries += 1;
    /// }
    /// assert!(retries > 0);
    ///
    /// let (tx, _rx) = fibra::chan::bounded(0);
    /// let send = SendOp::new(&tx, 1);
    /// assert!(!Patience::new().retry(&[Some(&send)]));
    /// ```
    // Inlined, with the slot handling below, into each blocking call's loop: every call that
    // a retry completes makes one first retry.
    #[inline]
    pub fn retry(&mut self, ops: &[Option<&'a dyn Operation>]) -> bool {
        if self.budget.is_spent() {
            return false;
        }
        if !self.holding {
            if !(self.gathered || self.collect(ops)) || !self.take_turn() {
                self.budget.give_up();
                return false;
            }
        } else if self.held().any(RetrySlot::is_contended) {
            return false;
        }
        self.budget.retry()
    }

    /// Gathers the distinct slots of `ops`; false if one of them cannot be retried.
    #[inline]
    fn collect(&mut self, ops: &[Option<&'a dyn Operation>]) -> bool {
        ops.iter().flatten().all(|op| self.gather(op.retry_by()))
    }

    /// Adds the slot an operation retries by, unless it is there already; false if the
    /// operation cannot be retried.
    #[inline]
    fn gather(&mut self, by: RetryBy<'a>) -> bool {
        let slot = match by {
            RetryBy::Holder(slot) => slot,
            RetryBy::Anyone => return true,
            RetryBy::Nobody => return false,
        };
        if self.held().any(|held| std::ptr::eq(held, slot)) {
            return true;
        }
        if self.count == MAX_SLOTS {
            return false;
        }
        self.slots[self.count] = Some(slot);
        self.count += 1;
        true
    }

    /// Takes every slot, waiting (yielding) while another caller holds one. Takes all or none
    /// at a time, so two selects over the same channels cannot each hold what the other waits
    /// for. False, holding none, when a holder kept a slot past the bounded wait.
    #[inline]
    fn take_turn(&mut self) -> bool {
        loop {
            let taken = self.held().take_while(|slot| slot.try_take()).count();
            if taken == self.count {
                self.holding = true;
                return true;
            }
            self.held().take(taken).for_each(RetrySlot::release);
            let busy = self.slots[taken].expect("a counted slot is set");
            if !busy.wait_free() {
                return false;
            }
        }
    }

    #[inline(always)]
    fn release(&mut self) {
        if std::mem::take(&mut self.holding) {
            self.held().for_each(RetrySlot::release);
        }
    }

    /// [`wait`](super::wait()), freeing the retry slots once registered (so a caller
    /// that waited for them registers behind this one). No retries are left afterwards.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use fibra::chan::op::{Patience, RecvOp, Woken};
    /// let (_tx, rx) = fibra::chan::bounded::<u8>(1);
    /// let recv = RecvOp::new(&rx);
    /// let mut patience = Patience::new();
    /// while patience.retry(&[Some(&recv)]) {}
    /// let soon = Instant::now() + Duration::from_millis(1);
    /// let woken = patience.wait(&[Some(&recv)], soon);
    /// assert!(matches!(woken, Woken::TimedOut | Woken::Retry));
    /// assert!(!patience.retry(&[Some(&recv)]));
    /// ```
    #[track_caller]
    pub fn wait(&mut self, ops: &[Option<&dyn Operation>], deadline: impl Into<Deadline>) -> Woken {
        self.budget.give_up();
        wait_then(ops, deadline.into(), || self.release())
    }
}

impl Default for Patience<'_> {
    fn default() -> Self {
        Patience::new()
    }
}

impl Drop for Patience<'_> {
    #[inline]
    fn drop(&mut self) {
        self.release();
    }
}

impl fmt::Debug for Patience<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Patience")
            .field("budget", &self.budget)
            .field("holding", &self.holding)
            .finish_non_exhaustive()
    }
}

/// Runs one operation to its end: tries it, retries, waits, tries again. `Err(())` when
/// `deadline` passed first. Starts with a cancellation point (which also charges the call's
/// reduction). The wait's site is the caller's.
///
/// The first try is inlined into the caller and the rest is a call that only a blocked
/// operation makes, so an operation that completes at once neither passes its caller's
/// location along nor sets up a [`Patience`].
#[inline]
#[track_caller]
pub(crate) fn run_one<O: Operation>(op: &O, deadline: Deadline) -> Result<Attempt, ()> {
    fibra_runtime::checkpoint();
    match op.try_now() {
        Attempt::NotReady => run_blocked(op, deadline),
        done => Ok(done),
    }
}

/// [`run_one`] after a first try found `op` not ready.
///
/// Generic over the operation, so that its tries are direct calls: every blocking call that
/// does not complete at once comes through here.
#[track_caller]
fn run_blocked<O: Operation>(op: &O, deadline: Deadline) -> Result<Attempt, ()> {
    let ops: [Option<&dyn Operation>; 1] = [Some(op)];
    let mut patience = Patience::for_one(op);
    loop {
        if deadline.has_passed() {
            return Err(());
        }
        if !patience.retry(&ops) {
            match patience.wait(&ops, deadline) {
                Woken::Selected(_) => return Ok(op.outcome()),
                Woken::Retry => {}
                Woken::TimedOut => return Err(()),
            }
        }
        match op.try_now() {
            Attempt::NotReady => {}
            done => return Ok(done),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Patience;
    use crate::bounded;
    use crate::core::retry_slot::{RetrySlot, FREE};
    use crate::op::RecvOp;
    use fibra_runtime::{CancelToken, ScopeOptions};
    use std::time::Duration;

    /// Far longer than the test needs when it passes: the bound on a hang when it fails.
    const HANG: Duration = Duration::from_secs(60);

    /// Runs `f` on a thread of its own and returns its result, failing the test (instead of
    /// hanging it) if `f` has not returned within [`HANG`].
    fn without_hanging<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(f()).unwrap());
        result
            .recv_timeout(HANG)
            .expect("a blocked caller waited for a retry slot that is never freed")
    }

    fn is_free(slot: &RetrySlot) -> bool {
        slot.0.load(std::sync::atomic::Ordering::Relaxed) == FREE
    }

    #[test]
    fn one_blocked_receive_retries_unregistered_and_the_next_waits_its_turn() {
        fibra_testing::on(1, || {
            let (tx, rx) = bounded::<u32>(1);
            let first = {
                let rx = rx.clone();
                fibra_runtime::spawn_local(move || rx.recv())
            };
            fibra_runtime::yield_now();
            assert_eq!(
                rx.chan().queued(),
                (0, 0, 0),
                "a blocked receive first retries without registering"
            );
            let second = {
                let rx = rx.clone();
                fibra_runtime::spawn_local(move || rx.recv())
            };
            for _ in 0..3 {
                fibra_runtime::yield_now();
            }
            assert_eq!(
                rx.chan().queued(),
                (1, 0, 0),
                "the first receive stops retrying and registers once another waits behind it"
            );
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            assert_eq!(first.join().unwrap(), Some(1));
            assert_eq!(second.join().unwrap(), Some(2));
        });
    }

    #[test]
    fn a_blocked_receive_behind_a_long_queue_registers_without_retrying() {
        fibra_testing::on(1, || {
            let (tx, rx) = bounded::<u32>(1);
            let receiver = {
                let rx = rx.clone();
                fibra_runtime::spawn_local(move || rx.recv())
            };
            // More fibers behind it than it has turns to spend: one yield would cost more.
            let behind: Vec<_> = (0..=fibra_runtime::wait::RETRY_TURNS)
                .map(|_| {
                    let rx = rx.clone();
                    fibra_runtime::spawn_local(move || rx.chan().queued())
                })
                .collect();
            for seen in behind {
                assert_eq!(
                    seen.join().unwrap(),
                    (1, 0, 0),
                    "the receive registered before any fiber behind it ran"
                );
            }
            tx.send(1).unwrap();
            assert_eq!(receiver.join().unwrap(), Some(1));
        });
    }

    /// A caller holding `rx`'s receive retry slot, blocked until `token` cancels it.
    fn hold_the_slot_until_cancelled(
        rx: &crate::Reader<u32>,
        token: &CancelToken,
    ) -> fibra_runtime::JoinHandle<Result<(), fibra_runtime::Cancelled>> {
        let (rx, token) = (rx.clone(), token.clone());
        fibra_runtime::spawn(move || {
            fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| {
                let recv = RecvOp::new(&rx);
                let mut patience = Patience::new();
                assert!(patience.retry(&[Some(&recv)]), "the slot was free");
                fibra_runtime::sleep(HANG);
            })
        })
    }

    fn recv_slot(rx: &crate::Reader<u32>) -> &RetrySlot {
        rx.chan()
            .retry_slot(crate::core::chan::Side::Recv)
            .expect("a receive can retry")
    }

    /// A channel whose receive retry slot a caller holds until the returned token cancels it.
    #[allow(clippy::type_complexity)]
    fn with_a_held_slot() -> (
        crate::Writer<u32>,
        crate::Reader<u32>,
        CancelToken,
        fibra_runtime::JoinHandle<Result<(), fibra_runtime::Cancelled>>,
    ) {
        let (tx, rx) = bounded::<u32>(1);
        let token = CancelToken::new();
        let holder = hold_the_slot_until_cancelled(&rx, &token);
        while is_free(recv_slot(&rx)) {
            fibra_runtime::yield_now();
        }
        (tx, rx, token, holder)
    }

    #[test]
    fn a_caller_that_unwinds_while_holding_a_retry_slot_frees_it() {
        for workers in [1, 2] {
            fibra_testing::on(workers, || {
                let (tx, rx, token, holder) = with_a_held_slot();
                token.cancel();
                assert!(holder.join().unwrap().is_err());
                assert!(is_free(recv_slot(&rx)), "the cancelled holder freed it");
                let receiver = {
                    let rx = rx.clone();
                    fibra_runtime::spawn(move || rx.recv())
                };
                tx.send(3).unwrap();
                assert_eq!(receiver.join().unwrap(), Some(3));
            });
        }
        let (_tx, rx) = bounded::<u32>(1);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let recv = RecvOp::new(&rx);
            let mut patience = Patience::new();
            assert!(patience.retry(&[Some(&recv)]));
            panic!("while retrying");
        }));
        assert!(panicked.is_err());
        assert!(is_free(recv_slot(&rx)), "the panicking holder freed it");
    }

    #[test]
    fn a_retry_slot_that_is_never_freed_does_not_keep_later_callers_waiting() {
        // A holder whose `Patience` is leaked never frees the slot.
        let got = without_hanging(|| {
            let (tx, rx) = bounded::<u32>(1);
            let recv = RecvOp::new(&rx);
            let mut patience = Patience::new();
            assert!(patience.retry(&[Some(&recv)]));
            std::mem::forget(patience);
            let receiver = {
                let rx = rx.clone();
                std::thread::spawn(move || rx.recv())
            };
            // It gives up its turn and registers.
            while rx.chan().queued() != (1, 0, 0) {
                std::thread::yield_now();
            }
            tx.send(5).unwrap();
            receiver.join().unwrap()
        });
        assert_eq!(got, Some(5));

        // A fiber that holds it and parks for as long as the receive takes.
        for workers in [1, 2] {
            let got = without_hanging(move || {
                fibra_testing::on(workers, || {
                    let (tx, rx, token, holder) = with_a_held_slot();
                    let receiver = {
                        let rx = rx.clone();
                        fibra_runtime::spawn(move || rx.recv())
                    };
                    while rx.chan().queued() != (1, 0, 0) {
                        fibra_runtime::yield_now();
                    }
                    tx.send(5).unwrap();
                    let got = receiver.join().unwrap();
                    token.cancel();
                    assert!(holder.join().unwrap().is_err());
                    got
                })
            });
            assert_eq!(got, Some(5));
        }
    }
}
