//! A fiber that overflows its stack aborts the process with a message naming it; a fault that
//! is not a fiber overflow still kills the process with plain SIGSEGV. Both run in a child
//! process (this test binary, re-run with one test selected) and are checked from outside.

use fibra_testing::{assert_killed_by, in_child, run_child, runtime};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Recurses without bound: a 1 KiB frame the optimiser can neither drop nor turn into a loop.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth as u8; 1024]);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    recurse(depth + 1) + u64::from(frame[0])
}

#[test]
fn fiber_stack_overflow_aborts_naming_the_fiber() {
    const TEST: &str = "fiber_stack_overflow_aborts_naming_the_fiber";
    if in_child(TEST) {
        let runtime = runtime(1);
        let _outcome = runtime.block_on(|| {
            fibra_runtime::Builder::new()
                .name("deep")
                .stack_size(64 * 1024)
                .spawn(|| recurse(0))
                .unwrap()
                .join()
        });
        unreachable!("the overflowing fiber returned");
    }
    let stderr = assert_killed_by(&run_child(TEST, &[]), libc::SIGABRT);
    assert!(
        stderr.contains("stack overflow in fiber 'deep'"),
        "stderr:\n{stderr}"
    );
    assert!(stderr.contains("stack size"), "stderr:\n{stderr}");
}

#[test]
fn a_non_guard_fault_is_a_plain_sigsegv_not_a_stack_overflow() {
    const TEST: &str = "a_non_guard_fault_is_a_plain_sigsegv_not_a_stack_overflow";
    if in_child(TEST) {
        runtime(1).block_on(fault_outside_guards);
        unreachable!("writing a PROT_NONE page did not fault");
    }
    let stderr = assert_killed_by(&run_child(TEST, &[]), libc::SIGSEGV);
    assert!(
        !stderr.contains("stack overflow in fiber"),
        "stderr:\n{stderr}"
    );
}

/// A SIGBUS ignored before the runtime installed its handler stays ignored when it is sent
/// (the kernel ignores a sent signal whose action is `SIG_IGN`).
#[test]
fn a_sent_signal_that_was_ignored_stays_ignored() {
    const TEST: &str = "a_sent_signal_that_was_ignored_stays_ignored";
    if in_child(TEST) {
        // SAFETY: sets a signal's disposition, before any other thread of this child runs.
        unsafe { libc::signal(libc::SIGBUS, libc::SIG_IGN) };
        let runtime = runtime(1);
        // SAFETY: raise has no preconditions; the signal is delivered before it returns.
        assert_eq!(unsafe { libc::raise(libc::SIGBUS) }, 0);
        runtime.block_on(|| ());
        println!("survived");
        return;
    }
    let output = run_child(TEST, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("survived"),
        "status {:?}, stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes `message` to stderr from a signal handler.
fn handler_says(message: &[u8]) {
    // SAFETY: write(2) of a valid buffer is async-signal-safe.
    unsafe { libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len()) };
}

/// Whether `signal` is blocked on the calling thread.
fn blocked(signal: libc::c_int) -> bool {
    // SAFETY: all-zero is a valid sigset_t, filled in by the query.
    let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new mask only queries; `mask` is valid for writes.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut mask);
        libc::sigismember(&mask, signal) == 1
    }
}

/// Installs `handler` for SIGSEGV with `flags`, blocking SIGUSR2 while it runs.
fn install_previous(handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    // SAFETY: all-zero is a valid sigaction; the fields set make a plain handler, installed
    // before any other thread of the child runs.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as libc::sighandler_t;
        action.sa_flags = flags;
        libc::sigaddset(&mut action.sa_mask, libc::SIGUSR2);
        assert_eq!(
            libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// Writes to a fresh inaccessible page: a SIGSEGV outside any guard.
fn fault_outside_guards() {
    // SAFETY: a fresh inaccessible page of our own.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    // SAFETY: deliberately faults: the page is ours and PROT_NONE, so the volatile write traps
    // before it can change anything.
    unsafe { std::ptr::write_volatile(page.cast::<u8>(), 1) };
}

/// A crash logger installed with `SA_RESETHAND` runs once: the kernel would reset the action
/// as it calls it, so the fault, re-executed, kills the process (rather than calling the
/// logger for ever).
#[test]
fn a_one_shot_previous_handler_runs_once_and_the_fault_then_kills() {
    const TEST: &str = "a_one_shot_previous_handler_runs_once_and_the_fault_then_kills";
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    extern "C" fn one_shot(_: libc::c_int) {
        handler_says(b"one-shot handler\n");
        if CALLS.fetch_add(1, Ordering::SeqCst) == 3 {
            // SAFETY: _exit is async-signal-safe; it ends a child that would loop for ever.
            unsafe { libc::_exit(42) };
        }
    }
    if in_child(TEST) {
        install_previous(one_shot, libc::SA_RESETHAND);
        drop(runtime(1));
        fault_outside_guards();
        unreachable!("writing a PROT_NONE page did not fault");
    }
    let stderr = assert_killed_by(&run_child(TEST, &[]), libc::SIGSEGV);
    assert_eq!(stderr.matches("one-shot handler").count(), 1, "{stderr}");
}

extern "C" fn report_mask(_: libc::c_int) {
    handler_says(match (blocked(libc::SIGUSR2), blocked(libc::SIGSEGV)) {
        (true, true) => b"mask: usr2 segv\n",
        (true, false) => b"mask: usr2\n",
        (false, true) => b"mask: segv\n",
        (false, false) => b"mask: none\n",
    });
    // SAFETY: _exit is async-signal-safe; the fault would otherwise recur.
    unsafe { libc::_exit(7) };
}

/// Test `test`: a previous handler installed with `flags` (and SIGUSR2 in its `sa_mask`) runs
/// with the mask the kernel would give it, which `report_mask` shows as `expected`.
fn a_previous_handler_runs_with(test: &str, flags: libc::c_int, expected: &str) {
    if in_child(test) {
        install_previous(report_mask, flags);
        drop(runtime(1));
        fault_outside_guards();
        unreachable!("writing a PROT_NONE page did not fault");
    }
    let output = run_child(test, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
}

/// A previous handler runs with its own `sa_mask` blocked, and the signal too.
#[test]
fn a_previous_handler_runs_with_its_mask_and_the_signal_blocked() {
    a_previous_handler_runs_with(
        "a_previous_handler_runs_with_its_mask_and_the_signal_blocked",
        0,
        "mask: usr2 segv\n",
    );
}

/// A previous handler installed with `SA_NODEFER` runs with the signal not blocked.
#[test]
fn a_previous_handler_with_nodefer_runs_with_the_signal_unblocked() {
    a_previous_handler_runs_with(
        "a_previous_handler_with_nodefer_runs_with_the_signal_unblocked",
        libc::SA_NODEFER,
        "mask: usr2\n",
    );
}
