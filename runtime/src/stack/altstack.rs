//! Per-thread alternate signal stacks, without which the overflow handler has nowhere to run.

use super::guard::{Guard, GuardMode};
use super::sys::{self, page_size};
use std::mem;
use std::ptr;

/// Usable size of an alternate stack we make: far above `SIGSTKSZ` and the kernel's
/// `AT_MINSIGSTKSZ` (a few KiB even with AVX-512 state), leaving room for the `describe`
/// callback. Untouched pages cost nothing.
const ALT_STACK_SIZE: usize = 64 * 1024;

/// Guarantees the calling thread an alternate signal stack while it lives.
///
/// std already gives the main thread and threads it spawns one; only when `sigaltstack` reports
/// none does this install its own, and only then does dropping it remove and unmap it. It stays
/// on its thread (`!Send`): an alternate stack belongs to one thread.
#[derive(Debug)]
pub(crate) struct AltStack(Option<Own>);

#[derive(Debug)]
struct Own {
    mapping: usize,
    len: usize,
    /// What we passed as `ss_sp`; also keeps `AltStack` `!Send`.
    stack: *mut libc::c_void,
}

impl AltStack {
    /// Ensures the calling thread has an alternate signal stack. If it has none and one cannot
    /// be made, a fiber overflow on this thread ends in a plain SIGSEGV instead of the report.
    pub(crate) fn ensure() -> AltStack {
        let current = current();
        if current.ss_flags & libc::SS_DISABLE == 0 {
            return AltStack(None);
        }
        AltStack(install())
    }
}

fn current() -> libc::stack_t {
    // SAFETY: all-zero is a valid stack_t.
    let mut current: libc::stack_t = unsafe { mem::zeroed() };
    // SAFETY: a null new stack only queries; `current` is valid for writes.
    let rc = unsafe { libc::sigaltstack(ptr::null(), &mut current) };
    assert_eq!(rc, 0, "sigaltstack query failed");
    current
}

fn install() -> Option<Own> {
    let guard = page_size();
    let size = ALT_STACK_SIZE.max(libc::SIGSTKSZ).next_multiple_of(guard);
    let len = guard + size;
    let mapping = sys::map_stack_memory(len).ok()?;
    let own = Own {
        mapping,
        len,
        stack: (mapping + guard) as *mut libc::c_void,
    };
    let stack = libc::stack_t {
        ss_sp: own.stack,
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: the lowest page of our fresh mapping, which nothing references.
    let guarded = unsafe { Guard::resolve(GuardMode::Auto).install(mapping, guard) };
    // SAFETY: `stack` describes `size` bytes of our mapping, which stays mapped until `own` is
    // dropped, and drop removes it from the thread first.
    if guarded.is_err() || unsafe { libc::sigaltstack(&stack, ptr::null_mut()) } != 0 {
        // SAFETY: never handed to the kernel as a signal stack, so nothing uses it.
        let unmapped = unsafe { sys::unmap(mapping, len) };
        debug_assert!(
            unmapped.is_ok(),
            "unmapping an unused alternate stack: {unmapped:?}"
        );
        return None;
    }
    Some(own)
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let Some(own) = &self.0 else {
            return;
        };
        if current().ss_sp == own.stack {
            let disable = libc::stack_t {
                ss_sp: ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            // SAFETY: disabling takes no memory; the kernel refuses (EPERM) while a handler
            // runs on the stack.
            if unsafe { libc::sigaltstack(&disable, ptr::null_mut()) } != 0 {
                // Still in use: leaking it is the only sound choice.
                return;
            }
        }
        // SAFETY: the thread no longer uses our mapping as its signal stack (disabled above, or
        // replaced by someone else's), so nothing runs on it.
        let unmapped = unsafe { sys::unmap(own.mapping, own.len) };
        debug_assert!(
            unmapped.is_ok(),
            "unmapping an alternate stack: {unmapped:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::child;
    use std::thread;

    fn is_mapped(addr: usize) -> bool {
        // SAFETY: msync only inspects the range; ENOMEM means it is not mapped.
        unsafe { libc::msync(addr as *mut libc::c_void, page_size(), libc::MS_ASYNC) == 0 }
    }

    #[test]
    fn keeps_an_existing_alternate_stack() {
        thread::spawn(|| {
            let before = current();
            assert_eq!(
                before.ss_flags & libc::SS_DISABLE,
                0,
                "std gives threads one"
            );
            drop(AltStack::ensure());
            let after = current();
            assert_eq!((after.ss_sp, after.ss_size), (before.ss_sp, before.ss_size));
            assert_eq!(after.ss_flags & libc::SS_DISABLE, 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn installs_and_removes_one_when_missing() {
        // In a child: once unmapped, the range could be mapped again by a parallel test.
        if !child::in_child() {
            let output = child::run(module_path!(), "installs_and_removes_one_when_missing");
            return child::assert_passed(&output);
        }
        thread::spawn(|| {
            let std_stack = current();
            let disable = libc::stack_t {
                ss_sp: ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            // SAFETY: disabling takes no memory; std's stack stays mapped and is restored below.
            assert_eq!(unsafe { libc::sigaltstack(&disable, ptr::null_mut()) }, 0);

            let alt = AltStack::ensure();
            let installed = current();
            assert_eq!(installed.ss_flags & libc::SS_DISABLE, 0);
            assert!(installed.ss_size >= ALT_STACK_SIZE);
            let addr = installed.ss_sp as usize;
            assert!(is_mapped(addr));

            drop(alt);
            assert_ne!(current().ss_flags & libc::SS_DISABLE, 0);
            assert!(!is_mapped(addr));

            // SAFETY: std's own stack, still mapped, as it was before the test.
            assert_eq!(unsafe { libc::sigaltstack(&std_stack, ptr::null_mut()) }, 0);
        })
        .join()
        .unwrap();
    }
}
