//! Checked wrappers over the memory syscalls the stack code needs.

use std::io;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// `madvise` advice installing lightweight guard markers (Linux 6.13); libc does not define it yet.
pub(super) const MADV_GUARD_INSTALL: libc::c_int = 102;

/// The pidfd by which `process_madvise` names the calling process (Linux 6.15); libc does not
/// define it yet.
const PIDFD_SELF: libc::c_int = -10_000;

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
/// reference memory in it: the advices used here (`MADV_FREE`, `MADV_DONTNEED`,
/// `MADV_GUARD_INSTALL`) discard its contents.
pub(super) unsafe fn advise(addr: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: the caller guarantees the range is ours and that losing its contents is fine.
    check(unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) })
}

/// Gives the memory of `ranges` (each `(addr, len)`) back to the kernel lazily, in as few
/// system calls as [`advise_all`] can.
///
/// The advice is `MADV_FREE`: the kernel reclaims the pages only under memory pressure, and a
/// page written again before that is reused without a fault (`MADV_DONTNEED` where `MADV_FREE`
/// is refused).
///
/// # Safety
///
/// Every range must be page aligned and inside a mapping from [`map_stack_memory`], and nothing
/// may reference memory in any of them: afterwards each page reads as its old contents or as
/// zeroes, at the kernel's choice.
pub(super) unsafe fn discard(ranges: &[(usize, usize)]) -> io::Result<()> {
    // SAFETY: the caller's contract, for advices that discard contents.
    unsafe { advise_all(ranges, libc::MADV_FREE) }
        // SAFETY: as above.
        .or_else(|_| unsafe { advise_all(ranges, libc::MADV_DONTNEED) })
}

/// Whether `process_madvise` may still be tried: false once the kernel refused it.
static BATCHED: AtomicBool = AtomicBool::new(true);

/// Most ranges one `process_madvise` call takes (the kernel's `UIO_MAXIOV`; a call with more
/// fails as a whole).
const MAX_RANGES_PER_CALL: usize = 1024;

/// [`advise`] on every range of `ranges` (each `(addr, len)`), in one `process_madvise` call
/// per [`MAX_RANGES_PER_CALL`] where the kernel takes one from a process for itself (Linux
/// 6.15+): one system call, and for advices that drop pages one TLB shootdown, for many
/// ranges rather than one per range. Elsewhere one `madvise` per range.
///
/// # Safety
///
/// As for [`advise`], for every range.
pub(super) unsafe fn advise_all(ranges: &[(usize, usize)], advice: libc::c_int) -> io::Result<()> {
    ranges
        .chunks(MAX_RANGES_PER_CALL)
        // SAFETY: the caller's contract covers every range of every chunk.
        .try_for_each(|chunk| unsafe { advise_some(chunk, advice) })
}

/// [`advise_all`] for at most [`MAX_RANGES_PER_CALL`] ranges.
///
/// # Safety
///
/// As for [`advise`], for every range.
unsafe fn advise_some(ranges: &[(usize, usize)], advice: libc::c_int) -> io::Result<()> {
    let mut done = 0;
    if ranges.len() > 1 && BATCHED.load(Ordering::Relaxed) {
        let iovecs: Vec<libc::iovec> = ranges
            .iter()
            .map(|&(addr, len)| libc::iovec {
                iov_base: addr as *mut libc::c_void,
                iov_len: len,
            })
            .collect();
        // SAFETY: the iovecs are valid for reads of their count, and every range they name
        // meets `advise`'s contract (the caller's).
        let advised = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                PIDFD_SELF,
                iovecs.as_ptr(),
                iovecs.len(),
                advice,
                0,
            )
        };
        match usize::try_from(advised) {
            // A short count leaves the range it stopped in, and those after it, to the
            // fallback; the advices used here may be given twice.
            Ok(mut bytes) => {
                while done < ranges.len() && bytes >= ranges[done].1 {
                    bytes -= ranges[done].1;
                    done += 1;
                }
            }
            // An older kernel (no `PIDFD_SELF`, or `process_madvise` limited to a few advices)
            // or a filter refusing the call: it stays refused for the whole process.
            Err(_) => BATCHED.store(false, Ordering::Relaxed),
        }
    }
    ranges[done..].iter().try_for_each(|&(addr, len)| {
        // SAFETY: the caller's contract covers every range.
        unsafe { advise(addr, len, advice) }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_ranges_than_one_call_takes_are_advised_in_several_calls() {
        let page = page_size();
        let pages = MAX_RANGES_PER_CALL + 100;
        let addr = map_stack_memory(pages * page).unwrap();
        // Every other page: ranges the kernel cannot merge.
        let ranges: Vec<(usize, usize)> = (0..pages / 2)
            .map(|i| (addr + 2 * i * page, page))
            .collect();
        let batched_before = BATCHED.load(Ordering::Relaxed);
        // SAFETY: pages of a fresh mapping of our own that nothing references.
        unsafe { advise_all(&ranges, libc::MADV_FREE) }.unwrap();
        let all: Vec<(usize, usize)> = (0..pages).map(|i| (addr + i * page, page)).collect();
        // SAFETY: as above.
        unsafe { advise_all(&all, libc::MADV_FREE) }.unwrap();
        assert_eq!(
            BATCHED.load(Ordering::Relaxed),
            batched_before,
            "a long list must not make the kernel refuse batching for good"
        );
        // SAFETY: our mapping, no longer used.
        unsafe { unmap(addr, pages * page) }.unwrap();
    }
}
