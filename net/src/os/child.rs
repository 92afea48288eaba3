//! `Child`: a running child process whose waits park the fiber.

use crate::os::{pidfd, reaper, ChildStderr, ChildStdin, ChildStdout, ExitStatus, Output};
use crate::source::{never, IoTimeout, Source};
use fibra_runtime::wait::{in_fiber, Deadline, TimedOut};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::time::Duration;
use tokio::io::Interest;

/// A spawned child process: [`std::process::Child`]'s shape, where [`wait`](Self::wait) and
/// [`wait_timeout`](Self::wait_timeout) park the calling fiber until the child exits. The
/// driver's reactor learns of exits through process descriptors (pidfds), so a thousand
/// waiting children cost a thousand parked fibers, not a thousand threads. On a plain thread
/// the waits block it, also once the runtime that spawned the child has ended.
///
/// Dropping a `Child` neither kills nor waits for it; a child that is still running is reaped
/// in the background once it exits.
///
/// ```
/// use fibra::os::Command;
/// use std::time::Duration;
///
/// fibra::run(|| {
///     let mut child = Command::new("sleep").arg("30").spawn().unwrap();
///     assert!(child.wait_timeout(Duration::from_millis(10)).unwrap().is_none());
///     child.kill().unwrap();
///     let status = child.wait().unwrap();
///     assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
/// });
/// ```
#[derive(Debug)]
pub struct Child {
    /// `None` only once `drop` has handed the child to the reaper.
    inner: Option<tokio::process::Child>,
    id: u32,
    /// The child's pidfd, readable once it has exited; opened at the first wait. Waits go
    /// through it rather than through tokio's wait, whose future needs the reactor of a live
    /// runtime (a plain thread after the runtime ended has none). Closed once reaped.
    exit: Option<Source<OwnedFd>>,
    /// The child's standard input, if piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, if piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, if piped.
    pub stderr: Option<ChildStderr>,
}

impl Child {
    pub(crate) fn from_tokio(mut inner: tokio::process::Child) -> io::Result<Child> {
        let id = inner
            .id()
            .expect("a freshly spawned child has not been reaped");
        Ok(Child {
            id,
            exit: None,
            stdin: inner.stdin.take().map(ChildStdin::from_tokio).transpose()?,
            stdout: inner
                .stdout
                .take()
                .map(ChildStdout::from_tokio)
                .transpose()?,
            stderr: inner
                .stderr
                .take()
                .map(ChildStderr::from_tokio)
                .transpose()?,
            inner: Some(inner),
        })
    }

    /// The OS process id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Sends `SIGKILL`, without waiting; `Ok` if the child has already exited.
    ///
    /// # Errors
    ///
    /// The OS's `kill` errors.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.inner().try_wait()?.is_some() {
            return Ok(());
        }
        self.inner().start_kill()
    }

    /// Waits for the child to exit (closing its stdin first, so it is not left waiting for
    /// input), parking the calling fiber; a cancellation point. Calling it again returns the
    /// same status.
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        match self.wait_for_exit(None)? {
            Some(status) => Ok(status),
            None => unreachable!("a wait without a timeout never times out"),
        }
    }

    /// Like [`wait`](Self::wait), giving up with `Ok(None)` after `timeout` (the child keeps
    /// running).
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        drop(self.stdin.take());
        self.wait_for_exit(Some(timeout))
    }

    /// Waits until the child has exited and reaps it, or gives up with `Ok(None)` after
    /// `timeout`.
    fn wait_for_exit(&mut self, timeout: Option<Duration>) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.inner().try_wait()? {
            return Ok(Some(status));
        }
        let exit = match self.exit.take() {
            Some(exit) => exit,
            // Not reaped (just checked), so the pid is still our child's.
            None => match pidfd::open(self.id) {
                Ok(fd) => Source::nonblocking(fd),
                // No pidfd (a kernel before 5.3, or out of descriptors): tokio's own wait,
                // which a fiber's live runtime can drive; a plain thread gets the error.
                Err(_) if in_fiber() => return self.wait_with_tokio(timeout),
                Err(error) => return Err(error),
            },
        };
        let exit = self.exit.insert(exit);
        let inner = self.inner.as_mut().expect(NOT_DROPPED);
        let deadline = match timeout {
            Some(timeout) => IoTimeout::After(timeout, io::ErrorKind::TimedOut),
            None => IoTimeout::Never,
        };
        let reaped = exit.io(
            Interest::READABLE,
            |_| Ok(deadline),
            never,
            |_| {
                inner
                    .try_wait()?
                    .ok_or_else(|| io::ErrorKind::WouldBlock.into())
            },
        );
        match reaped {
            Ok(status) => {
                // Reaped: the descriptor and its registration are of no more use, and a user
                // keeping finished children would keep one each.
                self.exit = None;
                Ok(Some(status))
            }
            // waitpid never fails with `TimedOut`: this is the wait's own timeout.
            Err(error) if error.kind() == io::ErrorKind::TimedOut => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn wait_with_tokio(&mut self, timeout: Option<Duration>) -> io::Result<Option<ExitStatus>> {
        let deadline = timeout.map_or(Deadline::NEVER, Deadline::after);
        match fibra_runtime::block_on_until(self.inner().wait(), deadline) {
            Ok(status) => status.map(Some),
            Err(TimedOut) => Ok(None),
        }
    }

    /// The exit status if the child has exited, without waiting.
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let mut child = fibra::os::Command::new("sleep").arg("30").spawn().unwrap();
    ///     assert!(child.try_wait().unwrap().is_none());
    ///     child.kill().unwrap();
    ///     child.wait().unwrap();
    ///     assert!(child.try_wait().unwrap().is_some());
    /// });
    /// ```
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.inner().try_wait()
    }

    fn inner(&mut self) -> &mut tokio::process::Child {
        self.inner.as_mut().expect(NOT_DROPPED)
    }

    /// Waits for the child to exit while collecting its piped stdout and stderr (stderr read
    /// by a fiber of its own, or on a plain thread by a thread of its own, so neither pipe can
    /// fill up and stall the child).
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors and read errors on the pipes.
    ///
    /// ```
    /// use fibra::os::{Command, Stdio};
    ///
    /// fibra::run(|| {
    ///     let child = Command::new("echo").arg("captured").stdout(Stdio::piped()).spawn().unwrap();
    ///     let output = child.wait_with_output().unwrap();
    ///     assert_eq!(output.stdout, b"captured\n");
    /// });
    /// ```
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        drop(self.stdin.take());
        let (stdout, stderr) = (self.stdout.take(), self.stderr.take());
        let (stdout, stderr) = if in_fiber() {
            let (stdout, stderr) = fibra_runtime::scope(|s| {
                let stderr = s.spawn(move || read_all(stderr));
                (read_all(stdout), stderr.join())
            });
            // A panicking reader is re-raised by the scope; this is the cancelled case.
            let stderr =
                stderr.unwrap_or_else(|_| Err(io::Error::other("the stderr reader was cancelled")));
            (stdout, stderr)
        } else {
            std::thread::scope(|s| {
                let stderr = s.spawn(move || read_all(stderr));
                let stdout = read_all(stdout);
                let stderr = stderr
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (stdout, stderr)
            })
        };
        let status = self.wait()?;
        Ok(Output {
            status,
            stdout: stdout?,
            stderr: stderr?,
        })
    }
}

const NOT_DROPPED: &str = "only drop takes the child out";

impl Drop for Child {
    /// A child still running goes to the reaper thread, which reaps it when it exits whether
    /// or not a runtime is left by then. Tokio's own orphan handling is the fallback when
    /// there is no pidfd or no reaper thread.
    fn drop(&mut self) {
        let Some(mut child) = self.inner.take() else {
            return;
        };
        // Exited (now reaped) or unknown to the OS: nothing to wait for.
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        // Not reaped (just checked), so the pid is still our child's.
        let exit = match self.exit.take() {
            Some(exit) => exit.into_inner(),
            None => pidfd::open(self.id),
        };
        if let Ok(exit) = exit {
            reaper::adopt(child, exit);
        }
    }
}

fn read_all(pipe: Option<impl Read>) -> io::Result<Vec<u8>> {
    let mut all = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut all)?;
    }
    Ok(all)
}
