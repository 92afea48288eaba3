//! Who may be reading waits through their holders, so that a fiber ending an owned wait pays
//! for a reader only while one looks.
//!
//! A reader that follows a published wait to its resource's [`Holder`](crate::wait::Holder)
//! holds the record's `pin`, and a fiber ending such a wait used to take the pin too, so that
//! the resource (borrowed until the wait has ended) outlives the read: a locked instruction on
//! every contended lock, for readers that almost never look. Now the fiber ends the wait, then
//! looks whether any reader is [`Looking`], and takes the pin only then (a Dekker-style
//! handshake: either it sees the reader, or the reader sees the wait ended).
//!
//! The handshake needs a full fence between the fiber's store and its load. Where Linux's
//! `membarrier` is available (registered once, when the first runtime is built) the fence is
//! asymmetric: the fiber's side is only a compiler fence, and a reader that starts looking
//! makes every running thread of the process execute a full barrier (one system call per
//! look, not per read). Elsewhere both sides use a full fence.

use std::sync::atomic::{compiler_fence, fence, AtomicUsize, Ordering};
use std::sync::Once;

/// `membarrier` commands (`linux/membarrier.h`).
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Whether the process registered for `membarrier` (the `ASYMMETRIC` bit), and how many
/// readers look now, in every runtime of the process (counted in `READER`s above it): one word,
/// so that a fiber ending an owned wait learns both with one load. The bit is set once, by
/// [`init`], before any fiber exists (so before any writer or reader), and never cleared.
static STATE: AtomicUsize = AtomicUsize::new(0);
const ASYMMETRIC: usize = 1;
const READER: usize = 2;
static INIT: Once = Once::new();

/// Registers the process for asymmetric fences, once; called as a runtime is built, before
/// any of its fibers run.
pub(crate) fn init() {
    INIT.call_once(|| {
        // SAFETY: `membarrier` takes two integer arguments (a command and flags) and touches
        // no memory of ours; registering has no effect but allowing the expedited command.
        let registered = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0,
            )
        } == 0;
        if registered {
            STATE.fetch_or(ASYMMETRIC, Ordering::Relaxed);
        }
    });
}

/// Called by a fiber that has just ended an owned wait (its sequence store comes first):
/// whether a reader may be following the wait to its holder, so the fiber must take the
/// record's pin before its call returns.
#[inline]
pub(crate) fn readers_may_look() -> bool {
    // Where the process registered, the reader's `membarrier` stands in for the full fence
    // (see the module docs); the first load of the state is then the one that counts.
    compiler_fence(Ordering::SeqCst);
    let state = STATE.load(Ordering::Relaxed);
    if state & ASYMMETRIC != 0 {
        return state >= READER;
    }
    fence(Ordering::SeqCst);
    STATE.load(Ordering::Relaxed) >= READER
}

/// A reader looking: while it lives, a fiber ending an owned wait takes the record's pin, so
/// a holder read under the pin belongs to a resource that is still borrowed.
pub(crate) struct Looking(());

impl Looking {
    pub(crate) fn enter() -> Looking {
        let before = STATE.fetch_add(READER, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if before & ASYMMETRIC != 0 {
            // Every thread that runs now executes a full barrier before this returns: a fiber
            // whose look at the count came before its barrier ended its wait before it too, and
            // the end is visible to this reader; one whose look came after sees this reader.
            // SAFETY: as in `init`; the process registered for this command.
            let done =
                unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) };
            assert_eq!(done, 0, "membarrier failed after registering");
        }
        Looking(())
    }
}

impl Drop for Looking {
    fn drop(&mut self) {
        STATE.fetch_sub(READER, Ordering::Release);
    }
}
