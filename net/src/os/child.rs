//! `Child`: a running child process whose waits park the fiber.

use crate::os::{ChildStderr, ChildStdin, ChildStdout, ExitStatus, Output};
use fibra_runtime::wait::{Deadline, TimedOut};
use std::io::{self, Read};
use std::time::Duration;

/// A spawned child process: [`std::process::Child`]'s shape, where [`wait`](Self::wait) and
/// [`wait_timeout`](Self::wait_timeout) park the calling fiber until the child exits. The
/// driver learns of exits through its signal handling, so a thousand waiting children cost a
/// thousand parked fibers, not a thousand threads.
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
    inner: tokio::process::Child,
    id: u32,
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
            inner,
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
        if self.inner.try_wait()?.is_some() {
            return Ok(());
        }
        self.inner.start_kill()
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
        fibra_runtime::block_on(self.inner.wait())
    }

    /// Like [`wait`](Self::wait), giving up with `Ok(None)` after `timeout` (the child keeps
    /// running).
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        drop(self.stdin.take());
        if let Some(status) = self.inner.try_wait()? {
            return Ok(Some(status));
        }
        match fibra_runtime::block_on_until(self.inner.wait(), Deadline::after(timeout)) {
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
        self.inner.try_wait()
    }

    /// Waits for the child to exit while collecting its piped stdout and stderr (read by
    /// fibers of their own, so neither pipe can fill up and stall the child).
    ///
    /// # Errors
    ///
    /// The OS's `wait` errors and read errors on the pipes.
    ///
    /// # Panics
    ///
    /// Outside a fibra fiber (the second reader is a fiber).
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
        let (stdout, stderr) = fibra_runtime::scope(|s| {
            let stderr = s.spawn(move || read_all(stderr));
            (read_all(stdout), stderr.join())
        });
        // A panicking reader is re-raised by the scope; this is the cancelled case.
        let stderr =
            stderr.unwrap_or_else(|_| Err(io::Error::other("the stderr reader was cancelled")));
        let status = self.wait()?;
        Ok(Output {
            status,
            stdout: stdout?,
            stderr: stderr?,
        })
    }
}

fn read_all(pipe: Option<impl Read>) -> io::Result<Vec<u8>> {
    let mut all = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut all)?;
    }
    Ok(all)
}
