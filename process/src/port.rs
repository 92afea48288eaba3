//! Ports: an external program as a process. The port is a process of its own, linked to the
//! process that opened it (its owner): the program's output and its exit status reach the owner
//! as messages, the owner writes the program's input through the [`Port`], and the program is
//! killed when the port ends for any reason but the program's own exit — its owner ending
//! (however it ends), [`Port::close`], a kill signal, or an abnormal exit signal from a link.

use crate::{exit_self, spawn_link, trap_exit, Pid, ProcessId, Signal};
use fibra_net::os::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
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

/// What the port process takes: the owner's requests, and its output reader's chunks.
enum Request {
    Write(Vec<u8>),
    CloseInput,
    Close,
    Output(Vec<u8>),
    OutputEnded,
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
    /// send, it never blocks the caller; bytes sent after the program closed its input, or
    /// after the port ended, are dropped.
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
/// The port is linked to its owner and ends with it: when the owner ends, however it ends,
/// the program is killed. An abnormal exit signal from any other link ends the port and kills
/// the program too; a normal one is ignored, as an untrapping process ignores it.
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
    let child = command
        .borrow_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (mut program, output) = Program::new(child);
    let os_id = program.child.id();
    // The program is the port's from here on: dropped with the port's function, even if the
    // port is killed before it starts, it is killed.
    let pid = spawn_link(move |inbox: crate::Inbox<Request>| {
        trap_exit(true);
        let owner_id = owner.id();
        // An owner that ended before the port trapped exits sent a signal the port may have
        // ignored (a normal one); it is gone either way.
        if !crate::is_alive(owner_id.clone()) {
            return;
        }
        loop {
            match inbox.recv() {
                Signal::Msg(Request::Write(bytes)) => program.write(&bytes),
                Signal::Msg(Request::CloseInput) => program.input = None,
                Signal::Msg(Request::Output(bytes)) => owner.send(map(PortEvent::Data(bytes))),
                Signal::Msg(Request::OutputEnded) => {
                    if let Ok(status) = program.child.wait() {
                        owner.send(map(PortEvent::Exit(status)));
                    }
                    return;
                }
                Signal::Msg(Request::Close) => return,
                Signal::Exit { from, reason } if from == owner_id => exit_self(reason),
                Signal::Exit { reason, .. } if !reason.is_normal() => exit_self(reason),
                Signal::Exit { .. } | Signal::Down { .. } => {}
            }
        }
    });
    let port = pid.clone();
    fibra_runtime::spawn(move || forward_output(output, &port));
    Ok(Port { pid, os_id })
}

/// The program as the port holds it: killed when the port's function ends, whether it
/// returns, unwinds or is dropped unstarted (a program that exited by itself is only reaped).
struct Program {
    child: Child,
    input: Option<ChildStdin>,
}

impl Program {
    /// The program, holding its input, and its output.
    fn new(mut child: Child) -> (Self, Option<ChildStdout>) {
        let output = child.stdout.take();
        let input = child.stdin.take();
        (Program { child, input }, output)
    }

    fn write(&mut self, bytes: &[u8]) {
        // A program that closed its input takes no more: like OTP, the bytes are dropped.
        if let Some(input) = &mut self.input {
            let _ = input.write_all(bytes);
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Reads the program's output to its end, chunk by chunk, into the port's mailbox. Runs in a
/// fiber of its own so that the port keeps taking requests (and the program never stalls on
/// a full pipe) meanwhile.
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
