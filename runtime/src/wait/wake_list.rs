//! Wakers collected under a lock and woken after it is released.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

/// Wakers collected under a lock, woken when this is dropped (or by [`wake_all`]). Declare it
/// before the lock guard so that the guard is dropped, and the lock released, first: a woken
/// fiber on another worker then does not run straight into the lock.
///
/// [`wake_all`]: WakeList::wake_all
///
/// ```
/// use fibra::wait::WakeList;
/// use std::sync::Mutex;
///
/// let wakers = Mutex::new(vec![fibra::wait::current_waker()]);
/// let mut woken = WakeList::new();
/// {
///     let mut list = wakers.lock().unwrap();
///     woken.extend(list.drain(..));
/// } // unlocked here; woken next
/// woken.wake_all();
/// // The wake came first, so the park returns at once.
/// fibra::wait::park_current();
/// ```
pub struct WakeList {
    // The common case, one waker, needs no allocation.
    first: Option<Waker>,
    more: Vec<Waker>,
    /// Wakers only to drop; the drop glue drops them after `Drop::drop` has woken the others,
    /// so a drop that panics cannot keep a waiter from being woken.
    stale: Stale,
}

/// Wakers kept only to be dropped late, one of them without an allocation.
struct Stale {
    first: Option<Waker>,
    more: Vec<Waker>,
}

impl WakeList {
    /// An empty list.
    pub const fn new() -> WakeList {
        WakeList {
            first: None,
            more: Vec::new(),
            stale: Stale {
                first: None,
                more: Vec::new(),
            },
        }
    }

    /// Adds a waker to wake later.
    #[inline]
    pub fn push(&mut self, waker: Waker) {
        if self.first.is_none() {
            self.first = Some(waker);
        } else {
            self.more.push(waker);
        }
    }

    /// Keeps a waker that is not to be woken (its waiter gave up, or was served elsewhere), to
    /// drop it with the list: dropping a waker may run its owner's code, which must not run
    /// under the lock either. It is dropped after the list's wakes.
    ///
    /// ```
    /// use fibra::wait::WakeList;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use std::task::{Wake, Waker};
    ///
    /// struct Count(AtomicUsize);
    ///
    /// impl Wake for Count {
    ///     fn wake(self: Arc<Self>) {
    ///         self.0.fetch_add(1, Ordering::SeqCst);
    ///     }
    /// }
    ///
    /// let count = Arc::new(Count(AtomicUsize::new(0)));
    /// let mut wakers = WakeList::new();
    /// wakers.push(Waker::from(count.clone()));
    /// wakers.push_stale(Waker::from(count.clone()));
    /// wakers.wake_all();
    /// // One wake, and both wakers are gone.
    /// assert_eq!(count.0.load(Ordering::SeqCst), 1);
    /// assert_eq!(Arc::strong_count(&count), 1);
    /// ```
    #[inline]
    pub fn push_stale(&mut self, waker: Waker) {
        if self.stale.first.is_none() {
            self.stale.first = Some(waker);
        } else {
            self.stale.more.push(waker);
        }
    }

    /// Whether no waker was collected to wake (wakers kept only to drop do not count).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Wakes everything collected, now, then drops the wakers kept only to drop.
    #[inline]
    pub fn wake_all(self) {
        drop(self);
    }

    /// Wakes everything collected, which is something: `first` is filled before `more`.
    #[inline(never)]
    fn wake(&mut self) {
        let first = self.first.take();
        if self.more.is_empty() {
            if let Some(first) = first {
                first.wake();
            }
        } else {
            wake_each(first.into_iter().chain(self.more.drain(..)));
        }
    }
}

/// Wakes every waker even if one's `wake` panics (a task's waker is user code), then resumes
/// the first panic: a waiter must not miss its wake because another waiter's waker failed.
fn wake_each(wakers: impl Iterator<Item = Waker>) {
    let mut panicked = None;
    for waker in wakers {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| waker.wake())) {
            panicked.get_or_insert(payload);
        }
    }
    if let Some(payload) = panicked {
        panic::resume_unwind(payload);
    }
}

impl Default for WakeList {
    fn default() -> WakeList {
        WakeList::new()
    }
}

impl Extend<Waker> for WakeList {
    fn extend<I: IntoIterator<Item = Waker>>(&mut self, wakers: I) {
        for waker in wakers {
            self.push(waker);
        }
    }
}

impl fmt::Debug for WakeList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = usize::from(self.first.is_some()) + self.more.len();
        f.debug_struct("WakeList").field("len", &len).finish()
    }
}

impl Drop for WakeList {
    /// Every channel operation under a lock ends here, most with nothing collected: that case
    /// is one test, inlined.
    #[inline]
    fn drop(&mut self) {
        if !self.is_empty() {
            self.wake();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::counting_waker::waker;
    use super::WakeList;
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    #[test]
    fn everything_collected_is_woken_once_on_drop() {
        let (count, waker) = waker();
        let mut wakers = WakeList::new();
        assert!(wakers.is_empty());
        for _ in 0..3 {
            wakers.push(waker.clone());
        }
        assert_eq!(count.woken(), 0);
        drop(wakers);
        assert_eq!(count.woken(), 3);
    }

    /// A waker whose `wake` panics.
    struct Panics;

    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("this waker panics");
        }
    }

    #[test]
    fn a_panicking_wake_does_not_keep_the_others_from_being_woken() {
        let (count, waker) = waker();
        for panicking_at in 0..3 {
            let mut wakers = WakeList::new();
            for i in 0..3 {
                if i == panicking_at {
                    wakers.push(Waker::from(Arc::new(Panics)));
                } else {
                    wakers.push(waker.clone());
                }
            }
            let woken_before = count.woken();
            let unwound = panic::catch_unwind(AssertUnwindSafe(|| wakers.wake_all()));
            let payload = unwound.expect_err("the waker's panic is resumed");
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"this waker panics"));
            assert_eq!(
                count.woken() - woken_before,
                2,
                "panicking at {panicking_at}"
            );
        }
    }

    #[test]
    fn wake_all_wakes_each_once_and_an_empty_list_nothing() {
        let (count, waker) = waker();
        WakeList::new().wake_all();
        for collected in 1..=3 {
            let mut wakers = WakeList::new();
            wakers.extend((0..collected).map(|_| waker.clone()));
            wakers.wake_all();
        }
        assert_eq!(count.woken(), 1 + 2 + 3);
    }
}
