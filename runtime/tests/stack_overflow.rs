//! A fiber that overflows its stack aborts the process with a message naming it; a fault that
//! is not a fiber overflow still kills the process with plain SIGSEGV. Both run in a child
//! process (this test binary, re-run with one test selected) and are checked from outside.

use fibra_testing::{assert_killed_by, in_child, run_child, runtime};
use std::hint::black_box;

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
        let runtime = runtime(1);
        runtime.block_on(|| {
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
            // SAFETY: deliberately faults: the page is ours and PROT_NONE, so the volatile
            // write traps before it can change anything.
            unsafe { std::ptr::write_volatile(page.cast::<u8>(), 1) };
        });
        unreachable!("writing a PROT_NONE page did not fault");
    }
    let stderr = assert_killed_by(&run_child(TEST, &[]), libc::SIGSEGV);
    assert!(
        !stderr.contains("stack overflow in fiber"),
        "stderr:\n{stderr}"
    );
}
