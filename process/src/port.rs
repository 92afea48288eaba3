//! Ports: an external program as a process. The port is a process of its own, linked to the
//! process that opened it (its owner): the program's output and its exit status reach the owner
//! as messages, the owner writes the program's input through the [`Port`], and the program is
//! killed when the port ends for any reason but the program's own exit — its owner ending
//! (however it ends), [`Port::close`], a kill signal, or an abnormal exit signal from a link.
//!
//! The port process itself only ever waits on its mailbox, so that it always sees its owner's
//! end and a close: fibers of its own write the program's input, read its output and wait for
//! its exit, each telling the port by message. They run in a scope of the port's function and
//! are cancelled whenever it ends, which closes the pipes and kills the program.

mod input;

use crate::{exit_self, spawn_link, trap_exit, Inbox, MonitorRef, Pid, ProcessId, Reason, Signal};
use fibra_net::os::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use fibra_runtime::{CancelToken, ScopeOptions};
use input::Input;
use std::borrow::BorrowMut;
use std::fmt;
use std::io::{self, Read, Write};

/// How much of the program's output one [`PortEvent::Data`] carries at most.
const CHUNK: usize = 64 * 1024;

/// What a port tells its owner, turned into the owner's message type by the `map` given to
/// [`open_port`].
///
/// ```
/// use fibra::process::PortEvent;
/// let event = PortEvent::Data(b"hi".to_vec());
/// assert!(matches!(event, PortEvent::Data(ref bytes) if bytes == b"hi"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortEvent {
    /// A chunk of the program's standard output, in order.
    Data(Vec<u8>),
    /// The program exited (after its last `Data`); the port ends with reason `normal`.
    Exit(ExitStatus),
}

/// What the port process takes: the owner's requests, and what its fibers learn of the
/// program.
enum Request {
    Write(Vec<u8>),
    CloseInput,
    Close,
    Output(Vec<u8>),
    OutputEnded,
    /// The program exited; `None` if waiting for it failed.
    Exited(Option<ExitStatus>),
}

/// A running external program, opened with [`open_port`]. Cloning gives another handle to the
/// same port; dropping a handle does not close it.
///
/// The port is a process: [`id`](Port::id) is its identity for [`link`](crate::link),
/// [`monitor`](crate::monitor), [`register`](crate::register) and [`exit`](crate::exit).
#[derive(Clone)]
pub struct Port {
    pid: Pid<Request>,
    os_id: u32,
}

impl Port {
    /// Writes `bytes` to the program's standard input, in order with earlier writes. Like a
    /// send, it never blocks the caller, nor the port: bytes the program has not read yet wait
    /// in the port's memory. Bytes sent after the program closed its input, or after the port
    /// ended, are dropped, and so are those still unwritten when the port ends.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, PortEvent, Signal};
    ///
    /// process::run(|inbox: Inbox<PortEvent>| {
    ///     let port = process::open_port(fibra::os::Command::new("cat"), |event| event).unwrap();
    ///     port.send("echo");
    ///     port.close_input();
    ///     let mut echoed = Vec::new();
    ///     loop {
    ///         match inbox.recv() {
    ///             Signal::Msg(PortEvent::Data(bytes)) => echoed.extend(bytes),
    ///             Signal::Msg(PortEvent::Exit(status)) => break assert!(status.success()),
    ///             _ => unreachable!(),
    ///         }
    ///     }
    ///     assert_eq!(echoed, b"echo");
    /// });
    /// ```
    pub fn send(&self, bytes: impl Into<Vec<u8>>) {
        self.pid.send(Request::Write(bytes.into()));
    }

    /// Closes the program's standard input once the bytes sent before are written, so a
    /// program that reads to the end of its input can finish.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, PortEvent, Signal};
    ///
    /// process::run(|inbox: Inbox<PortEvent>| {
    ///     let port = process::open_port(fibra::os::Command::new("wc").arg("-c"), |e| e).unwrap();
    ///     port.send("four");
    ///     port.close_input();
    ///     let Signal::Msg(PortEvent::Data(count)) = inbox.recv() else { unreachable!() };
    ///     assert_eq!(String::from_utf8(count).unwrap().trim(), "4");
    /// });
    /// ```
    pub fn close_input(&self) {
        self.pid.send(Request::CloseInput);
    }

    /// Kills the program and ends the port (reason `normal`, as OTP's `port_close`); its
    /// owner gets no [`PortEvent::Exit`].
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, PortEvent, Reason, Signal};
    ///
    /// process::run(|inbox: Inbox<PortEvent>| {
    ///     let port = process::open_port(fibra::os::Command::new("sleep").arg("30"), |e| e)
    ///         .unwrap();
    ///     let watch = process::monitor(port.id());
    ///     port.close();
    ///     match inbox.recv() {
    ///         Signal::Down { mref, reason, .. } => {
    ///             assert_eq!(mref, watch);
    ///             assert_eq!(reason, Reason::Normal);
    ///         }
    ///         _ => unreachable!(),
    ///     }
    /// });
    /// ```
    pub fn close(&self) {
        self.pid.send(Request::Close);
    }

    /// The port's process identity.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, PortEvent};
    ///
    /// process::run(|_: Inbox<PortEvent>| {
    ///     let port = process::open_port(fibra::os::Command::new("sleep").arg("30"), |e| e)
    ///         .unwrap();
    ///     process::register("a-port", port.id()).unwrap();
    ///     assert_eq!(process::whereis_id("a-port"), Some(port.id()));
    ///     port.close();
    /// });
    /// ```
    pub fn id(&self) -> ProcessId {
        self.pid.id()
    }

    /// The program's OS process id.
    ///
    /// ```
    /// use fibra::process::{self as process, Inbox, PortEvent};
    ///
    /// process::run(|_: Inbox<PortEvent>| {
    ///     let port = process::open_port(fibra::os::Command::new("true"), |e| e).unwrap();
    ///     assert!(port.os_id() > 0);
    /// });
    /// ```
    pub fn os_id(&self) -> u32 {
        self.os_id
    }
}

impl fmt::Debug for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Port")
            .field("id", &self.pid.id())
            .field("os_id", &self.os_id)
            .finish()
    }
}

/// Starts `command` (a `Command` or a `&mut Command`) as a port owned by the calling process (OTP's `open_port` with
/// `{spawn_executable, …}`, `binary` and `exit_status`): the program's standard output arrives
/// in chunks, then its exit status, each as the message `map(event)` in the caller's mailbox.
/// The program's standard input is written with [`Port::send`]; its standard error is
/// inherited.
///
/// The port is linked to its owner and ends with it: when the owner ends, however it ends
/// (and also once the two are unlinked), the program is killed. An abnormal exit signal from any other link ends the port and kills
/// the program too; a normal one is ignored, as an untrapping process ignores it.
///
/// # When the port ends
///
/// The port hears of its owner's end and of [`Port::close`] whatever the program does: while
/// the program reads no input, or has closed its output but runs on. Its [`PortEvent::Exit`]
/// comes once the program has exited *and* its output has reached its end, so that every
/// [`PortEvent::Data`] comes before it; a program whose output is still held open by a
/// process it started keeps its port running until that process closes it too.
///
/// When the port ends for any other reason than the program's exit (its owner's end, a close,
/// an exit signal), the program is sent `SIGKILL` and reaped in the background, and the port
/// closes its ends of both pipes, dropping the input not yet written. Processes the program
/// started (grandchildren) are not killed, as in OTP; but one that still holds the program's
/// output gets `EPIPE` (by default, dies of `SIGPIPE`) at its next write, and one that holds
/// its input reads its end.
///
/// # Errors
///
/// When the program cannot be started (`spawn`'s errors).
///
/// # Panics
///
/// Outside a process, or when the caller's messages are not of type `M`.
///
/// ```
/// use fibra::process::{self as process, Inbox, PortEvent, Signal};
///
/// enum Msg {
///     Port(PortEvent),
/// }
///
/// let status = process::run(|inbox: Inbox<Msg>| {
///     let mut command = fibra::os::Command::new("sh");
///     command.args(["-c", "echo hello; exit 3"]);
///     process::open_port(command, Msg::Port).unwrap();
///     let mut output = Vec::new();
///     let exit = loop {
///         match inbox.recv() {
///             Signal::Msg(Msg::Port(PortEvent::Data(bytes))) => output.extend(bytes),
///             Signal::Msg(Msg::Port(PortEvent::Exit(status))) => break status,
///             _ => unreachable!(),
///         }
///     };
///     assert_eq!(output, b"hello\n");
///     assert_eq!(exit.code(), Some(3));
/// });
/// assert_eq!(status, 0);
/// ```
#[track_caller]
pub fn open_port<M, F>(mut command: impl BorrowMut<Command>, mut map: F) -> io::Result<Port>
where
    M: Send + 'static,
    F: FnMut(PortEvent) -> M + Send + 'static,
{
    let owner = crate::self_pid::<M>();
    // A cancellation point before the program starts: a process killed meanwhile starts none
    // (the port's own spawn below is one too, but by then the program would run).
    fibra_runtime::checkpoint();
    let mut child = command
        .borrow_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let os_id = child.id();
    let input = child.stdin.take();
    let output = child.stdout.take();
    // The program is the port's from here on: dropped with the port's function, even if the
    // port is killed before it starts, it is killed.
    let program = Program(child);
    let pid = spawn_link(move |inbox: Inbox<Request>| {
        trap_exit(true);
        let owner_id = owner.id();
        // The port ends with its owner also once they are unlinked (OTP's connected process):
        // the monitor tells of its end either way, with `noproc` at once if the owner ended
        // before the port trapped exits (its signal, a normal one, may have been ignored).
        let owner_watch = crate::monitor(owner_id.clone());
        let tell_owner = |event| owner.send(map(event));
        serve(
            &inbox,
            &owner_id,
            owner_watch,
            program,
            input,
            output,
            tell_owner,
        );
    });
    Ok(Port { pid, os_id })
}

/// The port's function once it runs: its fibers write, read and wait for the program while
/// it takes requests, until the program has exited and its output ended, or the port is
/// ended. However that is, the fibers are cancelled before it returns or unwinds out.
fn serve(
    inbox: &Inbox<Request>,
    owner_id: &ProcessId,
    owner_watch: MonitorRef,
    program: Program,
    input: Option<ChildStdin>,
    output: Option<ChildStdout>,
    mut tell_owner: impl FnMut(PortEvent),
) {
    let pending = Input::default();
    let stop = CancelToken::new();
    let _ = fibra_runtime::scope_with(ScopeOptions::new().token(stop.clone()), |s| {
        // A scope waits for its children; dropped as the body ends, however it ends, this
        // cancels them instead.
        let _stop = stop.drop_guard();
        match input {
            Some(input) => {
                s.spawn(|| write_input(input, &pending));
            }
            None => pending.discard(),
        }
        let port = inbox.pid();
        let reader = port.clone();
        s.spawn(move || forward_output(output, &reader));
        // The exit is awaited here, not by the port: a program may close its output and run
        // on, and the port must still take its owner's end and a close meanwhile.
        s.spawn(move || {
            let mut program = program;
            let status = program.0.wait().ok();
            port.send(Request::Exited(status));
        });
        let (mut output_ended, mut exited) = (false, None);
        let status = loop {
            match inbox.recv() {
                Signal::Msg(Request::Write(bytes)) => pending.push(bytes),
                Signal::Msg(Request::CloseInput) => pending.close(),
                Signal::Msg(Request::Output(bytes)) => tell_owner(PortEvent::Data(bytes)),
                Signal::Msg(Request::OutputEnded) => output_ended = true,
                Signal::Msg(Request::Exited(status)) => exited = Some(status),
                Signal::Msg(Request::Close) => return,
                Signal::Exit { from, reason } if from == *owner_id => exit_self(reason),
                Signal::Down { mref, reason, .. } if mref == owner_watch => match reason {
                    Reason::Noproc => return,
                    reason => exit_self(reason),
                },
                Signal::Exit { reason, .. } if !reason.is_normal() => exit_self(reason),
                Signal::Exit { .. } | Signal::Down { .. } => {}
            }
            if output_ended {
                if let Some(status) = exited.take() {
                    break status;
                }
            }
        };
        if let Some(status) = status {
            tell_owner(PortEvent::Exit(status));
        }
    });
}

/// The program's process, killed when dropped (one that exited by itself is only reaped): by
/// the port's waiter fiber as it ends or is cancelled, or with the port's function if that
/// never gets to start the waiter.
struct Program(Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

/// Writes the queued input to the program until the input is closed. A program that closed
/// its input takes no more: like OTP, the bytes are dropped.
fn write_input(mut input: ChildStdin, pending: &Input) {
    while let Some(bytes) = pending.next() {
        if input.write_all(&bytes).is_err() {
            break;
        }
    }
    pending.discard();
}

/// Reads the program's output to its end, chunk by chunk, into the port's mailbox, so that
/// the program never stalls on a full pipe while the port takes requests.
fn forward_output(output: Option<ChildStdout>, port: &Pid<Request>) {
    if let Some(mut output) = output {
        let mut buffer = vec![0; CHUNK];
        while let Ok(read @ 1..) = output.read(&mut buffer) {
            port.send(Request::Output(buffer[..read].to_vec()));
        }
    }
    port.send(Request::OutputEnded);
}

impl From<&Port> for ProcessId {
    fn from(port: &Port) -> ProcessId {
        port.id()
    }
}
