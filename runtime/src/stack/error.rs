//! Why a stack could not be had, phrased so that the reader knows what to change.

use std::fmt;
use std::io;

/// Failure to admit or create a fiber stack.
#[derive(Debug)]
pub(crate) enum StackError {
    /// Another `mprotect`-guarded stack would push the process past `vm.max_map_count`.
    MapCount {
        /// The kernel's `vm.max_map_count`.
        limit: usize,
        /// Stacks that fit under it, with headroom left for the rest of the program.
        stacks: usize,
    },
    /// Another stack would exceed the bound on live stacks that keeps reservations inside the
    /// address space.
    AddressSpace {
        /// The bound.
        stacks: usize,
    },
    /// The requested size cannot be represented once rounded up and given a guard.
    TooLarge {
        /// The requested size in bytes.
        size: usize,
    },
    /// Reserving stack memory failed.
    Mmap(io::Error),
    /// Installing a guard region failed.
    Guard(io::Error),
    /// None was asked for: the fiber was cancelled before it started (its scope, its
    /// `abort`, or the runtime's shutdown), and is dropped unstarted.
    Cancelled,
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StackError::MapCount { limit, stacks } => write!(
                f,
                "cannot create another fiber stack: {stacks} live stacks with mprotect guard pages \
                 (2 memory mappings each) would exceed vm.max_map_count={limit}; raise it with \
                 `sysctl -w vm.max_map_count={}`, or run on Linux 6.13+ where guards cost no mapping",
                limit.saturating_mul(2)
            ),
            StackError::AddressSpace { stacks } => write!(
                f,
                "cannot create another fiber stack: {stacks} live fiber stacks is the most fibra \
                 reserves address space for; let fibers finish before spawning more"
            ),
            StackError::Cancelled => {
                f.write_str("the fiber was cancelled before it started")
            }
            StackError::TooLarge { size } => {
                write!(f, "fiber stack size of {size} bytes is too large")
            }
            StackError::Mmap(error) => write!(
                f,
                "reserving fiber stack memory failed: {error}; check `ulimit -v` and \
                 vm.overcommit_memory, or use smaller stacks (fibra::Builder::stack_size or \
                 FIBRA_STACK_SIZE)"
            ),
            StackError::Guard(error) => {
                write!(f, "installing a fiber stack guard failed: {error}")?;
                match error.raw_os_error() {
                    Some(libc::ENOMEM) => write!(
                        f,
                        "; the process may be at vm.max_map_count, raise it with \
                         `sysctl -w vm.max_map_count=N`"
                    ),
                    Some(libc::EINVAL) => write!(
                        f,
                        "; GuardMode::Madvise needs Linux 6.13+ (MADV_GUARD_INSTALL), use \
                         GuardMode::Auto"
                    ),
                    _ => Ok(()),
                }
            }
        }
    }
}

impl std::error::Error for StackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StackError::Mmap(error) | StackError::Guard(error) => Some(error),
            StackError::MapCount { .. }
            | StackError::AddressSpace { .. }
            | StackError::TooLarge { .. }
            | StackError::Cancelled => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_errors_say_what_to_change() {
        let enomem = StackError::Guard(io::Error::from_raw_os_error(libc::ENOMEM)).to_string();
        assert!(enomem.contains("sysctl -w vm.max_map_count="), "{enomem}");
        let einval = StackError::Guard(io::Error::from_raw_os_error(libc::EINVAL)).to_string();
        assert!(einval.contains("GuardMode::Auto"), "{einval}");
    }

    #[test]
    fn io_errors_are_the_source() {
        use std::error::Error as _;
        let error = StackError::Mmap(io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(
            error.source().map(|s| s.to_string()),
            Some(io::Error::from_raw_os_error(libc::ENOMEM).to_string())
        );
        assert!(StackError::TooLarge { size: 1 }.source().is_none());
    }
}
