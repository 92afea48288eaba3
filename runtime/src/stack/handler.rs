//! The SIGSEGV/SIGBUS handler: a fault inside a fiber guard region aborts the process with a
//! one-line report; every other fault goes to the handler that was installed before ours.
//!
//! Everything reachable from the handler is async-signal-safe: atomics, `write(2)`, `abort`.

use super::decimal::write_decimal;
use super::registry;
use std::io;
use std::mem;
use std::ptr;
use std::sync::{Once, OnceLock};

/// Emits a description of the fiber running on the current thread.
type Describe = fn(&mut dyn FnMut(&[u8]));

const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Longest fiber description kept, so the fixed parts of the report always fit in [`Line`].
const DESCRIBE_MAX: usize = 256;

struct Installed {
    describe: Describe,
    /// The actions that were in place for [`SIGNALS`] before ours.
    previous: [libc::sigaction; 2],
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// Installs, once per process, the SIGSEGV and SIGBUS handler (`SA_SIGINFO | SA_ONSTACK`) that
/// recognises fiber guard regions. A guard hit writes
/// `fibra: stack overflow in fiber <describe>, stack size N bytes; ...` to stderr and aborts;
/// any other fault is passed to the previous handler.
///
/// Later calls do nothing, so the `describe` of the first call is the one used. `describe` runs
/// inside the signal handler and must be async-signal-safe (no allocation, no locks).
pub(crate) fn install_overflow_handler(describe: Describe) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let installed = Installed {
            describe,
            previous: SIGNALS.map(current_action),
        };
        // Set before our handler can run, so it always finds what to chain to.
        if INSTALLED.set(installed).is_ok() {
            for signal in SIGNALS {
                set_handler(signal);
            }
        }
    });
}

fn current_action(signal: libc::c_int) -> libc::sigaction {
    // SAFETY: all-zero is a valid sigaction (SIG_DFL, no flags, empty mask).
    let mut action: libc::sigaction = unsafe { mem::zeroed() };
    // SAFETY: a null new action only queries; `action` is valid for writes.
    let rc = unsafe { libc::sigaction(signal, ptr::null(), &mut action) };
    assert_eq!(rc, 0, "sigaction({signal}) query failed");
    action
}

fn set_handler(signal: libc::c_int) {
    // SAFETY: all-zero is a valid sigaction (SIG_DFL, no flags, empty mask).
    let mut action: libc::sigaction = unsafe { mem::zeroed() };
    action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
    // SA_ONSTACK: an overflowing fiber has no stack left to run the handler on.
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // Block both signals while handling either, so a fault inside the handler kills the process
    // with the default action instead of re-entering it.
    for blocked in SIGNALS {
        // SAFETY: `sa_mask` is a valid, initialised sigset_t.
        unsafe { libc::sigaddset(&mut action.sa_mask, blocked) };
    }
    // SAFETY: `action` is fully initialised and `on_fault` has the SA_SIGINFO signature.
    let rc = unsafe { libc::sigaction(signal, &action, ptr::null_mut()) };
    assert_eq!(rc, 0, "sigaction({signal}) install failed");
}

extern "C" fn on_fault(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes SA_SIGINFO handlers a valid siginfo; for SIGSEGV and SIGBUS the
    // fault address is the active union member.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let Some(installed) = INSTALLED.get() else {
        return default_action(signal, code);
    };
    // A positive code means the kernel raised it for a fault; kill(2) and friends carry no
    // meaningful address.
    if code > 0 {
        if let Some(usable) = registry::guard_hit(addr) {
            report_overflow(installed.describe, usable);
        }
    }
    let previous = if signal == SIGNALS[0] {
        &installed.previous[0]
    } else {
        &installed.previous[1]
    };
    chain(previous, signal, info, context, code);
}

fn report_overflow(describe: Describe, usable: usize) -> ! {
    let mut line = Line::new();
    line.push(b"fibra: stack overflow in fiber ");
    let mut room = DESCRIBE_MAX;
    describe(&mut |bytes| {
        let kept = &bytes[..bytes.len().min(room)];
        room -= kept.len();
        line.push(kept);
    });
    line.push(b", stack size ");
    write_decimal(usable as u64, &mut |digits| line.push(digits));
    line.push(
        b" bytes; give it a bigger stack with fibra::Builder::stack_size or FIBRA_STACK_SIZE\n",
    );
    line.write_to_stderr();
    // SAFETY: abort has no preconditions and is async-signal-safe.
    unsafe { libc::abort() }
}

/// Hands the signal to the action that was installed before ours, as the kernel would have:
/// ignored if it was sent and ignored, the default action for `SIG_DFL` (and for an ignored
/// fault, which the kernel does not let a thread ignore), else its handler, run as the kernel
/// runs it: reset to `SIG_DFL` first under `SA_RESETHAND`, with its `sa_mask` blocked and the
/// signal itself too unless `SA_NODEFER`.
fn chain(
    previous: &libc::sigaction,
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
    code: libc::c_int,
) {
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_IGN && code <= 0 {
        return;
    }
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        return default_action(signal, code);
    }
    if previous.sa_flags & libc::SA_RESETHAND != 0 {
        set_default(signal);
    }
    let masked = HandlerMask::enter(previous, signal, context);
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO, `sa_sigaction` is a three-argument handler installed by
        // whoever owned the signal before us, and we pass it what the kernel passed us.
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { mem::transmute(handler) };
        handler(signal, info, context);
    } else {
        // SAFETY: without SA_SIGINFO, `sa_sigaction` is a one-argument handler (not SIG_DFL or
        // SIG_IGN, checked above).
        let handler: extern "C" fn(libc::c_int) = unsafe { mem::transmute(handler) };
        handler(signal);
    }
    drop(masked);
}

/// The signal mask a previous handler runs with, put back on drop: the interrupted code's
/// (ours adds SIGSEGV and SIGBUS), its own `sa_mask` and, unless `SA_NODEFER`, the signal,
/// as the kernel would have set it.
struct HandlerMask {
    saved: libc::sigset_t,
}

impl HandlerMask {
    fn enter(
        previous: &libc::sigaction,
        signal: libc::c_int,
        context: *mut libc::c_void,
    ) -> HandlerMask {
        // SAFETY: all-zero is a valid (empty) sigset_t, filled in below before use.
        let mut saved: libc::sigset_t = unsafe { mem::zeroed() };
        // SAFETY: for an SA_SIGINFO handler the kernel passes a valid `ucontext_t` whose
        // `uc_sigmask` is the mask of the interrupted code.
        let mut mask = unsafe { (*context.cast::<libc::ucontext_t>()).uc_sigmask };
        // SAFETY: `mask`, `saved` and `previous.sa_mask` are valid sigset_t values;
        // pthread_sigmask and the sigset functions are async-signal-safe.
        unsafe {
            // Linux numbers its signals 1 to 64.
            for blocked in 1..=64 {
                if libc::sigismember(&previous.sa_mask, blocked) == 1 {
                    libc::sigaddset(&mut mask, blocked);
                }
            }
            if previous.sa_flags & libc::SA_NODEFER == 0 {
                libc::sigaddset(&mut mask, signal);
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &mask, &mut saved);
        }
        HandlerMask { saved }
    }
}

impl Drop for HandlerMask {
    fn drop(&mut self) {
        // SAFETY: `saved` is the mask read in `enter`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.saved, ptr::null_mut()) };
    }
}

/// Restores the default action, so the fault re-executes and kills the process with `signal`.
fn default_action(signal: libc::c_int, code: libc::c_int) {
    set_default(signal);
    if code <= 0 {
        // A sent signal does not recur when the handler returns; raise it again (it is blocked
        // until we return, then delivered with the default action).
        // SAFETY: raise is async-signal-safe and has no preconditions.
        unsafe { libc::raise(signal) };
    }
}

/// Makes `SIG_DFL` the action for `signal`.
fn set_default(signal: libc::c_int) {
    // SAFETY: all-zero is a valid sigaction meaning SIG_DFL.
    let action: libc::sigaction = unsafe { mem::zeroed() };
    // SAFETY: `action` is fully initialised; sigaction is async-signal-safe.
    unsafe { libc::sigaction(signal, &action, ptr::null_mut()) };
}

/// A fixed buffer for the report, written with a single `write(2)` so that reports from two
/// threads do not interleave.
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            bytes: [0; 512],
            len: 0,
        }
    }

    /// Appends as much of `bytes` as fits.
    fn push(&mut self, bytes: &[u8]) {
        let kept = bytes.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + kept].copy_from_slice(&bytes[..kept]);
        self.len += kept;
    }

    fn write_to_stderr(&self) {
        let mut rest = &self.bytes[..self.len];
        while !rest.is_empty() {
            // SAFETY: `rest` is valid for reads of its length.
            let written =
                unsafe { libc::write(libc::STDERR_FILENO, rest.as_ptr().cast(), rest.len()) };
            match usize::try_from(written) {
                Ok(0) => return,
                Ok(written) => rest = &rest[written..],
                Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests;
