//! Ctrl-C during a run: SIGINT is counted while the run lasts, and has the disposition it had
//! before once the run ends (a handler left installed would swallow every later Ctrl-C).

use std::mem;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// SIGINTs since the last [`Interrupts::install`].
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// SIGINT counted instead of ending the process, from [`Interrupts::install`] until dropped.
pub(crate) struct Interrupts {
    previous: libc::sigaction,
}

impl Interrupts {
    /// Counts SIGINTs from now on, from zero.
    pub(crate) fn install() -> Interrupts {
        COUNT.store(0, Ordering::Relaxed);
        // SAFETY: all-zero is a valid sigaction (SIG_DFL, no flags, empty mask).
        let mut action: libc::sigaction = unsafe { mem::zeroed() };
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Interrupted system calls of the runtime's threads resume rather than fail.
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: as above, for the old disposition to be written into.
        let mut previous: libc::sigaction = unsafe { mem::zeroed() };
        // SAFETY: both point at valid sigactions; `on_interrupt` only touches an atomic, which
        // is async-signal-safe.
        let rc = unsafe { libc::sigaction(libc::SIGINT, &action, &mut previous) };
        assert_eq!(rc, 0, "sigaction(SIGINT) failed");
        Interrupts { previous }
    }

    /// How many SIGINTs came since [`install`](Self::install).
    pub(crate) fn count() -> usize {
        COUNT.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        // SAFETY: `previous` is the disposition `sigaction` gave back when this was installed.
        let rc = unsafe { libc::sigaction(libc::SIGINT, &self.previous, ptr::null_mut()) };
        assert_eq!(rc, 0, "restoring SIGINT's disposition failed");
    }
}

extern "C" fn on_interrupt(_: libc::c_int) {
    COUNT.fetch_add(1, Ordering::Relaxed);
}
