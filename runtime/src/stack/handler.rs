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

/// Hands the signal to the action that was installed before ours, as the kernel would have.
fn chain(
    previous: &libc::sigaction,
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
    code: libc::c_int,
) {
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        default_action(signal, code);
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
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
}

/// Restores the default action, so the fault re-executes and kills the process with `signal`.
fn default_action(signal: libc::c_int, code: libc::c_int) {
    // SAFETY: all-zero is a valid sigaction meaning SIG_DFL.
    let action: libc::sigaction = unsafe { mem::zeroed() };
    // SAFETY: `action` is fully initialised; sigaction is async-signal-safe.
    unsafe { libc::sigaction(signal, &action, ptr::null_mut()) };
    if code <= 0 {
        // A sent signal does not recur when the handler returns; raise it again (it is blocked
        // until we return, then delivered with the default action).
        // SAFETY: raise is async-signal-safe and has no preconditions.
        unsafe { libc::raise(signal) };
    }
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
