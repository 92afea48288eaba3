//! Reaping dropped children without a runtime: tokio's orphan queue is swept only while some
//! runtime's driver runs, so a child outliving its runtime would stay a zombie. A process-wide
//! thread, started on first need, waits in `poll(2)` on the pidfds of the children handed to
//! it and reaps exactly those, never a child spawned some other way.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// A dropped child that was still running, with its pidfd.
struct Orphan {
    child: tokio::process::Child,
    exit: OwnedFd,
}

/// Only the reaper thread removes orphans, so their pidfds stay open while it polls.
type Orphans = Arc<Mutex<Vec<Orphan>>>;

struct Reaper {
    orphans: Orphans,
    /// Written to (non-blocking) after a push, so the thread polls the new pidfd too.
    wake: UnixStream,
}

static REAPER: OnceLock<io::Result<Reaper>> = OnceLock::new();

/// Hands `child`, whose pidfd is `exit`, to the reaper thread. Should the thread not start,
/// the child is dropped into tokio's orphan queue, swept while some runtime's driver runs.
pub(crate) fn adopt(child: tokio::process::Child, exit: OwnedFd) {
    let Ok(reaper) = REAPER.get_or_init(start) else {
        return;
    };
    lock(&reaper.orphans).push(Orphan { child, exit });
    // A full socket already holds a wake the thread has yet to read.
    let _ = (&reaper.wake).write(&[1]);
}

fn start() -> io::Result<Reaper> {
    let (wake, woken) = UnixStream::pair()?;
    wake.set_nonblocking(true)?;
    woken.set_nonblocking(true)?;
    let orphans = Orphans::default();
    let theirs = orphans.clone();
    std::thread::Builder::new()
        .name("fibra-reaper".into())
        .spawn(move || reap(&theirs, &woken))?;
    Ok(Reaper { orphans, wake })
}

/// The reaper thread: waits until an orphan exits or a new one arrives, then reaps all that
/// have exited.
fn reap(orphans: &Orphans, woken: &UnixStream) {
    let mut fds = Vec::new();
    loop {
        fds.clear();
        fds.push(pollfd(woken.as_raw_fd()));
        fds.extend(
            lock(orphans)
                .iter()
                .map(|orphan| pollfd(orphan.exit.as_raw_fd())),
        );
        let count = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
        // SAFETY: `fds` is a live, initialised array of `count` pollfds for the duration of
        // the call. The descriptors in it stay open meanwhile: `woken` is borrowed, and the
        // orphans owning the others are removed only by this thread, below.
        let polled = unsafe { libc::poll(fds.as_mut_ptr(), count, -1) };
        if polled == -1 {
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                // Out of kernel memory: no reason to spin while it lasts.
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        while matches!((&*woken).read(&mut [0; 64]), Ok(1..)) {}
        // Reaped (`Some`) or gone (`Err`: nothing left to reap) leave; running ones stay.
        lock(orphans).retain_mut(|orphan| matches!(orphan.child.try_wait(), Ok(None)));
    }
}

fn pollfd(fd: libc::c_int) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn lock(orphans: &Orphans) -> MutexGuard<'_, Vec<Orphan>> {
    // Never held across user code; recover from a poisoned lock anyway.
    orphans
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
