//! Guard regions: which mechanism makes the bytes below a stack fault, and applying it.

use super::sys::{self, page_size, MADV_GUARD_INSTALL};
use std::io;
use std::sync::OnceLock;

/// How a pool makes the guard region below each stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardMode {
    /// `Madvise` where the kernel supports it (probed once per process), else `Mprotect`.
    Auto,
    /// `madvise(MADV_GUARD_INSTALL)`: a guard costs no kernel mapping. Needs Linux 6.13+;
    /// elsewhere taking a stack fails with `StackError::Guard`.
    Madvise,
    /// `mprotect(PROT_NONE)`: works on every kernel, but each guarded stack costs two mappings
    /// of the process's `vm.max_map_count`.
    Mprotect,
}

/// The mechanism a pool actually uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Guard {
    /// Guard markers installed with `MADV_GUARD_INSTALL`.
    Madvise,
    /// `PROT_NONE` pages.
    Mprotect,
}

impl Guard {
    /// Resolves `mode`, probing the kernel for `Auto`.
    pub(super) fn resolve(mode: GuardMode) -> Guard {
        match mode {
            GuardMode::Auto if madvise_supported() => Guard::Madvise,
            GuardMode::Auto | GuardMode::Mprotect => Guard::Mprotect,
            GuardMode::Madvise => Guard::Madvise,
        }
    }

    /// Whether each guard splits its mapping, and so counts against `vm.max_map_count`.
    pub(super) fn costs_mappings(self) -> bool {
        self == Guard::Mprotect
    }

    /// Makes `[addr, addr + len)` fault on any access.
    ///
    /// # Safety
    ///
    /// The range must be page aligned and inside a mapping from [`sys::map_stack_memory`], and
    /// nothing may reference memory in it (its contents are lost).
    pub(super) unsafe fn install(self, addr: usize, len: usize) -> io::Result<()> {
        match self {
            // SAFETY: the caller's contract is exactly `advise`'s.
            Guard::Madvise => unsafe { sys::advise(addr, len, MADV_GUARD_INSTALL) },
            // SAFETY: the caller's contract is exactly `protect`'s.
            Guard::Mprotect => unsafe { sys::protect(addr, len, libc::PROT_NONE) },
        }
    }

    /// [`Guard::install`] on every range of `ranges`, each `(addr, len)`: for `madvise` guards
    /// in one system call where the kernel allows it.
    ///
    /// # Safety
    ///
    /// As for [`Guard::install`], for every range.
    pub(super) unsafe fn install_all(self, ranges: &[(usize, usize)]) -> io::Result<()> {
        match self {
            // SAFETY: the caller's contract is exactly `advise_all`'s.
            Guard::Madvise => unsafe { sys::advise_all(ranges, MADV_GUARD_INSTALL) },
            Guard::Mprotect => ranges.iter().try_for_each(|&(addr, len)| {
                // SAFETY: the caller's contract covers every range.
                unsafe { self.install(addr, len) }
            }),
        }
    }

    /// Called when the stack above the guard at `[addr, addr + len)` goes cold.
    ///
    /// `mprotect` guards are lifted so the slot's mappings merge back and a cold stack costs no
    /// map count; [`Guard::reinstall`] puts the guard back before the stack is used again.
    /// `madvise` guards cost nothing and stay.
    ///
    /// # Safety
    ///
    /// The range must be a guard installed with [`Guard::install`] by this same mechanism.
    pub(super) unsafe fn lift_for_cold(self, addr: usize, len: usize) -> io::Result<()> {
        match self {
            Guard::Madvise => Ok(()),
            // SAFETY: the range is a guard of one of our mappings, so nothing references it and
            // making it accessible again cannot break anybody's assumptions.
            Guard::Mprotect => unsafe {
                sys::protect(addr, len, libc::PROT_READ | libc::PROT_WRITE)
            },
        }
    }

    /// Undoes [`Guard::lift_for_cold`] before a cold stack is handed out again.
    ///
    /// # Safety
    ///
    /// As for [`Guard::install`].
    pub(super) unsafe fn reinstall(self, addr: usize, len: usize) -> io::Result<()> {
        match self {
            Guard::Madvise => Ok(()),
            // SAFETY: the caller's contract is exactly `install`'s.
            Guard::Mprotect => unsafe { self.install(addr, len) },
        }
    }
}

/// Whether this kernel supports `MADV_GUARD_INSTALL`; probed once per process.
pub(super) fn madvise_supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(probe_madvise)
}

fn probe_madvise() -> bool {
    let page = page_size();
    let Ok(addr) = sys::map_stack_memory(page) else {
        return false;
    };
    // SAFETY: a fresh page of our own that nothing references.
    let supported = unsafe { sys::advise(addr, page, MADV_GUARD_INSTALL) }.is_ok();
    // SAFETY: the probe page is ours and is not used again.
    let unmapped = unsafe { sys::unmap(addr, page) };
    debug_assert!(
        unmapped.is_ok(),
        "unmapping the guard probe page: {unmapped:?}"
    );
    supported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_madvise_exactly_when_supported() {
        let expected = if madvise_supported() {
            Guard::Madvise
        } else {
            Guard::Mprotect
        };
        assert_eq!(Guard::resolve(GuardMode::Auto), expected);
        assert_eq!(Guard::resolve(GuardMode::Mprotect), Guard::Mprotect);
        assert_eq!(Guard::resolve(GuardMode::Madvise), Guard::Madvise);
    }
}
