//! Child processes with the shape of `std::process`: [`Command`] builds and spawns them,
//! [`Child::wait`] parks the calling fiber (no thread per child), and piped stdio is `Read` /
//! `Write` on the driver's reactor.
//!
//! Children are spawned through tokio's process support on the driver. A dropped [`Child`]
//! that is still running is reaped in the background by a process-wide reaper thread (started
//! at the first such drop), never left a zombie, even when its runtime ends before it does.
//!
//! ```
//! use fibra::os::{Command, Stdio};
//! use std::io::{Read, Write};
//!
//! fibra::run(|| {
//!     let mut child = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
//!     let mut stdin = child.stdin.take().unwrap();
//!     let writer = fibra::spawn(move || stdin.write_all(b"through cat").unwrap());
//!     let mut out = String::new();
//!     child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
//!     writer.join().unwrap();
//!     assert_eq!(out, "through cat");
//!     assert!(child.wait().unwrap().success());
//! });
//! ```

mod child;
mod command;
mod pidfd;
mod pipe;
mod reaper;

pub use child::Child;
pub use command::Command;
pub use pipe::{ChildStderr, ChildStdin, ChildStdout};
pub use std::process::{ExitStatus, Output, Stdio};
