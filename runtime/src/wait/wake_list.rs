//! Wakers collected under a lock and woken after it is released.

use std::fmt;
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
}

impl WakeList {
    /// An empty list.
    pub const fn new() -> WakeList {
        WakeList {
            first: None,
            more: Vec::new(),
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

    /// Whether no waker was collected.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Wakes everything collected, now.
    pub fn wake_all(mut self) {
        self.wake();
    }

    fn wake(&mut self) {
        if let Some(first) = self.first.take() {
            first.wake();
        }
        for waker in self.more.drain(..) {
            waker.wake();
        }
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
    fn drop(&mut self) {
        self.wake();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::counting_waker::waker;
    use super::WakeList;

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
}
