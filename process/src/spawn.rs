//! Starting processes.

use crate::core::Proc;
use crate::current::{self, current};
use crate::exits::{end, link_pair};
use crate::id::next_number;
use crate::node::Node;
use crate::RegisterError;
use crate::{monitor, register, report, Inbox, MonitorRef, Pid, ProcessId, Reason};
use std::error::Error;
use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

/// Configures one spawn: a registered name, the fiber's stack size, a mailbox limit.
///
/// ```
/// use fibra::process::{self as process, Builder, Inbox};
///
/// process::run(|_: Inbox<()>| {
///     let pid = Builder::new()
///         .name("doc-builder")
///         .stack_size(64 * 1024)
///         .mailbox_limit(1000)
///         .spawn(|inbox: Inbox<u8>| {
///             inbox.recv();
///         })
///         .unwrap();
///     assert_eq!(process::whereis::<u8>("doc-builder"), Ok(pid.clone()));
///     pid.send(1);
/// });
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a Builder does nothing until one of its spawn methods is called"]
pub struct Builder {
    name: Option<String>,
    stack_size: Option<usize>,
    mailbox_limit: Option<usize>,
}

/// Why a [`Builder`] could not start a process.
///
/// ```
/// use fibra::process::{self as process, Builder, Inbox, SpawnError};
///
/// process::run(|inbox: Inbox<()>| {
///     process::register("doc-spawn-error", inbox.pid()).unwrap();
///     let taken = Builder::new().name("doc-spawn-error").spawn(|_: Inbox<()>| {});
///     assert!(matches!(taken, Err(SpawnError::Register(_))));
/// });
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SpawnError {
    /// The name could not be registered.
    Register(RegisterError),
    /// The fiber could not be started (no stack to be had).
    Start(io::Error),
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Register(error) => write!(f, "cannot register the process: {error}"),
            SpawnError::Start(error) => write!(f, "cannot start the process: {error}"),
        }
    }
}

impl Error for SpawnError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            SpawnError::Register(error) => Some(error),
            SpawnError::Start(error) => Some(error),
        }
    }
}

/// Who the new process is tied to before it can run.
pub(crate) enum Parent {
    None,
    Link(ProcessId),
    Monitor(ProcessId),
    /// The main process of a `run`.
    Main,
}

impl Builder {
    /// No name, the runtime's default stack size, no mailbox limit.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Registers the process as `name` before it runs (the spawn fails if the name is taken);
    /// the fiber gets the name too.
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Sets the process fiber's stack size in bytes.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Limits the mailbox to `messages` signals not yet received: a send past it is a runtime
    /// error, which ends the program with exit status 70 and a one-line diagnostic naming the
    /// process.
    pub fn mailbox_limit(mut self, messages: usize) -> Builder {
        self.mailbox_limit = Some(messages);
        self
    }

    /// Spawns the process.
    ///
    /// # Errors
    ///
    /// [`SpawnError`]: the name is taken, or no stack could be had.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime.
    #[track_caller]
    pub fn spawn<M, F>(self, f: F) -> Result<Pid<M>, SpawnError>
    where
        M: Send + 'static,
        F: FnOnce(Inbox<M>) + Send + 'static,
    {
        start(&Node::current(), self, Parent::None, f).map(|(pid, _)| pid)
    }

    /// Spawns the process linked to the caller (the link exists before it runs).
    ///
    /// ```
    /// use fibra::process::{self as process, Builder, Inbox, Signal};
    ///
    /// process::run(|inbox: Inbox<()>| {
    ///     process::trap_exit(true);
    ///     let child = Builder::new().spawn_link(|_: Inbox<()>| {}).unwrap();
    ///     assert!(matches!(inbox.recv(), Signal::Exit { from, .. } if from == child.id()));
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// # Panics
    ///
    /// Outside a process.
    #[track_caller]
    pub fn spawn_link<M, F>(self, f: F) -> Result<Pid<M>, SpawnError>
    where
        M: Send + 'static,
        F: FnOnce(Inbox<M>) + Send + 'static,
    {
        let parent = current("spawn_link");
        let node = parent.proc().core().node.clone();
        start(&node, self, Parent::Link(parent), f).map(|(pid, _)| pid)
    }

    /// Spawns the process monitored by the caller (the monitor exists before it runs).
    ///
    /// ```
    /// use fibra::process::{self as process, Builder, Inbox, Reason, Signal};
    ///
    /// process::run(|inbox: Inbox<()>| {
    ///     let (_, mref) = Builder::new().spawn_monitor(|_: Inbox<()>| {}).unwrap();
    ///     match inbox.recv() {
    ///         // Normal, never noproc: the monitor existed before the process ran.
    ///         Signal::Down { mref: m, reason, .. } => assert_eq!((m, reason), (mref, Reason::Normal)),
    ///         _ => unreachable!(),
    ///     }
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`].
    ///
    /// # Panics
    ///
    /// Outside a process.
    #[track_caller]
    pub fn spawn_monitor<M, F>(self, f: F) -> Result<(Pid<M>, MonitorRef), SpawnError>
    where
        M: Send + 'static,
        F: FnOnce(Inbox<M>) + Send + 'static,
    {
        let parent = current("spawn_monitor");
        let node = parent.proc().core().node.clone();
        start(&node, self, Parent::Monitor(parent), f)
            .map(|(pid, mref)| (pid, mref.expect("a monitored spawn makes a monitor")))
    }
}

/// Spawns a process running `f` with its inbox, and returns its address at once. The process
/// ends when `f` returns ([`Reason::Normal`]), panics ([`Reason::Panic`]), calls
/// [`exit_self`](crate::exit_self) or gets an exit signal. Spawned inside a process, it belongs to that
/// process's program ([`run`](crate::run)).
///
/// # Panics
///
/// Outside a fibra runtime, or when no stack can be had.
///
/// ```
/// use fibra::process::{self as process, Inbox, Signal};
///
/// process::run(|inbox: Inbox<u64>| {
///     let me = inbox.pid();
///     process::spawn(move |_: Inbox<()>| me.send(6 * 7));
///     assert_eq!(inbox.recv().into_msg(), Some(42));
/// });
/// ```
#[track_caller]
pub fn spawn<M, F>(f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    Builder::new()
        .spawn(f)
        .unwrap_or_else(|error| panic!("fibra::process::spawn: {error}"))
}

/// [`spawn`] linked to the caller: the link exists before the new process can run, so its
/// end (or the caller's) is never missed.
///
/// # Panics
///
/// Outside a process, or when no stack can be had.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     process::trap_exit(true);
///     let child = process::spawn_link(|_: Inbox<()>| panic!("crash"));
///     match inbox.recv() {
///         Signal::Exit { from, reason } => {
///             assert_eq!(from, child.id());
///             assert_eq!(reason, Reason::Panic("crash".into()));
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn spawn_link<M, F>(f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    Builder::new()
        .spawn_link(f)
        .unwrap_or_else(|error| panic!("fibra::process::spawn_link: {error}"))
}

/// [`spawn`] monitored by the caller: the monitor exists before the new process can run.
///
/// # Panics
///
/// Outside a process, or when no stack can be had.
///
/// ```
/// use fibra::process::{self as process, Inbox, Reason, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     let (pid, mref) = process::spawn_monitor(|_: Inbox<()>| process::exit_self(Reason::Shutdown));
///     match inbox.recv() {
///         Signal::Down { mref: m, pid: p, reason } => {
///             assert_eq!((m, reason), (mref, Reason::Shutdown));
///             assert_eq!(p, pid.id());
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[track_caller]
pub fn spawn_monitor<M, F>(f: F) -> (Pid<M>, MonitorRef)
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    Builder::new()
        .spawn_monitor(f)
        .unwrap_or_else(|error| panic!("fibra::process::spawn_monitor: {error}"))
}

/// Makes the process record, ties it to its parent and name, and starts its fiber.
#[track_caller]
pub(crate) fn start<M, F>(
    node: &Arc<Node>,
    builder: Builder,
    parent: Parent,
    f: F,
) -> Result<(Pid<M>, Option<MonitorRef>), SpawnError>
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    if fibra_runtime::Handle::try_current().is_none() {
        panic!("fibra::process: spawn called outside a fibra runtime");
    }
    // A cancellation point, as a send is: a process that was just ended starts nothing more.
    // It is also a second reduction: a spawn costs far more than most operations that charge
    // one, and a loop of spawns still has to end its slice in time.
    fibra_runtime::checkpoint();
    let group = node.root.child();
    let proc = Arc::new(Proc::<M>::new(
        node.clone(),
        group.clone(),
        builder.mailbox_limit,
    ));
    let pid = Pid { proc: proc.clone() };
    let id = pid.id();
    // Tied to its parent first: once it has a name, others can find it and end it.
    let (tie, mref) = match parent {
        Parent::None => (None, None),
        Parent::Main => {
            node.set_main(&id);
            (None, None)
        }
        Parent::Link(parent) => {
            let _ = link_pair(&parent, &id);
            if !parent.proc().core().is_alive() {
                // The caller was ended meanwhile and got no link. Its fiber was cancelled as
                // it was marked ended: it unwinds here, and the new process never runs (an
                // orphan that outlived its parent otherwise).
                fibra_runtime::checkpoint();
            }
            (Some(parent), None)
        }
        Parent::Monitor(parent) => {
            let mref = next_number();
            // Unwinds the caller if it was ended meanwhile: the new process never runs.
            monitor::add(&parent, &id, mref).expect("a new process has not ended");
            (Some(parent), Some(MonitorRef(mref)))
        }
    };
    if let Some(name) = &builder.name {
        if let Err(error) = register(name.clone(), &id) {
            // It never runs: undo the tie without a signal.
            if let Some(parent) = tie {
                match mref {
                    Some(mref) => {
                        monitor::unwatch(&id, mref.0);
                        parent.proc().core().lock().held.remove(&mref.0);
                    }
                    None => {
                        parent.proc().core().lock().links.remove(id.number());
                    }
                }
            }
            return Err(SpawnError::Register(error));
        }
    }
    let mut fiber = fibra_runtime::Builder::new();
    if let Some(name) = builder.name {
        fiber = fiber.name(name);
    }
    if let Some(bytes) = builder.stack_size {
        fiber = fiber.stack_size(bytes);
    }
    node.started();
    let body = {
        let mut run = Run {
            node: node.clone(),
            id: id.clone(),
            unstarted: Some((proc, f)),
        };
        move || {
            let (proc, f) = run.unstarted.take().expect("a fiber runs once");
            run_process(proc, f);
            drop(run);
        }
    };
    // A fiber that cannot start has dropped its body: its `Run` has ended the process, as it
    // ends one killed before it starts, and counted it finished.
    fiber
        .spawn_in(&group, body)
        .map(|_detached| (pid, mref))
        .map_err(SpawnError::Start)
}

/// A process fiber's run, counted by its node until it ends. A process ended (killed, the
/// program ending, or the runtime shutting down) before its fiber first ran never runs: its
/// fiber is dropped unstarted, and this ends the process instead, as the fiber would have.
/// Either way [`Core::ran`](crate::core::Core) opens once the process's function, run or not,
/// is dropped.
struct Run<B> {
    node: Arc<Node>,
    id: ProcessId,
    /// What the fiber runs, until it starts.
    unstarted: Option<B>,
}

impl<B> Drop for Run<B> {
    fn drop(&mut self) {
        if let Some(body) = self.unstarted.take() {
            // Ended from outside: no report.
            end(self.id.clone(), Reason::Killed);
            self.id.proc().discard_mailbox();
            drop(body);
        }
        self.id.proc().core().ran.open();
        self.node.finished();
    }
}

/// The body of a process fiber: `f`, then the process's end.
fn run_process<M, F>(proc: Arc<Proc<M>>, f: F)
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>),
{
    let id = ProcessId(proc.clone());
    current::enter(id.clone(), || {
        let inbox = Inbox::new(proc);
        let core = id.proc().core();
        // Ended before its fiber first ran (killed, or the program is ending): none of its
        // code runs.
        let (reason, by_itself) = if !core.is_alive() || core.node.is_ending() {
            (Reason::Killed, false)
        } else {
            match panic::catch_unwind(AssertUnwindSafe(move || f(inbox))) {
                Ok(()) => (Reason::Normal, true),
                // Ended from outside, which OTP does not report: by a signal (it already has
                // its reason), by its program ending, or by its runtime's shutdown (the end of
                // the processes spawned outside `run`, as a test's).
                Err(payload) if fibra_runtime::is_cancellation(&*payload) => {
                    (Reason::Killed, false)
                }
                Err(payload) => (Reason::Panic(panic_message(&*payload)), true),
            }
        };
        fibra_runtime::shield(|| {
            if by_itself {
                end_self(&id, reason);
            } else {
                end(id.clone(), reason);
            }
        });
        // The fiber may have waited again after its end (in a shield): drop that waker too.
        id.proc().discard_mailbox();
    });
}

/// Ends the calling process `id` with `reason` of its own making, with an error report if
/// that is abnormal (the main process writes none: its end is the program's).
pub(crate) fn end_self(id: &ProcessId, reason: Reason) {
    let core = id.proc().core();
    if !core.is_alive() {
        return;
    }
    if report::is_reported(&reason) && !core.node.is_main(id) && !core.node.is_ending() {
        report::write(id, &reason);
    }
    end(id.clone(), reason);
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic payload that is not a string".to_owned()
    }
}
