//! The buffer of a channel: a bounded lock-free MPMC ring, so that a send into room and a
//! receive of a buffered value take no lock and touch no line the other side writes (head and
//! tail sit on cache lines of their own).
//!
//! Every slot carries a stamp that says whose turn the slot is: a position `p` may be written
//! when the slot's stamp is `p`, and read when it is `p + 1`; a reader sets it to `p` plus one
//! lap, handing the slot to the writer of the next lap. A writer claims position `p` by moving
//! `tail` past it with a CAS, so every position has one writer and one reader. A position is
//! a lap number and an index into the slots; `CLOSED` is a bit of `tail` above every index, so
//! that closing (`fetch_or`) and a writer's CAS are ordered: a push either committed before
//! the close or fails with `Closed`.
//!
//! `push` and `pop` are exact: `Full` means `cap` values were in the ring at that instant and
//! `Empty` that none was. A peer caught between its CAS and its stamp store (a few
//! instructions, unless the OS preempts it) is waited for, not reported as full or empty.

use crossbeam_utils::CachePadded;
use fibra_runtime::loom::cell::Cell;
use fibra_runtime::loom::sync::atomic::{fence, AtomicUsize, Ordering};
use fibra_runtime::wait::Backoff;
use std::mem::MaybeUninit;

/// Why a push failed; the value comes back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PushError<T> {
    /// `cap` values are buffered.
    Full(T),
    /// The ring is closed.
    Closed(T),
}

/// Why a pop found nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PopError {
    /// Nothing is buffered.
    Empty,
    /// Nothing is buffered and the ring is closed: nothing ever will be.
    Closed,
}

struct Slot<T> {
    stamp: AtomicUsize,
    value: Cell<MaybeUninit<T>>,
}

/// A bounded MPMC queue of up to `cap` values; `cap == 0` holds none (always full and empty).
pub(crate) struct Ring<T> {
    head: CachePadded<AtomicUsize>,
    tail: CachePadded<AtomicUsize>,
    slots: Box<[Slot<T>]>,
    /// The bit of `tail` that marks the ring closed; above every index.
    closed: usize,
    /// What one lap adds to a position: the next bit above `closed`.
    lap: usize,
}

// SAFETY: the ring moves `T`s between threads (sound for `T: Send`) and shares nothing else:
// a slot's value is written only by the one writer that claimed its position and read only by
// the one reader that claimed it after the writer's release store of the stamp, which the
// reader acquires (see the module documentation).
unsafe impl<T: Send> Send for Ring<T> {}
// SAFETY: as for `Send`: every access to a value is exclusive by the stamp protocol.
unsafe impl<T: Send> Sync for Ring<T> {}

impl<T> Ring<T> {
    pub(crate) fn new(cap: usize) -> Self {
        let closed = (cap + 1).next_power_of_two();
        let slots = (0..cap)
            .map(|i| Slot {
                stamp: AtomicUsize::new(i),
                value: Cell::new(MaybeUninit::uninit()),
            })
            .collect();
        Ring {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            slots,
            closed,
            lap: closed << 1,
        }
    }

    fn cap(&self) -> usize {
        self.slots.len()
    }

    fn index(&self, pos: usize) -> usize {
        pos & (self.closed - 1)
    }

    /// The position after `pos`: the next index, or index 0 of the next lap.
    fn next(&self, pos: usize) -> usize {
        if self.index(pos) + 1 < self.cap() {
            pos + 1
        } else {
            (pos & !(self.lap - 1)).wrapping_add(self.lap)
        }
    }

    /// Appends `value`, unless the ring is full or closed.
    #[inline]
    pub(crate) fn push(&self, value: T) -> Result<(), PushError<T>> {
        let mut backoff = Backoff::new();
        let mut tail = self.tail.load(Ordering::Relaxed);
        loop {
            if tail & self.closed != 0 {
                return Err(PushError::Closed(value));
            }
            let Some(slot) = self.slots.get(self.index(tail)) else {
                return Err(PushError::Full(value)); // no slots at all
            };
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == tail {
                match self.tail.compare_exchange_weak(
                    tail,
                    self.next(tail),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: the CAS made this thread the one writer of position `tail`,
                        // and the stamp (acquired above) says its last reader is done.
                        slot.value.with_mut(|v| unsafe { (*v).write(value) });
                        slot.stamp.store(tail + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(now) => tail = now,
                }
            } else if stamp.wrapping_add(self.lap) == tail + 1 {
                // The slot still holds the value of the previous lap: full, unless its reader
                // has claimed it and is about to hand it back.
                fence(Ordering::SeqCst);
                let head = self.head.load(Ordering::Relaxed);
                if head.wrapping_add(self.lap) == tail {
                    return Err(PushError::Full(value));
                }
                backoff.snooze();
                tail = self.tail.load(Ordering::Relaxed);
            } else {
                // Another writer took this position; look again.
                backoff.snooze();
                tail = self.tail.load(Ordering::Relaxed);
            }
        }
    }

    /// Takes the oldest value. Always inlined: a receive that finds the ring empty and one that
    /// takes a value both come through here, and as a call its result goes through memory.
    #[inline(always)]
    pub(crate) fn pop(&self) -> Result<T, PopError> {
        let mut backoff = Backoff::new();
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            let Some(slot) = self.slots.get(self.index(head)) else {
                return Err(self.nothing());
            };
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == head + 1 {
                match self.head.compare_exchange_weak(
                    head,
                    self.next(head),
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: the CAS made this thread the one reader of position `head`,
                        // and the stamp (acquired above) says its writer has written it.
                        let value = slot.value.with_mut(|v| unsafe { (*v).assume_init_read() });
                        slot.stamp
                            .store(head.wrapping_add(self.lap), Ordering::Release);
                        return Ok(value);
                    }
                    Err(now) => head = now,
                }
            } else if stamp == head {
                // Not written for this lap: empty, unless its writer has claimed it and is
                // about to write.
                fence(Ordering::SeqCst);
                let tail = self.tail.load(Ordering::Relaxed);
                if tail & !self.closed == head {
                    return Err(self.nothing_at(tail));
                }
                backoff.snooze();
                head = self.head.load(Ordering::Relaxed);
            } else {
                // Another reader took this position; look again.
                backoff.snooze();
                head = self.head.load(Ordering::Relaxed);
            }
        }
    }

    fn nothing(&self) -> PopError {
        self.nothing_at(self.tail.load(Ordering::SeqCst))
    }

    fn nothing_at(&self, tail: usize) -> PopError {
        match tail & self.closed != 0 {
            true => PopError::Closed,
            false => PopError::Empty,
        }
    }

    /// Closes the ring: pushes fail from now on. False if it was closed already.
    pub(crate) fn close(&self) -> bool {
        self.tail.fetch_or(self.closed, Ordering::SeqCst) & self.closed == 0
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.tail.load(Ordering::SeqCst) & self.closed != 0
    }

    /// How many values are buffered (claimed positions count).
    pub(crate) fn len(&self) -> usize {
        loop {
            let tail = self.tail.load(Ordering::SeqCst);
            let head = self.head.load(Ordering::SeqCst);
            if self.tail.load(Ordering::SeqCst) != tail {
                continue;
            }
            let tail = tail & !self.closed;
            let (h, t) = (self.index(head), self.index(tail));
            return if h < t {
                t - h
            } else if h > t {
                self.cap() - h + t
            } else if tail == head {
                0
            } else {
                self.cap()
            };
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        let head = self.head.load(Ordering::SeqCst);
        let tail = self.tail.load(Ordering::SeqCst);
        tail & !self.closed == head
    }

    pub(crate) fn is_full(&self) -> bool {
        let head = self.head.load(Ordering::SeqCst);
        let tail = self.tail.load(Ordering::SeqCst);
        self.cap() == 0 || head.wrapping_add(self.lap) == tail & !self.closed
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        while self.pop().is_ok() {}
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fills_to_exactly_cap_then_drains_in_order() {
        for cap in [1, 2, 3, 5, 8] {
            let ring = Ring::new(cap);
            for round in 0..3 {
                for i in 0..cap {
                    assert_eq!(ring.push(round * 100 + i), Ok(()));
                    assert_eq!(ring.len(), i + 1);
                }
                assert!(ring.is_full());
                assert_eq!(ring.push(99), Err(PushError::Full(99)));
                for i in 0..cap {
                    assert_eq!(ring.pop(), Ok(round * 100 + i));
                }
                assert!(ring.is_empty());
                assert_eq!(ring.pop(), Err(PopError::Empty));
            }
        }
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let ring = Ring::new(0);
        assert_eq!(ring.push(1), Err(PushError::Full(1)));
        assert_eq!(ring.pop(), Err(PopError::Empty));
        assert!(ring.is_full() && ring.is_empty());
        assert!(ring.close());
        assert_eq!(ring.push(1), Err(PushError::Closed(1)));
        assert_eq!(ring.pop(), Err(PopError::Closed));
    }

    #[test]
    fn close_refuses_pushes_and_drains() {
        let ring = Ring::new(4);
        ring.push(1).unwrap();
        assert!(ring.close());
        assert!(!ring.close());
        assert_eq!(ring.push(2), Err(PushError::Closed(2)));
        assert_eq!(ring.len(), 1);
        assert_eq!(ring.pop(), Ok(1));
        assert_eq!(ring.pop(), Err(PopError::Closed));
    }

    #[test]
    fn values_left_behind_are_dropped_once() {
        let value = std::sync::Arc::new(());
        let ring = Ring::new(3);
        ring.push(value.clone()).unwrap();
        ring.push(value.clone()).unwrap();
        drop(ring.pop());
        ring.push(value.clone()).unwrap();
        drop(ring);
        assert_eq!(std::sync::Arc::strong_count(&value), 1);
    }

    #[test]
    fn concurrent_pushes_and_pops_deliver_each_value_once() {
        let ring = Ring::new(7);
        let per = 100_000u64;
        let total = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for p in 0..2 {
                let ring = &ring;
                s.spawn(move || {
                    for v in 0..per {
                        let mut v = p * per + v;
                        while let Err(PushError::Full(back)) = ring.push(v) {
                            v = back;
                            std::thread::yield_now();
                        }
                    }
                });
            }
            for _ in 0..2 {
                let (ring, total) = (&ring, &total);
                s.spawn(move || {
                    for _ in 0..per {
                        loop {
                            if let Ok(v) = ring.pop() {
                                total.fetch_add(v, std::sync::atomic::Ordering::Relaxed);
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        let n = 2 * per;
        assert_eq!(total.into_inner(), n * (n - 1) / 2);
        assert!(ring.is_empty());
    }
}
