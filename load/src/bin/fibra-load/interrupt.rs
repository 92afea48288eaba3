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
    /// Counts SIGINTs from now on, from zero; none if the process ignores SIGINT (started in
    /// the background by a shell without job control, say), which it then goes on doing.
    pub(crate) fn install() -> Interrupts {
        COUNT.store(0, Ordering::Relaxed);
        let previous = disposition(None);
        if previous.sa_sigaction != libc::SIG_IGN {
            // SAFETY: all-zero is a valid sigaction (SIG_DFL, no flags, empty mask).
            let mut action: libc::sigaction = unsafe { mem::zeroed() };
            action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // Interrupted system calls of the runtime's threads resume rather than fail.
            action.sa_flags = libc::SA_RESTART;
            disposition(Some(&action));
        }
        Interrupts { previous }
    }

    /// How many SIGINTs came since [`install`](Self::install).
    pub(crate) fn count() -> usize {
        COUNT.load(Ordering::Relaxed)
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        disposition(Some(&self.previous));
    }
}

/// SIGINT's disposition before the call, replaced by `new` if given.
fn disposition(new: Option<&libc::sigaction>) -> libc::sigaction {
    // SAFETY: all-zero is a valid sigaction, for the old disposition to be written into.
    let mut old: libc::sigaction = unsafe { mem::zeroed() };
    let new = new.map_or(ptr::null(), |new| new as *const libc::sigaction);
    // SAFETY: `new` is null or points at a valid sigaction (a disposition `sigaction` gave
    // back, or one whose handler, `on_interrupt`, only touches an atomic, which is
    // async-signal-safe); `old` is valid for writes.
    let rc = unsafe { libc::sigaction(libc::SIGINT, new, &mut old) };
    assert_eq!(rc, 0, "sigaction(SIGINT) failed");
    old
}

extern "C" fn on_interrupt(_: libc::c_int) {
    COUNT.fetch_add(1, Ordering::Relaxed);
}
