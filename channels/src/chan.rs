//! The channel core: one buffer and three wait queues under one lock.
//!
//! [`State`] is the state machine (pure, runs under the lock); [`Chan`] takes the lock, runs a
//! transition and wakes whoever the transition completed once the lock is released.
//!
//! Rules the transitions keep:
//! - a receiver registers only while nothing is buffered, so a sender that finds a claimable
//!   receiver hands the value over directly, past the buffer;
//! - a sender registers only while the buffer is full; a receiver that takes from a full buffer
//!   moves the oldest parked sender's value to the buffer's tail (FIFO per sender);
//! - waiters are claimed in registration order (FIFO wake order);
//! - close claims every parked receiver (they find no value) and sender (they keep their
//!   value), and close watchers once the buffer is drained.

use crate::error::{TryRecvError, TrySendError};
use crate::feed::{Feed, Fired};
use crate::queue::{Entry, WaitQueue};
use crate::shim::{AtomicUsize, Lock, LockGuard, Ordering};
use crate::waiter::Waiter;
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
    /// Registered; look again at this instant if nobody completes the operation before (a
    /// timer channel's deadline).
    Waiting(Option<Instant>),
    /// Not registered: the operation can complete now.
    Ready,
}

/// Wakers collected under the lock, woken after it.
#[derive(Default)]
pub(crate) struct Wakeups {
    one: Option<Waker>,
    many: Vec<Waker>,
}

impl Wakeups {
    #[inline]
    fn push(&mut self, waker: Waker) {
        match self.one {
            None => self.one = Some(waker),
            Some(_) => self.many.push(waker),
        }
    }

    #[inline]
    fn wake(self) {
        if let Some(waker) = self.one {
            waker.wake();
        }
        if !self.many.is_empty() {
            for waker in self.many {
                waker.wake();
            }
        }
    }
}

/// Everything the lock protects.
pub(crate) struct State<T> {
    buf: VecDeque<T>,
    cap: usize,
    closed: bool,
    receivers: WaitQueue<T>,
    senders: WaitQueue<T>,
    watchers: WaitQueue<T>,
    feed: Option<Feed<T>>,
}

impl<T> State<T> {
    fn new(cap: usize, feed: Option<Feed<T>>) -> Self {
        State {
            buf: VecDeque::with_capacity(cap.min(1024)),
            cap,
            closed: false,
            receivers: WaitQueue::new(),
            senders: WaitQueue::new(),
            watchers: WaitQueue::new(),
            feed,
        }
    }

    /// Lets a timer channel's feed act if its deadline has come.
    #[inline]
    fn fire_feed(&mut self, wake: &mut Wakeups) {
        if self.feed.is_some() {
            self.fire_feed_now(wake);
        }
    }

    #[cold]
    fn fire_feed_now(&mut self, wake: &mut Wakeups) {
        let Some(feed) = &mut self.feed else { return };
        match feed.fire(Instant::now()) {
            Fired::Waiting => {}
            Fired::Close => {
                self.close(wake);
            }
            Fired::Tick(value) => self.deliver_tick(value, wake),
            Fired::LastTick(value) => {
                self.feed = None;
                self.deliver_tick(value, wake);
            }
        }
    }

    /// A tick goes to a parked receiver, else into the buffer if there is room, else is
    /// dropped.
    fn deliver_tick(&mut self, value: T, wake: &mut Wakeups) {
        if let Some(receiver) = self.receivers.claim() {
            receiver.put(value);
            wake.push(receiver.finish());
        } else if self.buf.len() < self.cap {
            self.buf.push_back(value);
        }
    }

    fn feed_deadline(&self) -> Option<Instant> {
        self.feed.as_ref().map(Feed::deadline)
    }

    pub(crate) fn recv(&mut self, wake: &mut Wakeups) -> Result<T, TryRecvError> {
        self.fire_feed(wake);
        if let Some(value) = self.buf.pop_front() {
            if let Some(sender) = self.senders.claim() {
                self.buf.push_back(sender.take());
                wake.push(sender.finish());
            } else if self.closed && self.buf.is_empty() {
                self.finish_watchers(wake);
            }
            return Ok(value);
        }
        if let Some(sender) = self.senders.claim() {
            let value = sender.take();
            wake.push(sender.finish());
            return Ok(value);
        }
        Err(if self.closed {
            TryRecvError::Closed
        } else {
            TryRecvError::Empty
        })
    }

    pub(crate) fn send(&mut self, value: T, wake: &mut Wakeups) -> Result<(), TrySendError<T>> {
        if self.closed {
            return Err(TrySendError::Closed(value));
        }
        if let Some(receiver) = self.receivers.claim() {
            receiver.put(value);
            wake.push(receiver.finish());
            return Ok(());
        }
        if self.buf.len() < self.cap {
            self.buf.push_back(value);
            return Ok(());
        }
        Err(TrySendError::Full(value))
    }

    fn closed_and_drained(&mut self, wake: &mut Wakeups) -> bool {
        self.fire_feed(wake);
        self.closed && self.buf.is_empty()
    }

    fn register(
        &mut self,
        side: Side,
        entry: Entry<T>,
        waiter: &Waiter,
        wake: &mut Wakeups,
    ) -> Registration {
        let ready = match side {
            Side::Recv => {
                self.fire_feed(wake);
                self.closed || !self.buf.is_empty() || self.senders.has_other(waiter)
            }
            Side::Send => {
                self.closed || self.buf.len() < self.cap || self.receivers.has_other(waiter)
            }
            Side::Closed => self.closed_and_drained(wake),
        };
        if ready {
            return Registration::Ready;
        }
        self.queue(side).push(entry);
        Registration::Waiting(self.feed_deadline())
    }

    fn queue(&mut self, side: Side) -> &mut WaitQueue<T> {
        match side {
            Side::Recv => &mut self.receivers,
            Side::Send => &mut self.senders,
            Side::Closed => &mut self.watchers,
        }
    }

    fn finish_watchers(&mut self, wake: &mut Wakeups) {
        self.watchers.finish_all(&mut wake.many);
    }

    /// Closes the channel; false if it already was.
    fn close(&mut self, wake: &mut Wakeups) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        self.feed = None;
        self.receivers.finish_all(&mut wake.many);
        self.senders.finish_all(&mut wake.many);
        if self.buf.is_empty() {
            self.finish_watchers(wake);
        }
        true
    }

    /// Puts back a value a receiver was handed but cannot take any more (its future was
    /// dropped): to the next parked receiver, else to the buffer's head.
    fn reinject(&mut self, value: T, wake: &mut Wakeups) {
        if let Some(receiver) = self.receivers.claim() {
            receiver.put(value);
            wake.push(receiver.finish());
        } else {
            self.buf.push_front(value);
        }
    }
}

/// A channel: the shared state behind its `Writer`s and `Reader`s.
pub(crate) struct Chan<T> {
    state: Lock<State<T>>,
    cap: usize,
    writers: AtomicUsize,
    readers: AtomicUsize,
}

impl<T> Chan<T> {
    /// A channel with one writer and one reader.
    pub(crate) fn new(cap: usize) -> Self {
        Chan::build(cap, None, 1)
    }

    /// A timer channel: one reader, no writer.
    pub(crate) fn timer(cap: usize, feed: Option<Feed<T>>) -> Self {
        Chan::build(cap, feed, 0)
    }

    fn build(cap: usize, feed: Option<Feed<T>>, writers: usize) -> Self {
        Chan {
            state: Lock::new(State::new(cap, feed)),
            cap,
            writers: AtomicUsize::new(writers),
            readers: AtomicUsize::new(1),
        }
    }

    /// No user code runs under the lock: values are only moved, wakers are woken after it.
    fn lock(&self) -> LockGuard<'_, State<T>> {
        self.state.lock()
    }

    /// Runs one transition under the lock, then wakes whoever it completed.
    fn with<R>(&self, f: impl FnOnce(&mut State<T>, &mut Wakeups) -> R) -> R {
        let mut wake = Wakeups::default();
        let out = f(&mut self.lock(), &mut wake);
        wake.wake();
        out
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        self.with(|state, wake| state.recv(wake))
    }

    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.with(|state, wake| state.send(value, wake))
    }

    pub(crate) fn closed_and_drained(&self) -> bool {
        self.with(|state, wake| state.closed_and_drained(wake))
    }

    /// Registers operation `oper` of `waiter` on `side`, unless it can complete now.
    pub(crate) fn register(
        &self,
        side: Side,
        waiter: &Waiter,
        oper: usize,
        packet: &crate::packet::Packet<T>,
    ) -> Registration {
        let entry = Entry::new(waiter, oper, packet);
        self.with(|state, wake| state.register(side, entry, waiter, wake))
    }

    /// Removes every entry of `waiter` from `side`. Taking the lock also orders this after any
    /// claimer of `waiter` that used this channel: once this returns, such a claimer finished.
    pub(crate) fn unregister(&self, side: Side, waiter: &Waiter) {
        self.lock().queue(side).remove(waiter);
    }

    /// Closes the channel; true if this call closed it.
    pub(crate) fn close(&self) -> bool {
        self.with(|state, wake| state.close(wake))
    }

    pub(crate) fn reinject(&self, value: T) {
        self.with(|state, wake| state.reinject(value, wake));
    }

    pub(crate) fn len(&self) -> usize {
        self.with(|state, wake| {
            state.fire_feed(wake);
            state.buf.len()
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.with(|state, wake| {
            state.fire_feed(wake);
            state.closed
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
            let buffered = self.with(|state, wake| {
                state.close(wake);
                std::mem::take(&mut state.buf)
            });
            drop(buffered);
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn queued(&self) -> (usize, usize, usize) {
        let state = self.lock();
        (
            state.receivers.len(),
            state.senders.len(),
            state.watchers.len(),
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::op::{self, Attempt, Operation, RecvOp, SendOp, Woken};
    use crate::{bounded, RecvTimeoutError};
    use std::time::{Duration, Instant};

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
            match op::wait(&[Some(&recv), Some(&send), Some(&closed)], Some(deadline)) {
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
            if let Woken::Selected(i) = op::wait(&[Some(&a), Some(&b)], None) {
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
