//! The one waiter queue behind every primitive: a FIFO list of wakers with per-waiter data,
//! kept in a slab so that registering costs no allocation once the slab has grown.
//!
//! A waiter owns its slot from registration until it removes it itself. Waking a waiter
//! unlinks it from the queue and takes its waker, but leaves the slot (and its data, which the
//! waking side may have updated) for the waiter to collect: so a key is never reused while its
//! owner may still look at it, and a waiter learns whether it was woken or gave up first by
//! looking at its own slot under the lock.
//!
//! The list is not thread-safe by itself; each primitive keeps it behind its short internal
//! lock ([`Lock`](crate::loom::sync::Lock) or [`SpinLock`](crate::loom::sync::SpinLock)), and
//! wakes what it popped through a [`WakeList`](super::WakeList) once the lock is released.

use super::WakeList;
use std::task::Waker;

const NIL: usize = usize::MAX;

/// A waiter's claim on its slot. Deliberately neither `Clone` nor `Copy`: it is given back
/// exactly once, to [`WaitList::remove`].
#[derive(Debug)]
pub struct Key(usize);

struct Slot<T> {
    /// `None` for a free slot.
    entry: Option<Entry<T>>,
    /// Queue neighbours while queued; `next` links the free list while free.
    prev: usize,
    next: usize,
}

struct Entry<T> {
    data: T,
    /// `Some` while queued; taken by whoever wakes the waiter.
    waker: Option<Waker>,
}

/// A FIFO queue of waiters, each with a waker and a `T`.
///
/// ```
/// use fibra::wait::WaitList;
///
/// let mut list = WaitList::new();
/// let first = list.push_back("first", fibra::wait::current_waker());
/// let second = list.push_back("second", fibra::wait::current_waker());
/// // The waking side pops the front waiter and takes its waker (to wake after unlocking).
/// let waker = list.pop_front().unwrap();
/// assert!(list.is_woken(&first) && !list.is_woken(&second));
/// // Each waiter gives its slot back itself, learning whether it had been woken.
/// assert_eq!(list.remove(second), ("second", false));
/// assert_eq!(list.remove(first), ("first", true));
/// waker.wake();
/// ```
pub struct WaitList<T> {
    slots: Vec<Slot<T>>,
    head: usize,
    tail: usize,
    free: usize,
    queued: usize,
}

impl<T> Default for WaitList<T> {
    fn default() -> WaitList<T> {
        WaitList::new()
    }
}

impl<T> std::fmt::Debug for WaitList<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitList")
            .field("queued", &self.queued)
            .finish_non_exhaustive()
    }
}

impl<T> WaitList<T> {
    /// An empty list; it allocates when the first waiter is queued.
    pub const fn new() -> WaitList<T> {
        WaitList {
            slots: Vec::new(),
            head: NIL,
            tail: NIL,
            free: NIL,
            queued: 0,
        }
    }

    /// Whether no waiter is queued (woken waiters that have not collected their slot do not
    /// count).
    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// How many waiters are queued.
    pub fn len(&self) -> usize {
        self.queued
    }

    /// Queues a waiter at the back.
    pub fn push_back(&mut self, data: T, waker: Waker) -> Key {
        let tail = self.tail;
        self.insert_after(tail, data, waker)
    }

    /// Queues a waiter at the front (one that was woken, lost the race, and keeps its turn).
    pub fn push_front(&mut self, data: T, waker: Waker) -> Key {
        self.insert_after(NIL, data, waker)
    }

    /// Queues a waiter after every waiter whose data is not greater: the queue stays sorted
    /// and FIFO among equals. Walks from the back, where ascending data usually goes.
    pub fn push_sorted(&mut self, data: T, waker: Waker) -> Key
    where
        T: Ord,
    {
        let mut after = self.tail;
        while after != NIL && self.data(after) > &data {
            after = self.slots[after].prev;
        }
        self.insert_after(after, data, waker)
    }

    /// The first queued waiter's data.
    pub fn front(&self) -> Option<&T> {
        (self.head != NIL).then(|| self.data(self.head))
    }

    /// The first queued waiter's data, for the waking side to update before it wakes it.
    pub fn front_mut(&mut self) -> Option<&mut T> {
        let head = self.head;
        (head != NIL).then(|| &mut self.entry_mut(head).data)
    }

    /// The queued waiters' data, front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let mut at = self.head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let data = self.data(at);
                at = self.slots[at].next;
                data
            })
        })
    }

    /// Unlinks the first queued waiter and returns its waker, for the caller to wake once it
    /// has released the lock. The waiter's slot and data stay until it collects them.
    pub fn pop_front(&mut self) -> Option<Waker> {
        let head = self.head;
        if head == NIL {
            return None;
        }
        self.unlink(head);
        self.entry_mut(head).waker.take()
    }

    /// Walks the queue front to back and unlinks each waiter that `pick` accepts, as
    /// [`pop_front`](Self::pop_front) does, handing its waker to `wakers` to wake once the lock
    /// is released; returns how many it unlinked. For a waking side that may serve a waiter
    /// behind one it cannot serve. `pick` says of each waiter's data whether to wake it
    /// (`Some(true)`), pass over it (`Some(false)`), or stop the walk there (`None`), so that
    /// the walk goes no further than the caller needs.
    ///
    /// ```
    /// use fibra::wait::{WaitList, WakeList};
    ///
    /// let mut list = WaitList::new();
    /// let keys: Vec<_> = [3, 1, 2, 1]
    ///     .into_iter()
    ///     .map(|wanted| list.push_back(wanted, fibra::wait::current_waker()))
    ///     .collect();
    /// // Two units to share out: wake whoever fits, in queue order, until none are left.
    /// let (mut wakers, mut left) = (WakeList::new(), 2);
    /// let woken = list.wake_where(
    ///     |&wanted| {
    ///         (left > 0).then(|| {
    ///             let fits = wanted <= left;
    ///             if fits {
    ///                 left -= wanted;
    ///             }
    ///             fits
    ///         })
    ///     },
    ///     &mut wakers,
    /// );
    /// assert_eq!(woken, 2);
    /// assert_eq!(list.iter().copied().collect::<Vec<_>>(), [3, 2]);
    /// let woken: Vec<_> = keys.iter().map(|key| list.is_woken(key)).collect();
    /// assert_eq!(woken, [false, true, false, true]);
    /// ```
    pub fn wake_where(
        &mut self,
        mut pick: impl FnMut(&T) -> Option<bool>,
        wakers: &mut super::WakeList,
    ) -> usize {
        let mut woken = 0;
        let mut at = self.head;
        while at != NIL {
            let next = self.slots[at].next;
            match pick(self.data(at)) {
                None => break,
                Some(false) => {}
                Some(true) => {
                    self.unlink(at);
                    let waker = self.entry_mut(at).waker.take();
                    wakers.push(waker.expect("a queued waiter has its waker"));
                    woken += 1;
                }
            }
            at = next;
        }
        woken
    }

    /// Unlinks the first queued waiter and takes its waker, leaving the waking side to decide
    /// what becomes of its slot: for a primitive whose waking side must look at a waiter's
    /// data before it commits to waking it (a select's waiter may have been claimed by another
    /// queue). The slot stays for its owner to collect unless [`Popped::free`] gives it up.
    pub fn pop_front_entry(&mut self) -> Option<Popped<'_, T>> {
        let head = self.head;
        if head == NIL {
            return None;
        }
        self.unlink(head);
        let waker = self
            .entry_mut(head)
            .waker
            .take()
            .expect("a queued waiter has its waker");
        Some(Popped {
            list: self,
            index: head,
            waker,
        })
    }

    /// Whether the waiter holding `key` has been woken (unlinked by [`pop_front`](Self::pop_front)).
    pub fn is_woken(&self, key: &Key) -> bool {
        self.entry(key.0).waker.is_none()
    }

    /// Replaces a queued waiter's waker (a future polled with a different one), handing the
    /// one it replaces to `wakers` to drop once the lock is released. Nothing changes when the
    /// two wake the same task, or once the waiter has been woken.
    ///
    /// ```
    /// use fibra::wait::{WaitList, WakeList};
    /// use futures::task::noop_waker;
    ///
    /// let mut waiters = WaitList::new();
    /// let key = waiters.push_back((), fibra::wait::current_waker());
    /// let mut wakers = WakeList::new();
    /// waiters.set_waker(&key, &noop_waker(), &mut wakers);
    /// let woken = waiters.pop_front().expect("one waiter");
    /// assert!(woken.will_wake(&noop_waker()));
    /// ```
    pub fn set_waker(&mut self, key: &Key, waker: &Waker, wakers: &mut WakeList) {
        if let Some(old) = &mut self.entry_mut(key.0).waker {
            if !old.will_wake(waker) {
                wakers.push_stale(std::mem::replace(old, waker.clone()));
            }
        }
    }

    /// Gives the slot back: returns its data and whether the waiter had been woken.
    pub fn remove(&mut self, key: Key) -> (T, bool) {
        let (data, waker) = self.remove_slot(key);
        (data, waker.is_none())
    }

    /// [`remove`](Self::remove), handing the waker of a waiter that was not woken to
    /// `wakers`, which drops it once the lock is released (see [`WakeList::push_stale`]).
    ///
    /// ```
    /// use fibra::wait::{WaitList, WakeList};
    /// use std::sync::Mutex;
    ///
    /// let waiters = Mutex::new(WaitList::new());
    /// let key = waiters.lock().unwrap().push_back(7, fibra::wait::current_waker());
    /// // Declared before the guard, so it drops the waker after the lock is released.
    /// let mut wakers = WakeList::new();
    /// // The waiter gives up before anyone woke it.
    /// assert_eq!(waiters.lock().unwrap().remove_into(key, &mut wakers), (7, false));
    /// ```
    ///
    /// [`WakeList::push_stale`]: super::WakeList::push_stale
    pub fn remove_into(&mut self, key: Key, wakers: &mut super::WakeList) -> (T, bool) {
        let (data, waker) = self.remove_slot(key);
        match waker {
            Some(waker) => {
                wakers.push_stale(waker);
                (data, false)
            }
            None => (data, true),
        }
    }

    /// Frees the slot of `key`, returning its data and its waker unless a wake took it.
    fn remove_slot(&mut self, key: Key) -> (T, Option<Waker>) {
        if !self.is_woken(&key) {
            self.unlink(key.0);
        }
        let entry = self.free_slot(key.0);
        (entry.data, entry.waker)
    }

    fn free_slot(&mut self, index: usize) -> Entry<T> {
        let slot = &mut self.slots[index];
        let entry = slot.entry.take().expect("a key names an occupied slot");
        slot.next = self.free;
        self.free = index;
        entry
    }

    fn insert_after(&mut self, after: usize, data: T, waker: Waker) -> Key {
        let entry = Some(Entry {
            data,
            waker: Some(waker),
        });
        let index = if self.free == NIL {
            self.slots.push(Slot {
                entry,
                prev: NIL,
                next: NIL,
            });
            self.slots.len() - 1
        } else {
            let index = self.free;
            self.free = self.slots[index].next;
            self.slots[index].entry = entry;
            index
        };
        let next = if after == NIL {
            self.head
        } else {
            self.slots[after].next
        };
        self.slots[index].prev = after;
        self.slots[index].next = next;
        match after {
            NIL => self.head = index,
            after => self.slots[after].next = index,
        }
        match next {
            NIL => self.tail = index,
            next => self.slots[next].prev = index,
        }
        self.queued += 1;
        Key(index)
    }

    fn unlink(&mut self, index: usize) {
        let Slot { prev, next, .. } = self.slots[index];
        match prev {
            NIL => self.head = next,
            prev => self.slots[prev].next = next,
        }
        match next {
            NIL => self.tail = prev,
            next => self.slots[next].prev = prev,
        }
        self.queued -= 1;
    }

    fn entry(&self, index: usize) -> &Entry<T> {
        self.slots[index]
            .entry
            .as_ref()
            .expect("a key names an occupied slot")
    }

    fn entry_mut(&mut self, index: usize) -> &mut Entry<T> {
        self.slots[index]
            .entry
            .as_mut()
            .expect("a key names an occupied slot")
    }

    fn data(&self, index: usize) -> &T {
        &self.entry(index).data
    }
}

/// A waiter [`WaitList::pop_front_entry`] unlinked, with its waker; it borrows the list, so it
/// is dealt with under the lock. Dropping it leaves the slot to its owner (who then finds
/// itself woken) and drops the waker.
pub struct Popped<'a, T> {
    list: &'a mut WaitList<T>,
    index: usize,
    waker: Waker,
}

impl<'a, T> Popped<'a, T> {
    /// The waiter's data.
    pub fn data(&self) -> &T {
        self.list.data(self.index)
    }

    /// Leaves the slot to its owner, as [`WaitList::pop_front`] does, and returns the waker.
    pub fn into_waker(self) -> Waker {
        self.waker
    }

    /// Frees the slot as well, returning the waiter's data and waker. The owner's key is spent:
    /// the primitive's own protocol must tell the owner so (it drops the key and never gives it
    /// to [`WaitList::remove`], which would otherwise free a slot that may have been reused).
    pub fn free(self) -> (T, Waker) {
        (self.list.free_slot(self.index).data, self.waker)
    }
}

impl<T> std::fmt::Debug for Popped<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Popped")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::counting_waker::waker;
    use super::*;
    use std::sync::Arc;

    fn order<T: Copy>(list: &WaitList<T>) -> Vec<T> {
        list.iter().copied().collect()
    }

    #[test]
    fn fifo_with_removal_from_the_middle_and_slot_reuse() {
        let mut list = WaitList::new();
        let a = list.push_back('a', waker().1);
        let b = list.push_back('b', waker().1);
        let _c = list.push_back('c', waker().1);
        assert_eq!(list.remove(b), ('b', false));
        assert_eq!(order(&list), ['a', 'c']);
        let d = list.push_front('d', waker().1);
        assert_eq!(order(&list), ['d', 'a', 'c']);
        // The freed slot is reused: the slab did not grow.
        assert_eq!(list.slots.len(), 3);
        assert_eq!(list.len(), 3);
        assert_eq!(list.remove(d), ('d', false));
        assert_eq!(list.remove(a), ('a', false));
        assert_eq!(order(&list), ['c']);
        assert_eq!(list.front(), Some(&'c'));
    }

    #[test]
    fn a_woken_waiter_keeps_its_slot_and_sees_updated_data() {
        let mut list = WaitList::new();
        let (count, w) = waker();
        let key = list.push_back(0u32, w);
        *list.front_mut().unwrap() = 7;
        let taken = list.pop_front().unwrap();
        assert!(list.is_empty());
        assert!(list.is_woken(&key));
        // A second waiter does not get the woken one's slot.
        let other = list.push_back(1, waker().1);
        assert_eq!(list.slots.len(), 2);
        taken.wake();
        assert_eq!(count.woken(), 1);
        assert_eq!(list.remove(key), (7, true));
        assert_eq!(list.remove(other), (1, false));
        assert!(list.pop_front().is_none());
    }

    /// Ordered by the number only, so that equal numbers show the queue's FIFO order.
    #[derive(Clone, Copy, Debug)]
    struct Tagged(u32, char);

    impl PartialEq for Tagged {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    impl Eq for Tagged {}

    impl PartialOrd for Tagged {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }

    impl Ord for Tagged {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.cmp(&other.0)
        }
    }

    #[test]
    fn sorted_insertion_is_fifo_among_equals() {
        let mut list = WaitList::new();
        for (value, tag) in [(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e')] {
            list.push_sorted(Tagged(value, tag), waker().1);
        }
        let tags: String = list.iter().map(|t| t.1).collect();
        assert_eq!(tags, "bedac");
    }

    #[test]
    fn a_popped_entry_is_left_to_its_owner_or_freed() {
        let mut list = WaitList::new();
        let (count, w) = waker();
        let left = list.push_back('l', w.clone());
        let freed = list.push_back('f', w);
        let popped = list.pop_front_entry().unwrap();
        assert_eq!(*popped.data(), 'l');
        popped.into_waker().wake();
        assert!(list.is_woken(&left));
        let popped = list.pop_front_entry().unwrap();
        let (data, woken) = popped.free();
        assert_eq!(data, 'f');
        woken.wake();
        assert_eq!(count.woken(), 2);
        // The freed slot is reused by the next waiter; the spent key is only dropped.
        let _spent = freed;
        let next = list.push_back('n', waker().1);
        assert_eq!(list.slots.len(), 2);
        assert!(list.pop_front_entry().is_some());
        assert_eq!(list.remove(next), ('n', true));
        assert_eq!(list.remove(left), ('l', true));
        assert!(list.pop_front_entry().is_none());
    }

    #[test]
    fn set_waker_replaces_a_queued_waiters_waker() {
        let mut list = WaitList::new();
        let (first, w1) = waker();
        let (second, w2) = waker();
        let key = list.push_back((), w1);
        let mut replaced = WakeList::new();
        list.set_waker(&key, &w2, &mut replaced);
        // The replaced waker is kept to be dropped with the list, after the lock, unwoken.
        assert_eq!(Arc::strong_count(&first), 2);
        drop(replaced);
        assert_eq!(Arc::strong_count(&first), 1);
        list.pop_front().unwrap().wake();
        assert_eq!(first.woken(), 0);
        assert_eq!(second.woken(), 1);
        list.remove(key);
    }

    #[test]
    fn set_waker_with_a_waker_of_the_same_task_keeps_the_registered_one() {
        let mut list = WaitList::new();
        let (count, w) = waker();
        let key = list.push_back((), w.clone());
        let mut replaced = WakeList::new();
        list.set_waker(&key, &w, &mut replaced);
        drop(replaced);
        // Registered, the caller's and the count's own: nothing was cloned or dropped.
        assert_eq!(Arc::strong_count(&count), 3);
        list.remove(key);
    }
}
