//! The driver thread, or an attached tokio runtime.

use crate::holds::Holds;
use std::cell::Cell;
use std::fmt;
use std::fs;
use std::io;
use std::panic;
use std::sync::{mpsc, Arc, OnceLock};
use std::thread;
use std::time::Duration;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

/// Where tokio's reactor, timers and blocking pool run for one fibra runtime.
///
/// ```
/// let mut driver = fibra_driver::Driver::start(4).unwrap();
/// let answer = {
///     let _context = driver.enter();
///     std::thread::scope(|_| 42)
/// };
/// assert_eq!(answer, 42);
/// driver.shut_down();
/// ```
pub struct Driver {
    handle: Handle,
    holds: Arc<Holds>,
    /// Our own driver thread and the signal that stops it; `None` when attached.
    own: Option<Own>,
}

struct Own {
    stop: oneshot::Sender<()>,
    thread: thread::JoinHandle<()>,
    /// The thread's kernel id, if it could be read.
    tid: Option<i32>,
}

thread_local! {
    /// Whether this thread is a driver's own thread (see [`on_driver_thread`]).
    static ON_DRIVER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is a driver's own thread: the one thread that runs its reactor
/// and timers, which must never block (every timer and socket of its runtime would wait).
///
/// ```
/// let mut driver = fibra_driver::Driver::start(1).unwrap();
/// assert!(!fibra_driver::on_driver_thread());
/// let on_it = driver.handle().block_on(driver.handle().spawn(async {
///     fibra_driver::on_driver_thread()
/// }));
/// assert!(on_it.unwrap());
/// driver.shut_down();
/// ```
pub fn on_driver_thread() -> bool {
    ON_DRIVER_THREAD.with(Cell::get)
}

/// Whether `handle`'s runtime has timers. tokio has no question for it, but making a timer
/// without them panics at once.
fn has_timers(handle: &Handle) -> bool {
    let _context = handle.enter();
    panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok()
}

/// The calling thread's kernel id, read from `/proc/thread-self` (a link to `<pid>/task/<tid>`).
fn kernel_tid() -> Option<i32> {
    let link = fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// While it lives, tokio resources created on this thread use the driver's reactor and timers.
pub struct EnterGuard<'a>(#[allow(dead_code)] tokio::runtime::EnterGuard<'a>);

impl Driver {
    /// Starts a driver thread: a current-thread tokio runtime with I/O and time enabled and a
    /// blocking pool of at most `blocking_threads` threads.
    ///
    /// # Errors
    ///
    /// When the runtime or its thread cannot be created.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// assert!(driver.is_own_thread());
    /// driver.shut_down();
    /// ```
    pub fn start(blocking_threads: usize) -> io::Result<Driver> {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder
            .enable_all()
            .max_blocking_threads(blocking_threads.max(1))
            .thread_name("fibra-blocking");
        // tokio built for loom models has no park hooks; the models do not measure batching.
        #[cfg(not(loom))]
        builder.on_thread_park(crate::batching::before_wait);
        let runtime = builder.build()?;
        let (handle_tx, handle_rx) = mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("fibra-driver".to_owned())
            .spawn(move || {
                ON_DRIVER_THREAD.with(|on| on.set(true));
                let tid = kernel_tid();
                // The handle is sent from inside, so the runtime is running (driving I/O and
                // timers) before anyone can register with it.
                runtime.block_on(async move {
                    handle_tx
                        .send((Handle::current(), tid))
                        .expect("the starter waits for the handle");
                    // An error only means the sender was dropped: stop as well.
                    let _ = stopped.await;
                });
                // Dropping the runtime waits for blocking jobs still running: they cannot be
                // interrupted and run to their end.
                drop(runtime);
            })?;
        let (handle, tid) = handle_rx
            .recv()
            .map_err(|_| io::Error::other("the fibra driver thread died while starting"))?;
        Ok(Driver {
            handle,
            holds: Arc::new(Holds::new()),
            own: Some(Own { stop, thread, tid }),
        })
    }

    /// The process's fallback driver: for timed waits made outside every fibra runtime and
    /// tokio runtime (a future polled by `futures::executor::block_on` on a plain thread), so
    /// that they too go through a driver's timers instead of a thread each. Started on first
    /// use; it lives as long as the process.
    ///
    /// # Panics
    ///
    /// If its thread cannot be started (the process is out of threads or memory).
    ///
    /// ```
    /// let driver = fibra_driver::Driver::fallback();
    /// assert!(std::ptr::eq(driver, fibra_driver::Driver::fallback()));
    /// let timer = {
    ///     let _context = driver.enter();
    ///     fibra_driver::Timer::after(std::time::Duration::from_millis(1))
    /// };
    /// driver.handle().block_on(timer);
    /// ```
    pub fn fallback() -> &'static Driver {
        static FALLBACK: OnceLock<Driver> = OnceLock::new();
        FALLBACK.get_or_init(|| {
            Driver::start(1).unwrap_or_else(|error| {
                panic!("fibra: cannot start the fallback timer driver: {error}")
            })
        })
    }

    /// Uses an existing tokio runtime's reactor, timers and blocking pool; no thread is started.
    ///
    /// # Errors
    ///
    /// When `handle` is a current-thread runtime: fibra's workers would block its one thread,
    /// and then nothing drives its reactor. Use a multi-thread runtime, or let fibra start its
    /// own driver. When `handle`'s runtime has no timers (tokio's panic saying so is printed by
    /// the panic hook on the way).
    ///
    /// ```
    /// let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    /// let driver = fibra_driver::Driver::attach(tokio.handle().clone()).unwrap();
    /// assert!(!driver.is_own_thread());
    /// ```
    pub fn attach(handle: Handle) -> io::Result<Driver> {
        if handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot attach fibra to a current-thread tokio runtime: fibra's workers would \
                 block its only thread and nothing would drive its reactor; use a multi-thread \
                 tokio runtime (#[tokio::main(flavor = \"multi_thread\")]) or leave out \
                 `tokio_handle` so that fibra starts its own driver",
            ));
        }
        if !has_timers(&handle) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot attach fibra to a tokio runtime without timers: every timed wait of a \
                 fiber is a timer on it; build the runtime with `enable_all()` (or \
                 `enable_time()`), or leave out `tokio_handle` so that fibra starts its own \
                 driver",
            ));
        }
        Ok(Driver {
            handle,
            holds: Arc::new(Holds::new()),
            own: None,
        })
    }

    /// The tokio handle of the driver's runtime.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// let value = std::thread::scope(|_| driver.handle().block_on(async { 7 }));
    /// assert_eq!(value, 7);
    /// driver.shut_down();
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Enters the driver's context on the calling thread until the guard drops.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// {
    ///     let _context = driver.enter();
    ///     assert!(tokio::runtime::Handle::try_current().is_ok());
    /// }
    /// driver.shut_down();
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard(self.handle.enter())
    }

    /// The open holds of this driver's waits.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// assert!(driver.holds().snapshot().is_empty());
    /// driver.shut_down();
    /// ```
    pub fn holds(&self) -> &Arc<Holds> {
        &self.holds
    }

    /// Whether the driver runs on a thread of its own (rather than an attached runtime).
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// assert!(driver.is_own_thread());
    /// driver.shut_down();
    /// ```
    pub fn is_own_thread(&self) -> bool {
        self.own.is_some()
    }

    /// The kernel id of the driver's own thread (as listed in `/proc/self/task`); `None` when
    /// attached, or if it could not be read.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// assert!(driver.os_thread_id().is_some());
    /// driver.shut_down();
    /// ```
    pub fn os_thread_id(&self) -> Option<i32> {
        self.own.as_ref().and_then(|own| own.tid)
    }

    /// Stops and joins the driver thread (waiting for blocking jobs that still run). Attached
    /// runtimes are left alone. Idempotent.
    ///
    /// ```
    /// let mut driver = fibra_driver::Driver::start(1).unwrap();
    /// driver.shut_down();
    /// driver.shut_down();
    /// ```
    pub fn shut_down(&mut self) {
        if let Some(own) = self.own.take() {
            // An error means the thread already stopped.
            let _ = own.stop.send(());
            if let Err(payload) = own.thread.join() {
                if !thread::panicking() {
                    std::panic::resume_unwind(payload);
                }
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("own_thread", &self.is_own_thread())
            .field("holds", &self.holds.len())
            .finish()
    }
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnterGuard")
    }
}
