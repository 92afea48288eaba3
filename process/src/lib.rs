//! Erlang-style processes on fibra's fibers: typed mailboxes with selective receive, links
//! and exit signals, monitors, registered names, OTP error reports, `call`, ports (external
//! programs as processes) and supervisors.
//!
//! A process is a fiber with a mailbox, an exit reason, links, monitors and an optional
//! registered name, and behaves as an OTP process does: sends never block, messages from one
//! sender arrive in order, a receive takes the oldest matching message, an ended process's
//! links get exit signals in link order and its monitors get `Down` messages, and killing a
//! process unwinds its fiber (its destructors run). Users reach all of this as
//! `fibra::process` and `fibra::receive!`.
//!
//! ```
//! use fibra::process::{self as process, Inbox, Pid, Signal};
//! use std::time::Duration;
//!
//! enum Msg {
//!     Ping(Pid<Msg>),
//!     Pong,
//! }
//!
//! let status = process::run(|inbox: Inbox<Msg>| {
//!     let echo = process::spawn_link(|inbox: Inbox<Msg>| loop {
//!         match inbox.recv() {
//!             Signal::Msg(Msg::Ping(from)) => from.send(Msg::Pong),
//!             _ => break,
//!         }
//!     });
//!     echo.send(Msg::Ping(inbox.pid()));
//!     fibra::process::receive! { inbox,
//!         Signal::Msg(Msg::Pong) => println!("pong"),
//!         after Duration::from_secs(5) => panic!("no pong"),
//!     }
//! });
//! assert_eq!(status, 0);
//! ```
//!
//! Where fibra differs from an OTP node:
//!
//! - An exit signal takes effect when it is sent: the target is no longer alive, its name is
//!   free and its links and monitors are signalled before [`exit`] returns. Its fiber unwinds
//!   at its next cancellation point (every receive, send and blocking fibra call is one), so
//!   a process busy in a computation on another worker runs until it reaches one.
//! - Registered names are shared by every runtime in the OS process.
//! - The error report's timestamp is in UTC (OTP prints local time).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod call;
mod core;
mod current;
mod exits;
mod id;
mod inbox;
mod macros;
mod monitor;
mod node;
mod ordered;
mod port;
mod reason;
mod registry;
mod report;
mod settled;
mod signal;
mod spawn;
mod supervisor;

pub use call::{call, CallError, ReplyTo};
pub use current::{self_id, self_pid};
pub use exits::{exit, exit_self, is_alive, link, trap_exit, unlink, NoProc};
pub use id::{MonitorRef, Pid, ProcessId};
pub use inbox::Inbox;
#[doc(hidden)]
pub use inbox::ReceiveArms;
pub use monitor::{demonitor, monitor, monitor_name};
pub use node::{halt, run, RUNTIME_ERROR_STATUS};
pub use port::{open_port, Port, PortEvent};
pub use reason::Reason;
pub use registry::{
    register, registered, unregister, whereis, whereis_id, RegisterError, WhereisError,
};
pub use signal::Signal;
pub use spawn::{spawn, spawn_link, spawn_monitor, Builder, SpawnError};
pub use supervisor::{
    ChildSpec, ChildState, Restart, Shutdown, Strategy, Supervisor, SupervisorRequest,
};
