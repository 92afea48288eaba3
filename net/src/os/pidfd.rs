//! Process descriptors: a child's exit as a readable file descriptor, which the reactor (in a
//! fiber) or `poll(2)` (on a plain thread) can wait for without any runtime's help.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// Opens a non-blocking pidfd for `pid`, which must be a child of ours that has not been
/// reaped (so the pid cannot have been reused by another process).
///
/// # Errors
///
/// `Unsupported` (`ENOSYS`) on kernels before Linux 5.3, and the OS's descriptor-limit errors.
pub(crate) fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: pidfd_open takes a pid and a flags word and returns a new descriptor or -1; it
    // reads or writes no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, libc::PIDFD_NONBLOCK) };
    if fd == -1 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: pidfd_open succeeded, so `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
