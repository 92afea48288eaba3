//! The channel core: a lock-free ring for buffered values, and three wait queues under a lock.
//!
//! The common operations take no lock: a send into room when no receiver is parked, a receive
//! of a buffered value when no sender (or close watcher) is parked. Everything else — parking,
//! handing a value to a parked receiver, moving a parked sender's value into the buffer,
//! closing — runs as one [`Txn`] under the lock, which wakes whoever it completed once the lock
//! is released.
//!
//! Rules the transitions keep:
//! - a receiver parks only while nothing is buffered, and a send that finds a parked receiver
//!   (with nothing buffered before it) hands the value over directly, past the buffer;
//! - a sender parks only while the buffer is full; a receive that makes room moves the oldest
//!   parked sender's value to the buffer's tail (FIFO per sender);
//! - waiters are claimed in registration order (FIFO wake order);
//! - close wakes every parked receiver (to drain what is buffered, then find the end) and
//!   sender (it keeps its value), and close watchers once the buffer is drained.
//!
//! The lock-free paths learn whether anyone is parked from two counts in [`Hints`]. A party
//! that parks publishes its count, fences, and looks at the ring again; a lock-free push or pop
//! fences, then reads the count. Of two such parties at least one sees the other (SeqCst
//! fences), so a value pushed while a receiver parks is either found by the receiver's second
//! look or makes the pusher take the lock and hand it over ([`Txn::settle`]). When a claimed
//! receiver then finds the value gone (another receive took it first) it is woken to try
//! again rather than completed.

use super::packet::Packet;
use super::queue::{Entry, WaitQueue};
use super::retry_slot::RetrySlot;
use super::ring::{PopError, PushError, Ring};
use super::waiter::Waiter;
use crate::error::{TryRecvError, TrySendError};
use crate::timer::feed::{Feed, Fired};
use crossbeam_utils::CachePadded;
use fibra_runtime::loom::sync::atomic::{fence, AtomicUsize, Ordering};
use fibra_runtime::loom::sync::SpinLock;
use fibra_runtime::wait::{Deadline, Key, WakeList};
use std::collections::VecDeque;
use std::task::Waker;
use std::time::Instant;

/// Which queue an operation waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// Waiting for a value.
    Recv,
    /// Waiting to deliver a value.
    Send,
    /// Waiting for the channel to be closed and drained.
    Closed,
}

/// The answer to a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Registered; look again at this deadline if nobody completes the operation before (a
    /// timer channel's; never for other channels).
    Waiting(Deadline),
    /// Not registered: the operation can complete now.
    Ready,
}

/// What the lock-free paths read of the locked state: whether they must take the lock.
#[derive(Default)]
struct Hints {
    /// Entries in the receiver queue: a push must hand its value to a parked receiver.
    recv: AtomicUsize,
    /// Entries in the sender and watcher queues, plus values given back: a pop must refill
    /// from a parked sender, tell watchers the channel drained, or take a given-back value
    /// first.
    pop: AtomicUsize,
}

/// Everything the lock protects.
struct Waits<T> {
    receivers: WaitQueue<T>,
    senders: WaitQueue<T>,
    watchers: WaitQueue<T>,
    /// Values a receive was handed but could not take (its caller was cancelled, its future
    /// dropped), with their hand-off numbers, in hand-off order; they go before the ring's.
    returned: VecDeque<(u64, T)>,
    /// How many values were handed to parked receivers: the next hand-off's number.
    handoffs: u64,
    /// An unbounded channel's values that found the ring full, oldest first; they go after
    /// the ring's, which is refilled from here. `None` for a bounded channel.
    overflow: Option<VecDeque<T>>,
    feed: Option<Feed<T>>,
}

/// A channel: the shared state behind its `Writer`s and `Reader`s.
pub(crate) struct Chan<T> {
    ring: Ring<T>,
    hints: Hints,
    waits: SpinLock<Waits<T>>,
    /// Who may retry a receive and a send (see `retry`); on a line of their own, since only
    /// blocked callers touch them.
    retry: CachePadded<[RetrySlot; 2]>,
    /// False for a timer channel: every operation takes the lock, to look at the clock first.
    lock_free: bool,
    /// Whether sends never block (an overflow queue behind the ring).
    unbounded: bool,
    cap: usize,
    writers: AtomicUsize,
    readers: AtomicUsize,
}

impl<T> Chan<T> {
    /// A channel with one writer and one reader.
    pub(crate) fn new(cap: usize) -> Self {
        Chan::build(cap, None, 1)
    }

    /// An unbounded channel with one writer and one reader: a ring of `ring_cap` values and an
    /// overflow queue behind it.
    pub(crate) fn unbounded(ring_cap: usize) -> Self {
        let mut chan = Chan::build(ring_cap, None, 1);
        chan.waits.lock().overflow = Some(VecDeque::new());
        chan.unbounded = true;
        chan.cap = usize::MAX;
        chan
    }

    /// A timer channel: one reader, no writer.
    pub(crate) fn timer(cap: usize, feed: Option<Feed<T>>) -> Self {
        let mut chan = Chan::build(cap, feed, 0);
        chan.lock_free = false;
        chan
    }

    fn build(cap: usize, feed: Option<Feed<T>>, writers: usize) -> Self {
        Chan {
            ring: Ring::new(cap),
            hints: Hints::default(),
            waits: SpinLock::new(Waits {
                receivers: WaitQueue::new(),
                senders: WaitQueue::new(),
                watchers: WaitQueue::new(),
                returned: VecDeque::new(),
                handoffs: 0,
                overflow: None,
                feed,
            }),
            retry: CachePadded::new(Default::default()),
            lock_free: true,
            unbounded: false,
            cap,
            writers: AtomicUsize::new(writers),
            readers: AtomicUsize::new(1),
        }
    }

    /// Runs one transition under the lock, then wakes whoever it completed. Values are only
    /// moved under the lock, and wakers woken after it, where the wakers of withdrawn or
    /// skipped registrations are dropped too: no foreign code runs under the lock.
    ///
    /// The drop order holds also when the transition unwinds: the hints are published (the
    /// transaction), then the lock is released (the guard), and only then are the wakers
    /// collected so far woken (the list), so none is lost and none runs under the lock.
    fn locked<R>(&self, f: impl FnOnce(&mut Txn<'_, T>) -> R) -> R {
        let mut wake = WakeList::new();
        let mut waits = self.waits.lock();
        let mut txn = Txn {
            ring: &self.ring,
            hints: &self.hints,
            waits: &mut waits,
            wake: &mut wake,
        };
        f(&mut txn)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// The retry slot of an operation on `side` (see `op::sealed::Sealed::retry_slot`).
    pub(crate) fn retry_slot(&self, side: Side) -> Option<&RetrySlot> {
        match side {
            Side::Recv => Some(&self.retry[0]),
            Side::Send if self.cap > 0 => Some(&self.retry[1]),
            Side::Send | Side::Closed => None,
        }
    }

    #[inline]
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        if self.lock_free && self.hints.pop.load(Ordering::Relaxed) == 0 {
            match self.ring.pop() {
                Ok(value) => {
                    self.after_pop();
                    return Ok(value);
                }
                // Nobody is parked to send, so nothing can come but through the ring.
                Err(PopError::Empty) => return Err(TryRecvError::Empty),
                // The end is final, so it is confirmed under the lock: the hint may be stale
                // while a value waits elsewhere (given back, or in an unbounded overflow).
                Err(PopError::Closed) => {}
            }
        }
        self.locked(|txn| txn.recv())
    }

    #[inline]
    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        // An unbounded channel's values queue behind its overflow while there is one.
        let behind_overflow = self.unbounded && self.hints.pop.load(Ordering::Relaxed) != 0;
        if self.lock_free && self.hints.recv.load(Ordering::Relaxed) == 0 && !behind_overflow {
            let value = match self.ring.push(value) {
                Ok(()) => {
                    self.after_push();
                    return Ok(());
                }
                // The overflow takes it, under the lock.
                Err(PushError::Full(value)) if self.unbounded => value,
                // Nobody is parked to receive, so nothing can take the value but the ring.
                Err(PushError::Full(value)) => return Err(TrySendError::Full(value)),
                Err(PushError::Closed(value)) => return Err(TrySendError::Closed(value)),
            };
            return self.locked(|txn| txn.send(value));
        }
        self.locked(|txn| txn.send(value))
    }

    /// The lock-free push's half of the parking handshake (module documentation).
    #[inline]
    fn after_push(&self) {
        fence(Ordering::SeqCst);
        if self.hints.recv.load(Ordering::Relaxed) != 0 {
            self.locked(|txn| txn.settle());
        }
    }

    /// The lock-free pop's half of the parking handshake.
    #[inline]
    fn after_pop(&self) {
        fence(Ordering::SeqCst);
        if self.hints.pop.load(Ordering::Relaxed) != 0 {
            self.locked(|txn| txn.settle());
        }
    }

    pub(crate) fn closed_and_drained(&self) -> bool {
        // As in `try_recv`, only "not yet" is trusted without the lock.
        if self.lock_free
            && self.hints.pop.load(Ordering::Relaxed) == 0
            && !(self.ring.is_closed() && self.ring.is_empty())
        {
            return false;
        }
        self.locked(|txn| {
            txn.fire_feed();
            txn.closed_and_drained()
        })
    }

    /// Registers operation `oper` of `waiter` on `side`, with the `waker` its claimer is to
    /// wake, unless it can complete now; the key is the registration's (`None` when ready).
    pub(crate) fn register(
        &self,
        side: Side,
        waiter: &Waiter,
        oper: usize,
        packet: &Packet<T>,
        waker: Waker,
    ) -> (Registration, Option<Key>) {
        let entry = Entry::new(waiter, oper, packet);
        self.locked(|txn| txn.register(side, entry, waker, waiter))
    }

    /// Removes the entry `key` of operation `oper` of `waiter` from `side`; `waiter` can no
    /// longer be claimed. Taking the lock also orders this after any claimer of `waiter` that
    /// used this channel: once this returns, such a claimer finished.
    pub(crate) fn unregister(&self, side: Side, key: Key, waiter: &Waiter, oper: usize) {
        // Completed here: the claimer freed the entry and is done with the waiter.
        if waiter.done() == Some(oper) {
            return;
        }
        self.locked(|txn| queue_of(txn.waits, side).remove(key, waiter, oper, txn.wake));
    }

    /// Closes the channel; true if this call closed it.
    pub(crate) fn close(&self) -> bool {
        self.locked(|txn| txn.close())
    }

    /// Takes back `value`, which hand-off number `handoff` gave a receive that could not take
    /// it. Receives give values back in any order (each when its caller unwinds), so the
    /// numbers put them back in the order they were handed over: one sender's values keep
    /// the order they were sent in.
    pub(crate) fn reinject(&self, value: T, handoff: u64) {
        self.locked(|txn| {
            let returned = &mut txn.waits.returned;
            let at = returned.partition_point(|&(other, _)| other < handoff);
            returned.insert(at, (handoff, value));
            txn.settle();
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.locked(|txn| {
            txn.fire_feed();
            txn.ring.len() + txn.waits.returned.len() + txn.overflowed()
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        if self.lock_free {
            return self.ring.is_closed();
        }
        self.locked(|txn| {
            txn.fire_feed();
            txn.ring.is_closed()
        })
    }

    pub(crate) fn add_writer(&self) {
        self.writers.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_reader(&self) {
        self.readers.fetch_add(1, Ordering::Relaxed);
    }

    /// A writer went away; the last one closes the channel.
    pub(crate) fn drop_writer(&self) {
        if self.writers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close();
        }
    }

    /// A reader went away; the last one closes the channel and drops what is buffered (nobody
    /// can receive it any more), outside the lock.
    pub(crate) fn drop_reader(&self) {
        if self.readers.fetch_sub(1, Ordering::AcqRel) == 1 {
            let buffered = self.locked(|txn| {
                txn.close();
                let returned = std::mem::take(&mut txn.waits.returned);
                let mut buffered: Vec<T> = returned.into_iter().map(|(_, value)| value).collect();
                buffered.extend(std::iter::from_fn(|| txn.ring.pop().ok()));
                buffered.extend(
                    txn.waits
                        .overflow
                        .iter_mut()
                        .flat_map(|queue| queue.drain(..)),
                );
                buffered
            });
            drop(buffered);
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn queued(&self) -> (usize, usize, usize) {
        let waits = self.waits.lock();
        (
            waits.receivers.len(),
            waits.senders.len(),
            waits.watchers.len(),
        )
    }
}

/// The queue of operations on `side`.
fn queue_of<T>(waits: &mut Waits<T>, side: Side) -> &mut WaitQueue<T> {
    match side {
        Side::Recv => &mut waits.receivers,
        Side::Send => &mut waits.senders,
        Side::Closed => &mut waits.watchers,
    }
}

/// The oldest buffered value: given-back values go first, overflowed ones last.
fn pop_oldest<T>(
    returned: &mut VecDeque<(u64, T)>,
    ring: &Ring<T>,
    overflow: &mut Option<VecDeque<T>>,
) -> Option<T> {
    returned
        .pop_front()
        .map(|(_, value)| value)
        .or_else(|| ring.pop().ok())
        .or_else(|| overflow.as_mut()?.pop_front())
}

/// The number of the next value handed to a parked receiver, counted in `handoffs`.
fn next_handoff(handoffs: &mut u64) -> u64 {
    *handoffs += 1;
    *handoffs
}

/// One transition under the channel lock; it publishes the hints when it ends.
struct Txn<'a, T> {
    ring: &'a Ring<T>,
    hints: &'a Hints,
    waits: &'a mut Waits<T>,
    wake: &'a mut WakeList,
}

impl<T> Drop for Txn<'_, T> {
    fn drop(&mut self) {
        self.publish();
    }
}

impl<T> Txn<'_, T> {
    /// Stores the counts the lock-free paths read, where they changed.
    fn publish(&self) {
        let w = &*self.waits;
        let recv = w.receivers.len();
        let pop = w.senders.len() + w.watchers.len() + w.returned.len() + self.overflowed();
        for (hint, now) in [(&self.hints.recv, recv), (&self.hints.pop, pop)] {
            if hint.load(Ordering::Relaxed) != now {
                hint.store(now, Ordering::Relaxed);
            }
        }
    }

    /// Lets a timer channel's feed act if its deadline has come.
    #[inline]
    fn fire_feed(&mut self) {
        if self.waits.feed.is_some() {
            self.fire_feed_now();
        }
    }

    #[cold]
    fn fire_feed_now(&mut self) {
        let Some(feed) = &mut self.waits.feed else {
            return;
        };
        match feed.fire(Instant::now()) {
            Fired::Waiting => {}
            Fired::Close => {
                self.close();
            }
            Fired::Tick(value) => self.deliver_tick(value),
            Fired::LastTick(value) => {
                self.waits.feed = None;
                self.deliver_tick(value);
            }
        }
    }

    /// A tick goes to a parked receiver, else into the buffer, in place of a tick buffered
    /// (or given back) before it: a slow receiver gets the latest due tick. The ticks dropped
    /// are `Instant`s, so dropping them under the lock runs no foreign code.
    fn deliver_tick(&mut self, value: T) {
        if let Some(receiver) = self.waits.receivers.claim(self.wake) {
            receiver.hand(value, next_handoff(&mut self.waits.handoffs));
            self.wake.push(receiver.finish());
        } else {
            self.waits.returned.clear();
            while self.ring.pop().is_ok() {}
            let _ = self.ring.push(value);
        }
    }

    fn feed_deadline(&self) -> Deadline {
        self.waits
            .feed
            .as_ref()
            .map_or(Deadline::NEVER, Feed::deadline)
    }

    fn nothing_buffered(&self) -> bool {
        self.ring.is_empty() && self.waits.returned.is_empty() && self.overflowed() == 0
    }

    /// How many values wait in an unbounded channel's overflow.
    fn overflowed(&self) -> usize {
        self.waits.overflow.as_ref().map_or(0, VecDeque::len)
    }

    fn closed_and_drained(&self) -> bool {
        self.ring.is_closed() && self.nothing_buffered()
    }

    /// Takes the oldest buffered value.
    fn pop(&mut self) -> Option<T> {
        pop_oldest(
            &mut self.waits.returned,
            self.ring,
            &mut self.waits.overflow,
        )
    }

    fn recv(&mut self) -> Result<T, TryRecvError> {
        self.fire_feed();
        if let Some(value) = self.pop() {
            self.settle();
            return Ok(value);
        }
        // Nothing buffered: a parked sender (a rendezvous) hands its value over directly.
        if let Some(sender) = self.waits.senders.claim(self.wake) {
            let value = sender.take();
            self.wake.push(sender.finish());
            return Ok(value);
        }
        if self.ring.is_closed() {
            self.settle();
            return Err(TryRecvError::Closed);
        }
        Err(TryRecvError::Empty)
    }

    fn send(&mut self, value: T) -> Result<(), TrySendError<T>> {
        if self.ring.is_closed() {
            return Err(TrySendError::Closed(value));
        }
        if self.nothing_buffered() {
            if let Some(receiver) = self.waits.receivers.claim(self.wake) {
                receiver.hand(value, next_handoff(&mut self.waits.handoffs));
                self.wake.push(receiver.finish());
                return Ok(());
            }
        }
        let pushed = match self.overflowed() {
            0 => self.ring.push(value),
            // Behind the values already waiting, to keep each sender's order.
            _ => Err(PushError::Full(value)),
        };
        match pushed {
            Ok(()) => {
                self.settle();
                Ok(())
            }
            Err(PushError::Full(value)) => match &mut self.waits.overflow {
                Some(overflow) => {
                    overflow.push_back(value);
                    Ok(())
                }
                None => Err(TrySendError::Full(value)),
            },
            Err(PushError::Closed(value)) => Err(TrySendError::Closed(value)),
        }
    }

    /// Restores the rules after the ring changed without the lock: buffered values go to
    /// parked receivers, parked senders' values into free room, and watchers learn that a
    /// closed channel drained. A claimed waiter that finds its chance gone (a lock-free
    /// operation took the value or the room first) is woken to try again.
    fn settle(&mut self) {
        while self.waits.receivers.len() > 0 && !self.nothing_buffered() {
            let Some(receiver) = self.waits.receivers.claim(self.wake) else {
                break;
            };
            match pop_oldest(
                &mut self.waits.returned,
                self.ring,
                &mut self.waits.overflow,
            ) {
                Some(value) => {
                    receiver.hand(value, next_handoff(&mut self.waits.handoffs));
                    self.wake.push(receiver.finish());
                }
                None => {
                    self.wake.push(receiver.retry());
                    break;
                }
            }
        }
        while self.waits.senders.len() > 0 && !self.ring.is_full() {
            let Some(sender) = self.waits.senders.claim(self.wake) else {
                break;
            };
            match self.ring.push(sender.take()) {
                Ok(()) => self.wake.push(sender.finish()),
                Err(PushError::Full(value) | PushError::Closed(value)) => {
                    sender.put_back(value);
                    self.wake.push(sender.retry());
                    break;
                }
            }
        }
        if let Some(overflow) = &mut self.waits.overflow {
            while let Some(value) = overflow.pop_front() {
                if let Err(PushError::Full(value) | PushError::Closed(value)) =
                    self.ring.push(value)
                {
                    overflow.push_front(value);
                    break;
                }
            }
        }
        if self.waits.watchers.len() > 0 && self.closed_and_drained() {
            self.waits.watchers.finish_all(self.wake);
        }
    }

    /// Whether an operation on `side` could complete now (for `waiter`: a select does not
    /// rendezvous with itself).
    fn ready(&self, side: Side, waiter: &Waiter) -> bool {
        let w = &*self.waits;
        match side {
            Side::Recv => {
                self.ring.is_closed() || !self.nothing_buffered() || w.senders.has_other(waiter)
            }
            Side::Send => {
                self.ring.is_closed() || !self.ring.is_full() || w.receivers.has_other(waiter)
            }
            Side::Closed => self.closed_and_drained(),
        }
    }

    fn register(
        &mut self,
        side: Side,
        entry: Entry<T>,
        waker: Waker,
        waiter: &Waiter,
    ) -> (Registration, Option<Key>) {
        self.fire_feed();
        if self.ready(side, waiter) {
            return (Registration::Ready, None);
        }
        // The parking half of the handshake (module documentation): publish, fence, look again.
        let key = queue_of(self.waits, side).push(entry, waker);
        self.publish();
        fence(Ordering::SeqCst);
        if self.ready(side, waiter) {
            queue_of(self.waits, side).unpush(key, self.wake);
            return (Registration::Ready, None);
        }
        (Registration::Waiting(self.feed_deadline()), Some(key))
    }

    /// Closes the channel; false if it already was.
    fn close(&mut self) -> bool {
        if !self.ring.close() {
            return false;
        }
        self.waits.feed = None;
        self.waits.receivers.retry_all(self.wake);
        self.waits.senders.finish_all(self.wake);
        self.settle();
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Chan, Packet, Registration, Side, Waiter};
    use crate::core::waiter::Ended;
    use crate::op::{self, Attempt, Operation, RecvOp, SendOp, Woken};
    use crate::{bounded, RecvTimeoutError};
    use fibra_runtime::wait::{Deadline, Key};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::task::{Wake, Waker};
    use std::time::{Duration, Instant};

    /// A waker that looks at its channel when woken (taking the channel's lock, which never
    /// comes back if the waking thread still holds it), then counts the wake.
    struct LooksAtChannel {
        chan: Arc<Chan<u8>>,
        woken: AtomicUsize,
    }

    impl Wake for LooksAtChannel {
        fn wake(self: Arc<Self>) {
            self.chan.len();
            self.woken.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A waker that counts its wakes.
    struct Counts(AtomicUsize);

    impl Wake for Counts {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Registers a receive of a fresh waiter on `chan`, woken through `waker`.
    fn park_receiver(chan: &Chan<u8>, waker: Waker) -> (Box<(Waiter, Packet<u8>)>, Key) {
        let parked = Box::new((Waiter::new(), Packet::new(None)));
        let (registration, key) = chan.register(Side::Recv, &parked.0, 0, &parked.1, waker);
        assert!(matches!(registration, Registration::Waiting(_)));
        (parked, key.expect("registered"))
    }

    /// Runs `f` on a thread of its own, failing if it has not returned within a generous bound
    /// (it hangs when a wake runs under the channel lock).
    fn bounded_run(f: impl FnOnce() + Send + 'static) {
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            f();
            done_tx.send(()).unwrap();
        });
        done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the test hung: a waker was woken under the channel lock");
    }

    #[test]
    fn a_transition_that_panics_wakes_what_it_completed_after_unlocking() {
        bounded_run(|| {
            let chan = Arc::new(Chan::<u8>::new(0));
            let looks = Arc::new(LooksAtChannel {
                chan: chan.clone(),
                woken: AtomicUsize::new(0),
            });
            let (first, first_key) = park_receiver(&chan, Waker::from(looks.clone()));
            // A stale entry: its waiter withdrew, and the close that skips it drops its waker.
            let (stale, stale_key) = park_receiver(&chan, fibra_testing::panics_on_drop());
            stale.0.try_abort().unwrap();
            let closed = catch_unwind(AssertUnwindSafe(|| chan.close()));
            assert!(closed.is_err(), "the waker's drop panic reaches the closer");
            assert_eq!(looks.woken.load(Ordering::SeqCst), 1);
            assert_eq!(first.0.ended(), Some(Ended::Retry));
            assert!(chan.is_closed());
            chan.unregister(Side::Recv, first_key, &first.0, 0);
            chan.unregister(Side::Recv, stale_key, &stale.0, 0);
            assert_eq!(chan.queued(), (0, 0, 0));
            assert_eq!(chan.hints.recv.load(Ordering::SeqCst), 0);
        });
    }

    #[test]
    fn a_stale_waker_that_panics_when_dropped_keeps_no_waiter_from_being_served() {
        let chan = Chan::<u8>::new(0);
        // The stale entry is skipped by the send; its waker is dropped after the lock.
        let (stale, stale_key) = park_receiver(&chan, fibra_testing::panics_on_drop());
        stale.0.try_abort().unwrap();
        let count = Arc::new(Counts(AtomicUsize::new(0)));
        // Its key is spent once a claimer completes it (the claimer frees the entry).
        let (next, _completed) = park_receiver(&chan, Waker::from(count.clone()));
        let sent = catch_unwind(AssertUnwindSafe(|| chan.try_send(5)));
        assert!(sent.is_err(), "the waker's drop panic reaches the sender");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(next.0.ended(), Some(Ended::Done(0)));
        assert_eq!(next.1.into_inner(), Some(5));
        chan.unregister(Side::Recv, stale_key, &stale.0, 0);
        assert_eq!(chan.queued(), (0, 0, 0));
        assert_eq!(chan.hints.recv.load(Ordering::SeqCst), 0);
        // The channel works on: a receiver parks and a send reaches it.
        let (again, _completed) = park_receiver(&chan, Waker::from(count.clone()));
        assert_eq!(chan.try_send(6), Ok(()));
        assert_eq!(
            (count.0.load(Ordering::SeqCst), again.1.into_inner()),
            (2, Some(6))
        );
    }

    #[test]
    fn timed_out_and_withdrawn_waits_leave_no_entries() {
        let (tx, rx) = bounded::<u8>(0);
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(1)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(tx.send_timeout(1, Duration::from_millis(1)).is_err());
        assert_eq!(rx.chan().queued(), (0, 0, 0));

        // A wait over a receive, a send and a close watcher that times out.
        let (tx2, rx2) = bounded::<u8>(0);
        let recv = RecvOp::new(&rx);
        let send = SendOp::new(&tx2, 3);
        let closed = RecvOp::closed(&rx2);
        let deadline = Instant::now() + Duration::from_millis(1);
        loop {
            match op::wait(&[Some(&recv), Some(&send), Some(&closed)], deadline) {
                Woken::TimedOut => break,
                Woken::Retry => {}
                Woken::Selected(i) => panic!("nothing can complete, yet {i} did"),
            }
        }
        assert_eq!(rx.chan().queued(), (0, 0, 0));
        assert_eq!(rx2.chan().queued(), (0, 0, 0));
        assert_eq!(send.try_now(), Attempt::NotReady);
    }

    #[test]
    fn a_completed_wait_leaves_no_entries_on_the_other_channels() {
        let (tx_a, rx_a) = bounded::<u8>(0);
        let (_tx_b, rx_b) = bounded::<u8>(0);
        let sender = std::thread::spawn(move || tx_a.send(1).unwrap());
        let (a, b) = (RecvOp::new(&rx_a), RecvOp::new(&rx_b));
        let won = loop {
            if a.try_now() == Attempt::Completed {
                break 0;
            }
            if let Woken::Selected(i) = op::wait(&[Some(&a), Some(&b)], Deadline::NEVER) {
                break i;
            }
        };
        sender.join().unwrap();
        assert_eq!(won, 0);
        assert_eq!(a.into_value(), Some(1));
        assert_eq!(rx_a.chan().queued(), (0, 0, 0));
        assert_eq!(rx_b.chan().queued(), (0, 0, 0));
    }
}
