//! Waiting on a descriptor from a plain thread, which may block: `poll(2)`.

use crate::source::{timed_out, would_block};
use fibra_runtime::wait::Deadline;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use tokio::io::Interest;

/// Retries `op` on `fd` until it does not say `WouldBlock`, blocking the thread in `poll(2)`
/// for `interest` between tries; past `give_up` the error is of kind `kind`.
pub(crate) fn retry<R>(
    fd: BorrowedFd<'_>,
    interest: Interest,
    give_up: Deadline,
    kind: io::ErrorKind,
    op: &mut dyn FnMut() -> io::Result<R>,
) -> io::Result<R> {
    loop {
        if !wait(fd, interest, give_up)? {
            return Err(timed_out(kind));
        }
        let result = op();
        if !would_block(&result) {
            return result;
        }
    }
}

/// Blocks until `fd` is ready for `interest` (or reports an error or hang-up, which the next
/// syscall will surface). `Ok(false)`: `give_up` passed first.
fn wait(fd: BorrowedFd<'_>, interest: Interest, give_up: Deadline) -> io::Result<bool> {
    let mut events = 0;
    if interest.is_readable() {
        events |= libc::POLLIN;
    }
    if interest.is_writable() {
        events |= libc::POLLOUT;
    }
    let mut entry = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        let timeout_ms = if give_up.is_never() {
            -1
        } else {
            let left = give_up.remaining();
            if left.is_zero() {
                return Ok(false);
            }
            // Round up so that the wait never ends before `give_up`.
            let ms = left.as_nanos().div_ceil(1_000_000);
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        };
        // SAFETY: `entry` is one valid, initialised `pollfd` that lives across the call, and
        // we pass a count of 1; `fd` is borrowed, so the descriptor stays open meanwhile.
        let ready = unsafe { libc::poll(&mut entry, 1, timeout_ms) };
        match ready {
            -1 => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
            0 => {}
            _ => return Ok(true),
        }
    }
}
