//! Checked wrappers over the memory syscalls the stack code needs.

use std::io;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `madvise` advice installing lightweight guard markers (Linux 6.13); libc does not define it yet.
pub(super) const MADV_GUARD_INSTALL: libc::c_int = 102;

/// The system page size.
pub(crate) fn page_size() -> usize {
    static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
    match PAGE_SIZE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let raw = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let size = usize::try_from(raw)
                .ok()
                .filter(|size| size.is_power_of_two())
                .expect("sysconf(_SC_PAGESIZE) reported no page size");
            PAGE_SIZE.store(size, Ordering::Relaxed);
            size
        }
        size => size,
    }
}

/// Reserves `len` bytes of zeroed read-write memory for stacks and returns its address.
///
/// `MAP_NORESERVE` lets the kernel commit pages only when touched, so reserving thousands of
/// stacks costs address space, not memory. `MAP_STACK` keeps transparent huge pages off (Linux
/// 6.7+), which would otherwise back a barely used stack with 2 MiB of memory.
pub(super) fn map_stack_memory(len: usize) -> io::Result<usize> {
    // SAFETY: a fresh anonymous mapping at an address the kernel chooses cannot alias memory
    // that anything else uses.
    let addr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(addr as usize)
    }
}

/// Unmaps `[addr, addr + len)`.
///
/// # Safety
///
/// The range must have come from [`map_stack_memory`], and nothing may use memory in it again.
pub(super) unsafe fn unmap(addr: usize, len: usize) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is ours and unused.
    check(unsafe { libc::munmap(addr as *mut libc::c_void, len) })
}

/// Applies `madvise` `advice` to `[addr, addr + len)`.
///
/// # Safety
///
/// The range must be page aligned and inside a mapping from [`map_stack_memory`], and nothing may
/// reference memory in it: the advices used here (`MADV_DONTNEED`, `MADV_GUARD_INSTALL`) discard
/// its contents.
pub(super) unsafe fn advise(addr: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is ours and that losing its contents is fine.
    check(unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) })
}

/// Changes the protection of `[addr, addr + len)` to `prot`.
///
/// # Safety
///
/// The range must be page aligned and inside a mapping from [`map_stack_memory`], and nothing may
/// access memory in it that `prot` no longer allows.
pub(super) unsafe fn protect(addr: usize, len: usize, prot: libc::c_int) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is ours and that nothing relies on its old access.
    check(unsafe { libc::mprotect(addr as *mut libc::c_void, len, prot) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
