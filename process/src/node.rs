//! A node: the processes of one `run` (or, outside `run`, of the whole OS process), and how
//! its program ends.

use crate::spawn::{start, Parent};
use crate::{current, Builder, Inbox, ProcessId, Reason};
use fibra_runtime::CancelGroup;
use futures::task::AtomicWaker;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

/// Exit status of a runtime error (a mailbox limit exceeded), as OTP's runtime errors.
///
/// ```
/// assert_eq!(fibra::process::RUNTIME_ERROR_STATUS, 70);
/// ```
pub const RUNTIME_ERROR_STATUS: i32 = 70;

pub(crate) struct Node {
    /// Every process of the node is in a child group of this one.
    pub(crate) root: CancelGroup,
    /// Whether `run` owns the node; otherwise a halt ends the OS process directly.
    owned: bool,
    main: OnceLock<u64>,
    status: OnceLock<i32>,
    /// Process fibers that have not finished.
    live: AtomicUsize,
    /// The `run` caller, waiting for the status and then for `live` to reach zero.
    waiter: AtomicWaker,
}

/// The node of processes spawned outside any `run`.
static STANDALONE: LazyLock<Arc<Node>> = LazyLock::new(|| Node::new(false));

impl Node {
    fn new(owned: bool) -> Arc<Node> {
        Arc::new(Node {
            root: CancelGroup::new(),
            owned,
            main: OnceLock::new(),
            status: OnceLock::new(),
            live: AtomicUsize::new(0),
            waiter: AtomicWaker::new(),
        })
    }

    /// The caller's node: that of its process (or of the process whose fiber spawned the
    /// caller's), else the standalone one.
    pub(crate) fn current() -> Arc<Node> {
        match current::lineage() {
            Some(id) => id.proc().core().node.clone(),
            None => STANDALONE.clone(),
        }
    }

    pub(crate) fn is_main(&self, id: &ProcessId) -> bool {
        self.main.get() == Some(&id.number())
    }

    pub(crate) fn set_main(&self, id: &ProcessId) {
        let _ = self.main.set(id.number());
    }

    /// Whether the program is ending (its status is set): processes are being unwound.
    pub(crate) fn is_ending(&self) -> bool {
        self.status.get().is_some()
    }

    pub(crate) fn started(&self) {
        self.live.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn finished(&self) {
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.waiter.wake();
        }
    }

    /// A process of the node ended: the program ends with the main process.
    pub(crate) fn ended(&self, id: &ProcessId, reason: &Reason) {
        if self.is_main(id) {
            self.finish(if reason.is_normal() { 0 } else { 1 });
        }
    }

    /// Ends the program with `status` (the first status set wins): every process unwinds.
    fn finish(&self, status: i32) {
        if self.status.set(status).is_ok() {
            self.root.cancel();
            self.waiter.wake();
        }
    }

    /// Ends the program with `status`.
    pub(crate) fn halt(&self, status: i32) {
        if self.owned {
            self.finish(status);
        } else {
            let _ = std::io::stdout().flush();
            std::process::exit(status);
        }
    }

    /// A runtime error: a one-line diagnostic, then the program ends with status 70. Only the
    /// first error of a program is reported: the others happen while it is ending.
    pub(crate) fn runtime_error(&self, message: &str) {
        if self.owned && self.is_ending() {
            return;
        }
        eprintln!("fibra::process: runtime error: {message}");
        self.halt(RUNTIME_ERROR_STATUS);
    }

    /// Waits until the status is set and every process fiber has finished.
    fn wait(&self) -> i32 {
        loop {
            let done = || {
                let status = self.status.get().copied();
                status.filter(|_| self.live.load(Ordering::Acquire) == 0)
            };
            if let Some(status) = done() {
                return status;
            }
            self.waiter.register(&fibra_runtime::wait::current_waker());
            if let Some(status) = done() {
                return status;
            }
            fibra_runtime::wait::park_current();
        }
    }
}

/// Runs `main` as the main process of a program of processes and returns the program's exit
/// status once it has ended: `0` if the main process ended normally (or was ended by an exit
/// signal with reason normal), `1` if it ended otherwise, the status given to [`halt`], or
/// `70` after a runtime error (a mailbox over its limit). When the main process ends, every
/// other process of the program is unwound (its destructors run; no more of its code does)
/// before this returns.
///
/// Called inside a fiber, the program runs on that fiber's runtime; otherwise on a runtime
/// made by [`fibra::run`](fibra_runtime::run). Pass the status to [`std::process::exit`] to end
/// the OS process with it.
///
/// ```
/// use fibra::process::{self as process, Inbox, Signal};
///
/// let status = process::run(|inbox: Inbox<String>| {
///     let me = inbox.pid();
///     process::spawn(move |_: Inbox<()>| me.send("hello".to_owned()));
///     assert_eq!(inbox.recv().into_msg().as_deref(), Some("hello"));
/// });
/// assert_eq!(status, 0);
/// ```
pub fn run<M, F>(main: F) -> i32
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    if fibra_runtime::wait::in_fiber() {
        run_here(main)
    } else {
        fibra_runtime::run(move || run_here(main))
    }
}

fn run_here<M, F>(main: F) -> i32
where
    M: Send + 'static,
    F: FnOnce(Inbox<M>) + Send + 'static,
{
    let node = Node::new(true);
    if let Err(error) = start(&node, Builder::new(), Parent::Main, main) {
        panic!("fibra::process::run: cannot start the main process: {error}");
    }
    node.wait()
}

/// Ends the program with `status`, from any process: [`run`] returns `status` after every
/// process (the caller too) has unwound. Outside `run`, ends the OS process with `status`
/// (after flushing stdout).
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// let status = process::run(|_: Inbox<()>| {
///     process::spawn(|_: Inbox<()>| process::halt(3));
///     loop {
///         fibra::park(); // unwound by the halt
///     }
/// });
/// assert_eq!(status, 3);
/// ```
pub fn halt(status: i32) -> ! {
    Node::current().halt(status);
    // The caller's group is cancelled now: this unwinds it.
    fibra_runtime::checkpoint();
    panic!("fibra::process::halt() called inside fibra::shield, which cannot unwind");
}
