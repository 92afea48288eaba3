//! What a mailbox holds.

use crate::{MonitorRef, ProcessId, Reason};

/// One entry of a process's mailbox: a message, or a system signal turned into a message.
///
/// ```
/// use fibra::process::{Reason, Signal};
/// let s: Signal<u32> = Signal::Msg(7);
/// assert_eq!(s.into_msg(), Some(7));
/// ```
#[derive(Debug)]
pub enum Signal<M> {
    /// A message sent with [`Pid::send`](crate::Pid::send).
    Msg(M),
    /// A linked process ended, or someone called [`exit`](crate::exit) on this process; only
    /// delivered as a message while the process traps exits ([`trap_exit`](crate::trap_exit)).
    Exit {
        /// The process the signal came from.
        from: ProcessId,
        /// Its exit reason.
        reason: Reason,
    },
    /// A process this one monitors ended (or did not exist: [`Reason::Noproc`]).
    Down {
        /// The monitor, as returned by [`monitor`](crate::monitor).
        mref: MonitorRef,
        /// The process that ended.
        pid: ProcessId,
        /// Its exit reason.
        reason: Reason,
    },
}

impl<M> Signal<M> {
    /// The message, if this is one.
    pub fn into_msg(self) -> Option<M> {
        match self {
            Signal::Msg(msg) => Some(msg),
            _ => None,
        }
    }

    /// The message, by reference, if this is one.
    ///
    /// ```
    /// let s: fibra::process::Signal<&str> = fibra::process::Signal::Msg("hi");
    /// assert_eq!(s.msg(), Some(&"hi"));
    /// ```
    pub fn msg(&self) -> Option<&M> {
        match self {
            Signal::Msg(msg) => Some(msg),
            _ => None,
        }
    }
}
