//! Who is calling: the fiber, or the plain thread outside any fiber. Re-entrancy and recursive
//! initialisation are decided per fiber, not per thread, because many fibers share a worker.
//! A future is an owner of its own: it moves between tasks and threads, and a task's thread
//! or polling fiber says nothing about which future holds something.

use std::sync::atomic::{AtomicU64, Ordering};

/// A caller's identity as a number that is never 0 and never below [`Owner::MIN`], so that
/// state words can keep small values for themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner(u64);

/// Fiber ids are tagged 0, thread numbers 1, future numbers 2, in the low bits.
const TAG_BITS: u32 = 2;
const THREAD: u64 = 1;
const FUTURE: u64 = 2;

static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);
static NEXT_FUTURE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD_OWNER: Owner =
        Owner((NEXT_THREAD.fetch_add(1, Ordering::Relaxed) << TAG_BITS) | THREAD);
}

impl Owner {
    /// Every owner's number is at least this.
    pub(crate) const MIN: u64 = 1 << TAG_BITS;

    /// The calling fiber, or else the calling thread.
    pub(crate) fn current() -> Owner {
        if fibra_runtime::wait::in_fiber() {
            // Fiber ids start at 1.
            Owner(fibra_runtime::current().id().as_u64() << TAG_BITS)
        } else {
            THREAD_OWNER.with(|owner| *owner)
        }
    }

    /// A new owner, never handed out before and never equal to a fiber's or a thread's: a
    /// future's own identity.
    pub(crate) fn fresh() -> Owner {
        Owner((NEXT_FUTURE.fetch_add(1, Ordering::Relaxed) << TAG_BITS) | FUTURE)
    }

    pub(crate) fn as_u64(self) -> u64 {
        self.0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fibers_on_one_thread_and_futures_are_different_owners() {
        let outside = Owner::current();
        assert_eq!(outside, Owner::current());
        let (a, b) = fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(|| {
                let a = Owner::current();
                let b = fibra_runtime::spawn(Owner::current).join().unwrap();
                (a, b)
            });
        let (f, g) = (Owner::fresh(), Owner::fresh());
        assert_ne!(a, b);
        assert_ne!(a, outside);
        assert_ne!(f, g);
        assert!([a, b, outside].iter().all(|o| *o != f && *o != g));
        assert!([a, b, outside, f, g]
            .iter()
            .all(|o| o.as_u64() >= Owner::MIN));
    }
}
