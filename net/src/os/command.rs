//! `Command`: std's process builder, spawning through tokio's process support.

use crate::os::{Child, ExitStatus, Output, Stdio};
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::Path;

/// A process builder with [`std::process::Command`]'s methods. [`spawn`](Self::spawn) starts
/// the child with std's spawn (through tokio's process support), on the calling worker;
/// [`status`] and [`output`] park the calling fiber until the child exits.
///
/// std spawns with `posix_spawn`, which copies nothing of this process, except where
/// `posix_spawn` cannot express the request; it then `fork`s and `exec`s. That happens when
/// [`env`](Self::env), [`envs`](Self::envs) or [`env_clear`](Self::env_clear) change `PATH`
/// and the program is a bare name (give it as a path to avoid it), on glibc before 2.29 when
/// [`current_dir`](Self::current_dir) is set, and for settings only a converted std `Command`
/// carries (uid, gid, groups, `pre_exec`). A fork runs no worker code in the child: only the
/// forking thread exists there, and it runs nothing but the `exec` (and any `pre_exec`
/// closure). Its cost is the copy of the process's page tables, which grows with its resident
/// memory and holds up the calling worker for that long.
///
/// [`status`]: Self::status
/// [`output`]: Self::output
///
/// ```
/// use fibra::os::Command;
///
/// fibra::run(|| {
///     let output = Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]).output().unwrap();
///     assert_eq!(output.status.code(), Some(3));
///     assert_eq!(output.stdout, b"out\n");
///     assert_eq!(output.stderr, b"err\n");
/// });
/// ```
pub struct Command {
    inner: tokio::process::Command,
    /// Who chose stdin, stdout and stderr (in that order). std's builder cannot be asked for
    /// its stdio nor have it unset, so the per-call defaults (`output` captures, `spawn`
    /// inherits) are tracked here and applied to the builder before each spawn.
    stdio: [Chosen; 3],
}

/// Who chose one of a [`Command`]'s standard streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chosen {
    /// Nobody here: the builder holds what it was made with (nothing for [`Command::new`],
    /// which spawns inherit; a converted std `Command`'s own setting).
    Builder,
    /// The user, through this `Command`: every spawn uses it.
    User,
    /// The last `output` call, with its default: later `spawn`s and `status`es inherit.
    Output,
}

/// The stdio defaults of one kind of call.
#[derive(Clone, Copy)]
enum Defaults {
    /// `spawn` and `status`: inherit.
    Inherit,
    /// `output`: stdin from `/dev/null`, stdout and stderr captured.
    Output,
}

impl Command {
    /// A builder for running `program` (looked up in `PATH` unless it is a path).
    pub fn new<S: AsRef<OsStr>>(program: S) -> Command {
        Command {
            inner: tokio::process::Command::new(program),
            stdio: [Chosen::Builder; 3],
        }
    }

    /// Adds one argument.
    pub fn arg<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.inner.arg(arg);
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inner.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env<K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, key: K, val: V) -> &mut Command {
        self.inner.env(key, val);
        self
    }

    /// Sets several environment variables for the child.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.inner.envs(vars);
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut Command {
        self.inner.env_remove(key);
        self
    }

    /// Clears the child's environment.
    pub fn env_clear(&mut self) -> &mut Command {
        self.inner.env_clear();
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Command {
        self.inner.current_dir(dir);
        self
    }

    /// Sets the child's standard input (by default inherited for `spawn` and `status`,
    /// `/dev/null` for `output`).
    pub fn stdin<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stdin(cfg);
        self.stdio[0] = Chosen::User;
        self
    }

    /// Sets the child's standard output (by default inherited for `spawn` and `status`,
    /// captured for `output`).
    pub fn stdout<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stdout(cfg);
        self.stdio[1] = Chosen::User;
        self
    }

    /// Sets the child's standard error (by default inherited for `spawn` and `status`,
    /// captured for `output`).
    pub fn stderr<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.inner.stderr(cfg);
        self.stdio[2] = Chosen::User;
        self
    }

    /// The program this runs.
    pub fn get_program(&self) -> &OsStr {
        self.inner.as_std().get_program()
    }

    /// Starts the child.
    ///
    /// # Errors
    ///
    /// `NotFound` when the program does not exist, `PermissionDenied` when it is not
    /// executable, and the OS's other spawn errors.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime (or a tokio runtime's context): something must reap the child.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let mut child = fibra::os::Command::new("true").spawn().unwrap();
    ///     assert!(child.wait().unwrap().success());
    ///     let missing = fibra::os::Command::new("/no/such/program").spawn().unwrap_err();
    ///     assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    /// });
    /// ```
    pub fn spawn(&mut self) -> io::Result<Child> {
        assert_runtime("spawn");
        self.spawn_with(Defaults::Inherit)
    }

    /// Spawns with `defaults` for the streams the user has not set.
    fn spawn_with(&mut self, defaults: Defaults) -> io::Result<Child> {
        for (stream, chosen) in self.stdio.iter_mut().enumerate() {
            let stdio = match (defaults, *chosen) {
                (_, Chosen::User) | (Defaults::Inherit, Chosen::Builder) => continue,
                (Defaults::Inherit, Chosen::Output) => {
                    *chosen = Chosen::Builder;
                    Stdio::inherit()
                }
                (Defaults::Output, _) => {
                    *chosen = Chosen::Output;
                    if stream == 0 {
                        Stdio::null()
                    } else {
                        Stdio::piped()
                    }
                }
            };
            match stream {
                0 => self.inner.stdin(stdio),
                1 => self.inner.stdout(stdio),
                _ => self.inner.stderr(stdio),
            };
        }
        Child::from_tokio(self.inner.spawn()?)
    }

    /// Runs the child to its end with stdio inherited (stdin as set), parking the calling
    /// fiber, and returns its exit status.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn), and the OS's `wait` errors.
    ///
    /// # Panics
    ///
    /// As [`spawn`](Self::spawn).
    ///
    /// ```
    /// fibra::run(|| {
    ///     let status = fibra::os::Command::new("sh").args(["-c", "exit 4"]).status().unwrap();
    ///     assert_eq!(status.code(), Some(4));
    /// });
    /// ```
    pub fn status(&mut self) -> io::Result<ExitStatus> {
        assert_runtime("status");
        self.spawn_with(Defaults::Inherit)?.wait()
    }

    /// Runs the child to its end with stdout and stderr captured and stdin from `/dev/null`,
    /// each unless set otherwise (as std's `output`), parking the calling fiber, and returns
    /// its status and output. The defaults apply to this call only: the `Command` is left as
    /// it was for later spawns.
    ///
    /// # Errors
    ///
    /// As [`status`](Self::status).
    ///
    /// # Panics
    ///
    /// As [`spawn`](Self::spawn).
    pub fn output(&mut self) -> io::Result<Output> {
        assert_runtime("output");
        self.spawn_with(Defaults::Output)?.wait_with_output()
    }
}

/// Spawning needs the driver (or a tokio runtime) to reap the child.
fn assert_runtime(what: &str) {
    assert!(
        tokio::runtime::Handle::try_current().is_ok(),
        "fibra::os::Command::{what}() called outside a fibra runtime (or a tokio runtime's \
         context): nothing would reap the child"
    );
}

/// Stdio set on the std `Command` counts as not set here: `spawn` and `status` keep it, but
/// `output` replaces it with its own defaults, and `spawn`s after an `output` inherit. Set
/// streams on the converted `Command` to have every call keep them.
impl From<std::process::Command> for Command {
    fn from(command: std::process::Command) -> Command {
        Command {
            inner: command.into(),
            stdio: [Chosen::Builder; 3],
        }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.as_std().fmt(f)
    }
}
