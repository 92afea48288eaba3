use super::*;
use crate::stack::child;
use crate::stack::{AltStack, GuardMode, PoolConfig, StackPool};
use corosensei::{Coroutine, Yielder};

fn describe_test_fiber(out: &mut dyn FnMut(&[u8])) {
    out(b"'unit' (id ");
    write_decimal(7, out);
    out(b")");
}

fn overflow_a_fiber(guard: GuardMode) {
    install_overflow_handler(describe_test_fiber);
    let _alt = AltStack::ensure();
    let mut pool = StackPool::new(PoolConfig { max_warm: 0, guard });
    let stack = pool.take(64 * 1024).unwrap();
    let mut fiber = Coroutine::with_stack(stack, |_: &Yielder<(), ()>, ()| child::recurse(0));
    fiber.resume(());
    unreachable!("unbounded recursion returned");
}

fn assert_overflow_reported(stderr: &str) {
    assert!(
        stderr.contains(
            "fibra: stack overflow in fiber 'unit' (id 7), stack size 65536 bytes; give it a \
             bigger stack with fibra::Builder::stack_size or FIBRA_STACK_SIZE\n"
        ),
        "stderr:\n{stderr}"
    );
}

#[test]
fn overflow_on_a_madvise_guard_is_reported_and_aborts() {
    if child::in_child() {
        overflow_a_fiber(GuardMode::Madvise);
    }
    let output = child::run(
        module_path!(),
        "overflow_on_a_madvise_guard_is_reported_and_aborts",
    );
    assert_overflow_reported(&child::assert_killed_by(&output, libc::SIGABRT));
}

#[test]
fn overflow_on_an_mprotect_guard_is_reported_and_aborts() {
    if child::in_child() {
        overflow_a_fiber(GuardMode::Mprotect);
    }
    let output = child::run(
        module_path!(),
        "overflow_on_an_mprotect_guard_is_reported_and_aborts",
    );
    assert_overflow_reported(&child::assert_killed_by(&output, libc::SIGABRT));
}

#[test]
fn other_faults_go_to_the_previous_handler() {
    if child::in_child() {
        install_overflow_handler(describe_test_fiber);
        // A pool exists, so the registry is not empty, but the fault is elsewhere.
        let mut pool = StackPool::new(PoolConfig {
            max_warm: 0,
            guard: GuardMode::Auto,
        });
        let _stack = pool.take(64 * 1024).unwrap();
        let page = crate::stack::page_size();
        // SAFETY: a fresh inaccessible page of our own.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED);
        // SAFETY: deliberately faults: the page is ours and PROT_NONE, so the volatile write
        // traps before it can change anything.
        unsafe { std::ptr::write_volatile(addr.cast::<u8>(), 1) };
        unreachable!("writing a PROT_NONE page did not fault");
    }
    let output = child::run(module_path!(), "other_faults_go_to_the_previous_handler");
    let stderr = child::assert_killed_by(&output, libc::SIGSEGV);
    assert!(
        !stderr.contains("stack overflow in fiber"),
        "stderr:\n{stderr}"
    );
}

#[test]
fn the_report_line_truncates_instead_of_overflowing() {
    let mut line = Line::new();
    line.push(b"fibra: ");
    line.push(&[b'x'; 600]);
    line.push(b"lost");
    assert_eq!(line.len, line.bytes.len());
    assert_eq!(&line.bytes[..7], b"fibra: ");
    assert!(line.bytes[7..].iter().all(|&byte| byte == b'x'));
}
