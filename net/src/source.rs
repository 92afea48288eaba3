//! One non-blocking file descriptor and how its callers wait for it.
//!
//! Every call first makes the non-blocking syscall on the caller's own thread. Only when that
//! says `WouldBlock` does the caller wait: a fiber retries the call a few times while the
//! peer may be a moment away (see `retries`), then registers the descriptor with the
//! driver's reactor (once, on its first wait) and parks until the reactor reports readiness;
//! a plain thread waits in `poll(2)`. Either way the syscall is then retried.

use crate::retries::Retries;
use crate::thread_wait;
use crate::timeouts::Timeouts;
use fibra_runtime::wait::{Deadline, TimedOut};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};
use tokio::io::Interest;

/// A descriptor number handed to the reactor. It does not own the descriptor: [`Source`]
/// drops its registration before the descriptor it points at is closed.
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// An I/O object in non-blocking mode plus its (lazy) reactor registration.
pub(crate) struct Source<S: AsFd> {
    /// Made on the first wait from a fiber, and made anew when the reactor it was made with
    /// has shut down (the object outlived one runtime and is used in another). Clones of the
    /// `Arc` live only inside a wait, which borrows the `Source`.
    // Declared before `io`: fields drop in order, so the registration is removed from the
    // reactor while the descriptor is still open.
    registration: Mutex<Option<Arc<AsyncFd<Fd>>>>,
    /// The user's `set_nonblocking(true)`: return `WouldBlock` instead of waiting. (The
    /// descriptor itself is always non-blocking.)
    user_nonblocking: AtomicBool,
    /// Used by socket types with timeouts; shared with clones.
    timeouts: Arc<Timeouts>,
    /// Whether a fiber retries a call before it waits for the reactor.
    retries: Retries,
    /// Whether readiness for reading (`[0]`) or writing (`[1]`) was last cleared on a
    /// `drained` result rather than a `WouldBlock`; taken by the next wait (see
    /// [`Source::wait_and_retry`]).
    cleared_on_a_guess: [AtomicBool; 2],
    io: S,
}

/// When an I/O wait gives up, and with what error.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IoTimeout {
    Never,
    /// Give up after this long, with an error of the given kind.
    After(Duration, io::ErrorKind),
}

impl IoTimeout {
    /// A std socket timeout (`set_read_timeout`/`set_write_timeout`): on expiry, `WouldBlock`
    /// as std reports it on Unix.
    pub(crate) fn socket(timeout: Option<Duration>) -> IoTimeout {
        match timeout {
            Some(timeout) => IoTimeout::After(timeout, io::ErrorKind::WouldBlock),
            None => IoTimeout::Never,
        }
    }
}

/// What [`Source::io`]'s first look found.
enum Tried<R> {
    /// `op` ran and returned this.
    Done(io::Result<R>),
    /// The reactor has seen no readiness since the descriptor was last found not ready; `op`
    /// did not run.
    NotReady,
}

/// `drained` for calls whose success says nothing about what is left (accept, datagrams,
/// peeks): only `WouldBlock` clears readiness.
pub(crate) fn never<R>(_: &R) -> bool {
    false
}

/// `drained` for a read or write of `len` bytes on a stream socket or a pipe: a transfer of
/// some but fewer bytes most likely emptied the receive buffer (read) or filled the send
/// buffer (write), as the kernel moves all it can in one call. Only most likely: a TCP read
/// stops at urgent data, a Unix stream read at passed descriptors, with more data queued
/// behind them; so the next wait tries the call once before it trusts the clear (see
/// [`Source::wait_and_retry`]). Zero bytes is end-of-file or an empty buffer and clears
/// nothing.
pub(crate) fn short(len: usize) -> impl Fn(&usize) -> bool {
    move |&n| n > 0 && n < len
}

/// Whether an I/O result asks the caller to wait and retry.
pub(crate) fn would_block<T>(result: &io::Result<T>) -> bool {
    matches!(result, Err(error) if error.kind() == io::ErrorKind::WouldBlock)
}

impl<S: AsFd> Source<S> {
    /// Puts `io` in non-blocking mode and wraps it.
    pub(crate) fn new(io: S) -> io::Result<Source<S>> {
        socket2::SockRef::from(&io).set_nonblocking(true)?;
        Ok(Source::nonblocking(io))
    }

    /// Wraps `io`, which is already in non-blocking mode.
    pub(crate) fn nonblocking(io: S) -> Source<S> {
        Source::with_timeouts(io, Timeouts::new())
    }

    /// Wraps `io`, a socket this crate has just made (already in non-blocking mode), so
    /// without read or write timeouts: the kernel is never asked for them.
    pub(crate) fn without_timeouts(io: S) -> Source<S> {
        Source::with_timeouts(io, Timeouts::none())
    }

    fn with_timeouts(io: S, timeouts: Timeouts) -> Source<S> {
        Source {
            registration: Mutex::new(None),
            user_nonblocking: AtomicBool::new(false),
            timeouts: Arc::new(timeouts),
            retries: Retries::default(),
            cleared_on_a_guess: Default::default(),
            io,
        }
    }

    /// Wraps `io`, a non-blocking duplicate of this source's descriptor, sharing its
    /// timeouts.
    pub(crate) fn clone_with(&self, io: S) -> Source<S> {
        Source {
            registration: Mutex::new(None),
            user_nonblocking: AtomicBool::new(self.is_nonblocking()),
            timeouts: self.timeouts.clone(),
            retries: Retries::default(),
            cleared_on_a_guess: Default::default(),
            io,
        }
    }

    /// The socket's timeouts, as the socket types set and use them.
    pub(crate) fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }

    pub(crate) fn get(&self) -> &S {
        &self.io
    }

    /// The wrapped object, deregistered from the reactor and back in blocking mode unless the
    /// user asked for non-blocking mode.
    pub(crate) fn into_inner(self) -> io::Result<S> {
        let Source {
            registration,
            user_nonblocking,
            io,
            ..
        } = self;
        drop(registration);
        socket2::SockRef::from(&io).set_nonblocking(user_nonblocking.into_inner())?;
        Ok(io)
    }

    /// std's `set_nonblocking`: in non-blocking mode calls return `WouldBlock` at once.
    pub(crate) fn set_nonblocking(&self, nonblocking: bool) {
        self.user_nonblocking.store(nonblocking, Ordering::Relaxed);
    }

    pub(crate) fn is_nonblocking(&self) -> bool {
        self.user_nonblocking.load(Ordering::Relaxed)
    }

    /// Runs the non-blocking `op` until it does not say `WouldBlock`, waiting for `interest`
    /// between tries. `deadline` is asked only when a wait is needed, so a ready call makes one
    /// syscall and nothing else. `drained` says of a result that the descriptor is no longer
    /// ready for `interest` although `op` did not say `WouldBlock` (see [`short`]).
    ///
    /// A fiber whose descriptor is registered asks the reactor first: when the reactor has
    /// seen no readiness since a call last found the descriptor not ready (a `WouldBlock` or a
    /// drained result), the fiber goes to its wait without trying `op`. That is sound because
    /// the clear is checked against the readiness the call saw before it ran `op` (tokio's
    /// tick): an event the reactor takes in meanwhile survives the clear and wakes the
    /// waiter. A drained result is a guess, so the wait tries `op` before it parks (see
    /// [`Source::wait_and_retry`]).
    ///
    /// Every call is a safepoint, as every channel and lock operation is: it costs the fiber
    /// one reduction, so a fiber whose socket is always ready still yields when its slice is
    /// used up, and it is a cancellation point. So is every wait. A cancelled call has not run
    /// `op` since its last `WouldBlock`, so it consumed or sent nothing.
    #[inline]
    pub(crate) fn io<R>(
        &self,
        interest: Interest,
        deadline: impl FnOnce(&S) -> io::Result<IoTimeout>,
        drained: impl Fn(&R) -> bool,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        fibra_runtime::checkpoint();
        let tried = match self.fiber_registration() {
            Some(registration) => self.try_if_ready(&registration, interest, &drained, &mut op),
            None => Tried::Done(op(&self.io)),
        };
        match tried {
            Tried::Done(result) if !would_block(&result) || self.is_nonblocking() => return result,
            // Non-blocking mode asks the OS, as std does.
            Tried::NotReady if self.is_nonblocking() => return op(&self.io),
            _ => {}
        }
        let deadline = deadline(&self.io)?;
        self.wait_and_retry(interest, deadline, &drained, &mut op)
    }

    /// Runs `op` if the reactor says the descriptor may be ready for `interest`, clearing
    /// that readiness when `op` finds it is not (see [`Source::io`]).
    #[inline]
    fn try_if_ready<R>(
        &self,
        registration: &AsyncFd<Fd>,
        interest: Interest,
        drained: &dyn Fn(&R) -> bool,
        op: &mut dyn FnMut(&S) -> io::Result<R>,
    ) -> Tried<R> {
        // A noop waker: nothing waits here. When not ready, the fiber goes on to wait with a
        // waker of its own, which the reactor wakes for any event after the one seen here.
        let mut cx = Context::from_waker(Waker::noop());
        let ready = if interest.is_readable() {
            registration.poll_read_ready(&mut cx)
        } else {
            registration.poll_write_ready(&mut cx)
        };
        match ready {
            Poll::Ready(Ok(mut guard)) => {
                Tried::Done(self.attempt(&mut guard, interest, drained, op))
            }
            // The reactor has shut down: try the call, and the wait registers anew.
            Poll::Ready(Err(_)) => Tried::Done(op(&self.io)),
            Poll::Pending => Tried::NotReady,
        }
    }

    /// Runs `op` under the readiness `guard` saw for `interest`, clearing it when `op` says
    /// `WouldBlock` or its result is `drained`.
    fn attempt<R>(
        &self,
        guard: &mut AsyncFdReadyGuard<'_, Fd>,
        interest: Interest,
        drained: &dyn Fn(&R) -> bool,
        op: &mut dyn FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        let result = op(&self.io);
        if would_block(&result) {
            guard.clear_ready();
        } else if result.as_ref().is_ok_and(drained) {
            // Before the clear: tokio clears with a release and polls readiness with an
            // acquire, so a caller that finds the readiness cleared finds the mark too.
            self.guess(interest).store(true, Ordering::Relaxed);
            guard.clear_ready();
        }
        result
    }

    fn guess(&self, interest: Interest) -> &AtomicBool {
        &self.cleared_on_a_guess[usize::from(!interest.is_readable())]
    }

    #[cold]
    #[inline(never)]
    fn wait_and_retry<R>(
        &self,
        interest: Interest,
        deadline: IoTimeout,
        drained: &dyn Fn(&R) -> bool,
        op: &mut dyn FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        let (give_up, kind) = match deadline {
            IoTimeout::Never => (Deadline::NEVER, io::ErrorKind::WouldBlock),
            IoTimeout::After(timeout, kind) => (Deadline::after(timeout), kind),
        };
        if !fibra_runtime::wait::in_fiber() {
            return thread_wait::retry(self.io.as_fd(), interest, give_up, kind, &mut || {
                op(&self.io)
            });
        }
        // A readiness cleared on a drained result may hide data or room that no new event
        // will announce: a wait that skips its retries tries `op` once first. One cleared by
        // a `WouldBlock` needs no such try, as any later data or room comes with an event.
        // The retries take no readiness from the reactor, so they clear none either.
        let unconfirmed = self.guess(interest).swap(false, Ordering::Relaxed);
        if let Some(result) = self.retries.retry(unconfirmed, &mut || op(&self.io)) {
            // The readiness is still cleared, and only a `WouldBlock` shows that nothing is
            // left behind the clear: a result (a short read again, at the next descriptors
            // passed) leaves the next wait as unsure as this one was.
            if unconfirmed {
                self.guess(interest).store(true, Ordering::Relaxed);
            }
            if self.retries.settled() {
                self.deregister();
            }
            return result;
        }
        let mut registration = self.registration(None)?;
        // A pending socket error (an ICMP refusal on a connected UDP socket, a reset) is
        // reported as an error event alone, with no readability: a waiter for `interest`
        // only would miss that one edge and wait for ever, where a retry of `op` returns the
        // error.
        let interest = interest | Interest::ERROR;
        loop {
            let ready = fibra_runtime::block_on_leaf_until(registration.ready(interest), give_up);
            let mut guard = match ready {
                Ok(Ok(guard)) => guard,
                Err(TimedOut) => return Err(timed_out(kind)),
                // The registration's reactor has shut down: register with the caller's, once.
                Ok(Err(error)) => {
                    let fresh = self.registration(Some(&registration))?;
                    if Arc::ptr_eq(&fresh, &registration) {
                        return Err(error);
                    }
                    registration = fresh;
                    continue;
                }
            };
            let result = self.attempt(&mut guard, interest, drained, op);
            if !would_block(&result) {
                return result;
            }
        }
    }

    /// The registration, if there is one and the caller is a fiber (a plain thread waits in
    /// `poll(2)` and never asks the reactor).
    #[inline]
    fn fiber_registration(&self) -> Option<Arc<AsyncFd<Fd>>> {
        if !fibra_runtime::wait::in_fiber() {
            return None;
        }
        self.lock_registration().clone()
    }

    /// The reactor registration, made in the calling fiber's context (its worker's driver)
    /// if there is none yet or the current one is `dead`.
    fn registration(&self, dead: Option<&Arc<AsyncFd<Fd>>>) -> io::Result<Arc<AsyncFd<Fd>>> {
        let mut slot = self.lock_registration();
        if let Some(current) = &*slot {
            if dead.is_none_or(|dead| !Arc::ptr_eq(current, dead)) {
                return Ok(current.clone());
            }
        }
        // A dead registration is dropped before the descriptor is registered anew.
        *slot = None;
        // SAFETY: `Fd` names the descriptor `self.io` owns. That descriptor stays open and
        // refers to the same file description for as long as the registration lives: `io` is
        // never replaced (only shared references to it leave this type), and every `Arc` of
        // the registration is gone before `io` is: clones live only inside waits, which
        // borrow `self`, and the slot itself drops before `io` — by field order in `Drop`,
        // explicitly in `into_inner`.
        let fresh = unsafe {
            AsyncFd::register_with_interest(
                Fd(self.io.as_fd().as_raw_fd()),
                Interest::READABLE | Interest::WRITABLE,
            )
        }?;
        let fresh = Arc::new(fresh);
        *slot = Some(fresh.clone());
        Ok(fresh)
    }

    /// Takes the descriptor off the reactor, unless a wait is using the registration: its
    /// `Arc` is then shared, and the descriptor stays registered (a second registration of
    /// one descriptor would fail). Clones are made only under the lock, so one that is alone
    /// here stays alone.
    fn deregister(&self) {
        let mut slot = self.lock_registration();
        if slot
            .as_ref()
            .is_some_and(|registration| Arc::strong_count(registration) == 1)
        {
            *slot = None;
        }
    }

    fn lock_registration(&self) -> MutexGuard<'_, Option<Arc<AsyncFd<Fd>>>> {
        // Never held across user code; recover from a poisoned lock anyway.
        self.registration
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The error of a wait whose timeout expired.
pub(crate) fn timed_out(kind: io::ErrorKind) -> io::Error {
    io::Error::new(kind, "the operation timed out")
}

impl<S: AsFd> AsFd for Source<S> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.as_fd()
    }
}

impl<S: AsFd + std::fmt::Debug> std::fmt::Debug for Source<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.io.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retries::SETTLING_HITS;
    use fibra_runtime::wait::RETRY_TURNS;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::AtomicUsize;

    fn registered<S: AsFd>(source: &Source<S>) -> bool {
        source.lock_registration().is_some()
    }

    /// Reads one byte through `source`'s fiber path, waiting as long as it takes.
    fn read_byte(source: &Source<UnixStream>) -> io::Result<u8> {
        let mut byte = [0];
        source.io(
            Interest::READABLE,
            |_| Ok(IoTimeout::Never),
            never,
            |mut io| io.read(&mut byte),
        )?;
        Ok(byte[0])
    }

    /// Writes `byte` to `peer` once the reader has run out of retries and waits on the
    /// reactor: on one worker, each of its retries costs one turn of the writing fiber's.
    fn write_after_the_retries(mut peer: &UnixStream, byte: u8) {
        for _ in 0..=2 * RETRY_TURNS {
            fibra_runtime::yield_now();
        }
        peer.write_all(&[byte]).unwrap();
    }

    /// Writes `byte` to `peer` as soon as the reader has read `before` bytes: the reader, in
    /// its retries, yields to the writer, and its next retry finds the byte.
    fn write_into_the_retries(mut peer: &UnixStream, read: &AtomicUsize, before: usize, byte: u8) {
        while read.load(Ordering::Relaxed) < before {
            fibra_runtime::yield_now();
        }
        peer.write_all(&[byte]).unwrap();
    }

    fn on_one_worker(f: impl FnOnce() + Send + 'static) {
        fibra_runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .block_on(f);
    }

    /// Reads `count` bytes (their values `0..count`) while the peer fiber writes each one
    /// into the reader's retries, after the first, which the reader waits for on the reactor.
    fn read_in_turns(source: &Arc<Source<UnixStream>>, peer: &Arc<UnixStream>, count: usize) {
        let read = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (peer, read) = (peer.clone(), read.clone());
            fibra_runtime::spawn(move || {
                write_after_the_retries(&peer, 0);
                for byte in 1..count {
                    write_into_the_retries(&peer, &read, byte, byte as u8);
                }
            })
        };
        for expected in 0..count {
            assert_eq!(read_byte(source).unwrap(), expected as u8);
            read.store(expected + 1, Ordering::Relaxed);
        }
        writer.join().unwrap();
    }

    #[test]
    fn a_descriptor_whose_retries_keep_finding_it_ready_leaves_the_reactor() {
        on_one_worker(|| {
            let (a, b) = UnixStream::pair().unwrap();
            let (source, peer) = (Arc::new(Source::new(a).unwrap()), Arc::new(b));
            // The first read waits on the reactor, the second skips its retries (the first's
            // missed), and every later one finds its byte by a retry.
            read_in_turns(&source, &peer, 2 + usize::from(SETTLING_HITS) - 1);
            assert!(registered(&source), "one hit run short");
            assert_eq!(read_byte_written_by_a_retry(&source, &peer, 7), 7);
            assert!(!registered(&source), "off the reactor");
            // A later wait registers anew.
            let writer = {
                let peer = peer.clone();
                fibra_runtime::spawn(move || write_after_the_retries(&peer, 8))
            };
            assert_eq!(read_byte(&source).unwrap(), 8);
            assert!(registered(&source));
            writer.join().unwrap();
        });
    }

    /// One read whose byte `peer` writes into its retries.
    fn read_byte_written_by_a_retry(
        source: &Source<UnixStream>,
        peer: &Arc<UnixStream>,
        byte: u8,
    ) -> u8 {
        let writer = {
            let peer = peer.clone();
            fibra_runtime::spawn(move || {
                fibra_runtime::yield_now();
                (&*peer).write_all(&[byte]).unwrap();
            })
        };
        let read = read_byte(source).unwrap();
        writer.join().unwrap();
        read
    }

    #[test]
    fn a_descriptor_stays_on_the_reactor_while_another_wait_uses_it() {
        on_one_worker(|| {
            let (a, b) = UnixStream::pair().unwrap();
            let (source, peer) = (Arc::new(Source::new(a).unwrap()), Arc::new(b));
            // Fill the send buffer, so that a write waits on the reactor.
            let mut filled = 0;
            while source.get().write(&[0; 4096]).is_ok() {
                filled += 4096;
            }
            let writer = {
                let source = source.clone();
                fibra_runtime::spawn(move || {
                    source.io(
                        Interest::WRITABLE,
                        |_| Ok(IoTimeout::Never),
                        never,
                        |mut io| io.write(&[1]),
                    )
                })
            };
            // The write's retries miss, and it waits on the reactor.
            while !registered(&source) {
                fibra_runtime::yield_now();
            }
            // Settled: without the write's wait, the descriptor would leave the reactor here.
            read_in_turns(&source, &peer, 2 + usize::from(SETTLING_HITS));
            assert!(
                registered(&source),
                "the waiting write holds the registration"
            );
            // A read that misses its retries waits on the same registration.
            let late = {
                let peer = peer.clone();
                fibra_runtime::spawn(move || write_after_the_retries(&peer, 9))
            };
            assert_eq!(read_byte(&source).unwrap(), 9);
            late.join().unwrap();
            // Drain the peer: the write completes.
            let mut drained = vec![0; filled + 4096];
            let mut got = 0;
            while got < filled {
                got += (&*peer).read(&mut drained).unwrap();
            }
            assert_eq!(writer.join().unwrap().unwrap(), 1);
        });
    }
}
