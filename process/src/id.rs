//! Process identities: the typed [`Pid`], the untyped [`ProcessId`], and [`MonitorRef`].

use crate::core::{AnyProc, Proc};
use crate::Signal;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_NUMBER: AtomicU64 = AtomicU64::new(1);

/// A fresh number for a process or a monitor reference, unique in this OS process.
pub(crate) fn next_number() -> u64 {
    NEXT_NUMBER.fetch_add(1, Ordering::Relaxed)
}

/// The address of a process that takes messages of type `M`.
///
/// Cheap to clone, `Send + Sync`; compares and hashes by identity and prints like OTP
/// (`<0.42.0>`). It stays a valid value after the process ended: [`is_alive`](crate::is_alive)
/// then says false and sends are dropped.
///
/// ```
/// use fibra::process::{self as process, Signal};
///
/// let status = process::run(|inbox: process::Inbox<()>| {
///     let doubler = process::spawn(|inbox: process::Inbox<(u32, process::Pid<u32>)>| {
///         if let Signal::Msg((n, reply)) = inbox.recv() {
///             reply.send(n * 2);
///         }
///     });
///     let me = process::spawn(move |inbox: process::Inbox<u32>| {
///         doubler.send((21, inbox.pid()));
///         assert_eq!(inbox.recv().into_msg(), Some(42));
///     });
///     assert!(format!("{me:?}").starts_with("<0."));
///     let _ = inbox;
/// });
/// assert_eq!(status, 0);
/// ```
pub struct Pid<M> {
    pub(crate) proc: Arc<Proc<M>>,
}

impl<M: Send + 'static> Pid<M> {
    /// Puts `msg` at the end of the process's mailbox and wakes it; never blocks. A message to
    /// a process that has ended is dropped, as in OTP. Messages from one sender arrive in the
    /// order they were sent.
    ///
    /// Sending past the process's mailbox limit ([`Builder::mailbox_limit`](crate::Builder::mailbox_limit))
    /// is a runtime error: the program ends with exit status 70. A send is a cancellation
    /// point, like every blocking fibra operation.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<&'static str>| {
    ///     inbox.pid().send("to myself");
    ///     assert_eq!(inbox.recv().into_msg(), Some("to myself"));
    /// });
    /// ```
    pub fn send(&self, msg: M) {
        // A cancellation point first: a sender that was just killed sends nothing more.
        fibra_runtime::checkpoint();
        self.proc.push(Signal::Msg(msg));
    }

    /// The untyped identity of this process, as links, monitors and names use it.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<u8>| assert_eq!(inbox.pid().id(), process::self_id()));
    /// ```
    pub fn id(&self) -> ProcessId {
        ProcessId(self.proc.clone())
    }
}

impl<M> Clone for Pid<M> {
    fn clone(&self) -> Pid<M> {
        Pid {
            proc: self.proc.clone(),
        }
    }
}

impl<M> PartialEq for Pid<M> {
    fn eq(&self, other: &Pid<M>) -> bool {
        self.proc.core.number == other.proc.core.number
    }
}

impl<M> Eq for Pid<M> {}

impl<M> Hash for Pid<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.proc.core.number.hash(state);
    }
}

impl<M> fmt::Debug for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<0.{}.0>", self.proc.core.number)
    }
}

impl<M> fmt::Display for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The untyped identity of a process, whatever its message type: what links, monitors, names,
/// [`exit`](crate::exit) and the `from`/`pid` fields of [`Signal`] use.
///
/// Compares, hashes and prints (`<0.42.0>`) like its [`Pid`]. Functions that take a process
/// accept a `&Pid<M>` or a `&ProcessId`.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<()>| {
///     let pid = inbox.pid();
///     assert_eq!(pid.id(), process::self_id());
///     assert_eq!(pid.id().to_string(), format!("{pid}"));
/// });
/// ```
#[derive(Clone)]
pub struct ProcessId(pub(crate) Arc<dyn AnyProc>);

impl ProcessId {
    pub(crate) fn number(&self) -> u64 {
        self.0.core().number
    }

    pub(crate) fn proc(&self) -> &dyn AnyProc {
        &*self.0
    }

    /// The typed address of this process, if it takes messages of type `M`.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox};
    ///
    /// process::run(|inbox: Inbox<u8>| {
    ///     let id = process::self_id();
    ///     assert_eq!(id.downcast::<u8>(), Some(inbox.pid()));
    ///     assert_eq!(id.downcast::<String>(), None);
    /// });
    /// ```
    pub fn downcast<M: Send + 'static>(&self) -> Option<Pid<M>> {
        self.0
            .clone()
            .into_any()
            .downcast::<Proc<M>>()
            .ok()
            .map(|proc| Pid { proc })
    }
}

impl PartialEq for ProcessId {
    fn eq(&self, other: &ProcessId) -> bool {
        self.number() == other.number()
    }
}

impl Eq for ProcessId {}

impl Hash for ProcessId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.number().hash(state);
    }
}

impl fmt::Debug for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<0.{}.0>", self.number())
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl<M: Send + 'static> From<&Pid<M>> for ProcessId {
    fn from(pid: &Pid<M>) -> ProcessId {
        pid.id()
    }
}

impl<M: Send + 'static> From<Pid<M>> for ProcessId {
    fn from(pid: Pid<M>) -> ProcessId {
        ProcessId(pid.proc)
    }
}

impl From<&ProcessId> for ProcessId {
    fn from(id: &ProcessId) -> ProcessId {
        id.clone()
    }
}

impl<M: Send + 'static> PartialEq<ProcessId> for Pid<M> {
    fn eq(&self, other: &ProcessId) -> bool {
        self.proc.core.number == other.number()
    }
}

/// A monitor, as returned by [`monitor`](crate::monitor) and named by the `Down` it sends.
/// Prints like OTP's references (`#Ref<0.0.0.42>`).
///
/// ```
/// use fibra::process::{self as process, Inbox, Signal};
///
/// process::run(|inbox: Inbox<()>| {
///     let (pid, mref) = process::spawn_monitor(|_: Inbox<()>| {});
///     match inbox.recv() {
///         Signal::Down { mref: got, pid: who, .. } => {
///             assert_eq!(got, mref);
///             assert_eq!(who, pid.id());
///         }
///         _ => unreachable!(),
///     }
/// });
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MonitorRef(pub(crate) u64);

impl fmt::Debug for MonitorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#Ref<0.0.0.{}>", self.0)
    }
}

impl fmt::Display for MonitorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
