//! The runtime: building it, running the main fiber, handles, and shutting down.

use crate::config::Requested;
use crate::diag::{Deadlock, Dump};
use crate::fiber::{Core, Entry, Fiber};
use crate::metrics::RuntimeMetrics;
use crate::sched::{describe_running, run_worker, with_running, with_worker, Local, Shared};
use crate::spawn::{complete, create, Builder, JoinHandle, Joined, Packet, Pinned, Spec};
use crate::stack::{install_overflow_handler, StackError};
use crossbeam_deque::Worker;
use fibra_driver::{Driver, HoldInfo};
use std::fmt;
use std::io;
use std::panic;
use std::sync::Arc;
use std::thread;

/// A fibra runtime: `N` worker threads running fibers.
///
/// The thread that calls [`Runtime::block_on`] becomes worker 0 and runs the main fiber; the
/// other workers start at [`RuntimeBuilder::build`].
///
/// # Shutdown
///
/// When the main fiber has returned, `block_on` waits for the fibers started with
/// [`detach`](crate::detach) (see [`RuntimeBuilder::shutdown_timeout`]) — not for fibers whose
/// [`JoinHandle`](crate::JoinHandle) was dropped — then cancels every fiber still running,
/// those included: each unwinds
/// from the wait it is parked in (or at its next cancellation point), so its destructors run,
/// exactly once, and its join reports [`JoinError`](crate::JoinError) `is_cancelled()`; inside,
/// [`check_cancel`](crate::check_cancel) reports [`CancelCause::Shutdown`](crate::CancelCause).
/// A fiber that has not started is dropped without running (its closure is dropped; its join
/// reports cancellation too). The unwinding is waited for up to the shutdown timeout (one
/// second without one). Then every worker thread is joined and every pooled stack unmapped. A
/// fiber still running after that wait (it shields or ignores its cancellation, or spins
/// without a cancellation point) is abandoned: never resumed again, its stack left mapped
/// (its frames may be borrowed from), its destructors not run. Dropping a
/// [`BackgroundRuntime`], or a `Runtime` used only through its [`Handle`]s, shuts down the same
/// way, without the wait for `detach`ed fibers.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// struct Counted(Arc<AtomicUsize>);
/// impl Drop for Counted {
///     fn drop(&mut self) {
///         self.0.fetch_add(1, Ordering::SeqCst);
///     }
/// }
///
/// let drops = Arc::new(AtomicUsize::new(0));
/// let held = Counted(drops.clone());
/// let fiber = fibra::Runtime::builder().build()?.block_on(move || {
///     let (started, wait) = fibra::chan::bounded(1);
///     let fiber = fibra::spawn(move || {
///         let _held = held;
///         started.send(()).unwrap();
///         fibra::sleep(std::time::Duration::from_secs(3600));
///     });
///     wait.recv().unwrap();
///     fiber
/// });
/// // The sleeper was unwound at shutdown: its value was dropped.
/// assert_eq!(drops.load(Ordering::SeqCst), 1);
/// assert!(fiber.join().unwrap_err().is_cancelled());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(2).build()?;
/// let answer = runtime.block_on(|| fibra::spawn(|| 42).join().unwrap());
/// assert_eq!(answer, 42);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    /// Taken by shutdown, which stops it last.
    driver: Option<Driver>,
    threads: Vec<thread::JoinHandle<()>>,
    /// Worker 0's queue of unstarted fibers, until `block_on` runs worker 0.
    first: Option<Worker<Arc<Core>>>,
    /// The task printing dumps on `FIBRA_DUMP_SIGNAL`, stopped at shutdown.
    dump_on_signal: Option<tokio::task::AbortHandle>,
}

/// Configures a [`Runtime`]: `Runtime::builder().workers(4).build()`.
///
/// Every setting falls back to an environment variable, then to a default: workers
/// (`FIBRA_WORKERS`, else `available_parallelism()`), fiber stack size (`FIBRA_STACK_SIZE`,
/// 1 MiB), main fiber stack size (`FIBRA_MAIN_STACK_SIZE`, 8 MiB), the monitor's threshold
/// (`FIBRA_STUCK_MS`, 50, see [`stuck_threshold`](Self::stuck_threshold)). A bad value is
/// reported in one line on stderr and the fallback used. `FIBRA_DUMP_SIGNAL` names a signal
/// that prints a dump (see [`dump`](crate::dump)).
///
/// ```
/// let runtime = fibra::Runtime::builder()
///     .workers(1)
///     .stack_size(128 * 1024)
///     .reductions(1000)
///     .build()
///     .unwrap();
/// runtime.block_on(|| assert_eq!(fibra::current_worker(), Some(0)));
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a RuntimeBuilder does nothing until `build` is called"]
pub struct RuntimeBuilder {
    requested: Requested,
    tokio: Option<tokio::runtime::Handle>,
}

impl RuntimeBuilder {
    /// Worker threads, including the one that calls `block_on`; at most 1024. `workers(0)`
    /// is reported in one line on stderr and the default used, as `FIBRA_WORKERS=0` is.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(3).build().unwrap();
    /// assert_eq!(runtime.handle().workers(), 3);
    /// ```
    pub fn workers(mut self, workers: usize) -> RuntimeBuilder {
        self.requested.workers = Some(workers);
        self
    }

    /// Default usable stack size of spawned fibers, in bytes.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().stack_size(64 * 1024).build().unwrap();
    /// runtime.block_on(|| fibra::spawn(|| ()).join().unwrap());
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> RuntimeBuilder {
        self.requested.stack_size = Some(bytes);
        self
    }

    /// Usable stack size of the main fiber, in bytes.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().main_stack_size(1 << 20).build().unwrap();
    /// runtime.block_on(|| ());
    /// ```
    pub fn main_stack_size(mut self, bytes: usize) -> RuntimeBuilder {
        self.requested.main_stack_size = Some(bytes);
        self
    }

    /// Reductions per slice (default 4000): after this many runtime operations a fiber goes to
    /// the back of its worker's ready queue at its next one.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().reductions(10).build().unwrap();
    /// runtime.block_on(|| fibra::checkpoint());
    /// ```
    pub fn reductions(mut self, reductions: u32) -> RuntimeBuilder {
        self.requested.reductions = Some(reductions);
        self
    }

    /// Finished fibers' stacks each worker keeps warm per stack size (default 4096). Memory of
    /// stacks returned beyond that goes back to the kernel, lazily (the kernel takes it under
    /// memory pressure), once no fiber has reused it for 50 to 100 ms, or sooner when the
    /// worker goes idle (but for a few returned since its last 50 ms mark). So a burst of
    /// fibers that comes again soon reuses its stacks without system calls or page faults.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).warm_stacks(8).build().unwrap();
    /// let stacks = runtime.block_on(|| {
    ///     let burst: Vec<_> = (0..100).map(|_| fibra::spawn(fibra::yield_now)).collect();
    ///     burst.into_iter().for_each(|fiber| fiber.join().unwrap());
    ///     // Once the worker has gone idle (it spins a moment first, longer than a sleep of
    ///     // this fiber may last), it keeps only its warm stacks.
    ///     let warm = || fibra::Handle::current().metrics().stacks.warm;
    ///     while warm() > 8 {
    ///         fibra::sleep(std::time::Duration::from_millis(5));
    ///     }
    ///     fibra::Handle::current().metrics().stacks
    /// });
    /// assert_eq!((stacks.warm, stacks.in_use), (8, 1));
    /// ```
    pub fn warm_stacks(mut self, stacks: usize) -> RuntimeBuilder {
        self.requested.warm_stacks = Some(stacks);
        self
    }

    /// Bound on blocking-pool threads (default 64, or `FIBRA_BLOCKING_THREADS`), used by
    /// [`blocking`](crate::blocking). Ignored with [`tokio_handle`](Self::tokio_handle), whose
    /// runtime's pool is used. `blocking_threads(0)` is reported in one line on stderr and the
    /// default used, as `FIBRA_BLOCKING_THREADS=0` is.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().blocking_threads(4).build().unwrap();
    /// assert_eq!(runtime.block_on(|| fibra::blocking(|| 2 + 2)), 4);
    /// ```
    pub fn blocking_threads(mut self, threads: usize) -> RuntimeBuilder {
        self.requested.blocking_threads = Some(threads);
        self
    }

    /// How long [`Runtime::block_on`] (and [`run`]) wait for the fibers started with
    /// [`detach`](crate::detach) once the main fiber has returned; the ones still running then
    /// are cancelled, and waited for as long again. Without it they are waited for without
    /// bound. (Fibers whose `JoinHandle` was dropped are not waited for: they are cancelled.)
    ///
    /// A [`blocking`](crate::blocking) job that is already running on the pool cannot be
    /// interrupted: its fiber's cancellation discards its result, but the runtime's end still
    /// waits for the job to return (its thread belongs to the runtime's driver). Keep jobs
    /// short, or give them their own way to stop.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder()
    ///     .shutdown_timeout(std::time::Duration::from_millis(10))
    ///     .build()
    ///     .unwrap();
    /// runtime.block_on(|| fibra::detach(|| fibra::sleep(std::time::Duration::from_secs(3600))));
    /// ```
    pub fn shutdown_timeout(mut self, timeout: std::time::Duration) -> RuntimeBuilder {
        self.requested.shutdown_timeout = Some(timeout);
        self
    }

    /// Whether a panic in a fiber of this runtime is reported with the fiber's name and id
    /// (default `true`): `fiber 'parser' (id 7) panicked at src/parse.rs:3:5:` and the message,
    /// instead of std's `thread 'fibra-worker-1' panicked at …`, which names whichever worker
    /// ran the fiber. The first runtime built with it installs a panic hook, once per process,
    /// that hands every other panic (and with `false`, every panic in this runtime's fibers)
    /// to the hook set before it; a hook set later replaces it, as `std::panic::set_hook` does.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().panic_hook(false).build().unwrap();
    /// // A panic in this runtime's fibers is reported by the previous (here std's) hook.
    /// let result = runtime.block_on(|| fibra::spawn(|| panic!("as std reports it")).join());
    /// assert!(result.unwrap_err().is_panic());
    /// ```
    pub fn panic_hook(mut self, enabled: bool) -> RuntimeBuilder {
        self.requested.panic_hook = Some(enabled);
        self
    }

    /// What the runtime does when it finds fibers deadlocked (default [`Deadlock::Report`], or
    /// the environment variable `FIBRA_DEADLOCK`: `report`, `panic`, `off`).
    ///
    /// A deadlock found is a cycle of fibers, each waiting without a deadline for a resource
    /// with one owner — a `fibra::sync::Mutex`, a `fibra::sync::ReentrantMutex`, a
    /// `fibra::sync::RwLock`'s writer, or a fiber joined through its
    /// [`JoinHandle`](crate::JoinHandle) — that the next
    /// fiber of the cycle holds. It is looked for when a fiber starts such a wait and reported
    /// once, through `tracing::error!` and on stderr, naming every fiber of the cycle, what it
    /// waits for and where, and where its owner took it.
    ///
    /// ```
    /// use fibra::sync::Mutex;
    ///
    /// let runtime = fibra::Runtime::builder()
    ///     .on_deadlock(fibra::Deadlock::Panic)
    ///     .build()
    ///     .unwrap();
    /// runtime.block_on(|| {
    ///     let lock = Mutex::new(());
    ///     let _held = lock.lock();
    ///     // Waiting for a lock this fiber holds is a cycle of one.
    ///     let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lock.lock()));
    ///     assert!(outcome.unwrap_err().is::<fibra::Deadlocked>());
    /// });
    /// ```
    pub fn on_deadlock(mut self, policy: Deadlock) -> RuntimeBuilder {
        self.requested.deadlock = Some(policy);
        self
    }

    /// How long a fiber may run without suspending, or block its worker thread in a call that
    /// is not a fibra wait, before the runtime's monitor warns (default 50 ms, or the
    /// environment variable `FIBRA_STUCK_MS`, in milliseconds).
    ///
    /// The monitor is a thread that looks at the workers every few milliseconds while fibers
    /// run (and sleeps while none does). A fiber that has run one slice for half this
    /// threshold is asked to yield at its next [`checkpoint`](crate::checkpoint) (or other
    /// runtime operation), so a fiber whose operations are few but slow (large writes to a
    /// socket whose peer keeps up, say) yields before the threshold. For a fiber that still runs one slice longer
    /// than this, the monitor warns once, through `tracing::warn!` and on stderr, naming the
    /// fiber and where it was spawned: one that computes without reaching a runtime operation,
    /// or one whose thread sleeps in a blocking call, reported with the ready fibers stuck
    /// behind it and the advice to move the call to [`blocking`](crate::blocking) (or to use
    /// `fibra::fs` for files). It also watches the driver thread, where the runtime's timers
    /// and sockets are served, and where a `tokio::spawn` made in a fiber runs its task: a
    /// task that blocks there stops every timer and socket of the runtime, and is reported
    /// with the stall's length. Spawn blocking work with [`blocking`](crate::blocking)
    /// instead, and CPU-heavy async work onto a tokio runtime of your own (or attach fibra to
    /// it with [`tokio_handle`](Self::tokio_handle)).
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder()
    ///     .stuck_threshold(std::time::Duration::from_millis(200))
    ///     .build()
    ///     .unwrap();
    /// runtime.block_on(|| fibra::checkpoint());
    /// ```
    pub fn stuck_threshold(mut self, threshold: std::time::Duration) -> RuntimeBuilder {
        self.requested.stuck = Some(threshold);
        self
    }

    /// How long an idle worker leaves a lone unstarted fiber to its spawner's worker.
    #[cfg(test)]
    pub(crate) fn steal_grace(mut self, grace: std::time::Duration) -> RuntimeBuilder {
        self.requested.steal_grace = Some(grace);
        self
    }

    /// Attaches to an existing multi-thread tokio runtime instead of starting a driver thread:
    /// its reactor, timers and blocking pool serve the fibers.
    ///
    /// [`build`](Self::build) fails for a current-thread runtime, whose one thread fibra's
    /// workers would block, and for one without timers, which every timed wait of a fiber
    /// needs.
    ///
    /// The tokio runtime must outlive this one, as it must outlive its own tasks: once it is
    /// shut down, a fiber's timer or socket wait panics with tokio's message that its runtime
    /// is shutting down (as a tokio task's would).
    ///
    /// ```
    /// let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    /// let runtime = fibra::Runtime::builder()
    ///     .tokio_handle(tokio.handle().clone())
    ///     .build()
    ///     .unwrap();
    /// runtime.block_on(|| fibra::sleep(std::time::Duration::from_millis(1)));
    /// ```
    pub fn tokio_handle(mut self, handle: tokio::runtime::Handle) -> RuntimeBuilder {
        self.tokio = Some(handle);
        self
    }

    /// Starts the driver (unless attached) and the worker threads (all but worker 0, which is
    /// `block_on`'s caller).
    ///
    /// # Errors
    ///
    /// When a worker or the driver thread cannot be spawned, or the attached tokio runtime is
    /// a current-thread one or has no timers.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().build()?;
    /// runtime.block_on(|| ());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(self) -> io::Result<Runtime> {
        let config = self.requested.resolve();
        install_overflow_handler(describe_running);
        if config.panic_hook {
            crate::panic_hook::install();
        }
        let driver = match self.tokio {
            Some(handle) => Driver::attach(handle)?,
            None => Driver::start(config.blocking_threads)?,
        };
        let mut deques: Vec<Worker<Arc<Core>>> =
            (0..config.workers).map(|_| Worker::new_lifo()).collect();
        let stealers = deques.iter().map(Worker::stealer).collect();
        let shared = Arc::new(Shared::new(config, stealers, &driver));
        let mut runtime = Runtime {
            shared: shared.clone(),
            driver: Some(driver),
            threads: Vec::with_capacity(deques.len()),
            first: None,
            dump_on_signal: None,
        };
        let rest = deques.split_off(1);
        runtime.first = deques.pop();
        for (offset, deque) in rest.into_iter().enumerate() {
            let index = offset + 1;
            let shared = shared.clone();
            let thread = thread::Builder::new()
                .name(format!("fibra-worker-{index}"))
                .spawn(move || run_worker(&Local::new(index, shared, deque)))?;
            runtime.threads.push(thread);
        }
        runtime.threads.push(crate::diag::start_sysmon(&shared)?);
        runtime.dump_on_signal = shared
            .config
            .dump_signal
            .and_then(|signal| crate::diag::print_dump_on(&shared, signal));
        Ok(runtime)
    }
}

impl Runtime {
    /// A runtime with every setting from the environment or its default.
    ///
    /// # Errors
    ///
    /// As [`RuntimeBuilder::build`].
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?;
    /// assert_eq!(runtime.block_on(|| 1), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> io::Result<Runtime> {
        Runtime::builder().build()
    }

    /// A builder to configure a runtime.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// runtime.block_on(|| ());
    /// ```
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// A handle for spawning onto this runtime from anywhere.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let handle = runtime.handle();
    /// let fiber = handle.spawn(|| 5);
    /// runtime.block_on(move || assert_eq!(fiber.join().unwrap(), 5));
    /// ```
    pub fn handle(&self) -> Handle {
        Handle {
            shared: self.shared.clone(),
        }
    }

    /// The pending external waits (timers, blocking jobs, pending futures), oldest first.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().build().unwrap();
    /// assert!(runtime.holds().is_empty());
    /// ```
    pub fn holds(&self) -> Vec<HoldInfo> {
        self.shared.holds.snapshot()
    }

    /// A dump of the runtime: its fibers, workers and open holds (see [`Handle::dump`]).
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// assert!(runtime.dump().fibers.is_empty());
    /// assert_eq!(runtime.dump().workers.len(), 2);
    /// ```
    pub fn dump(&self) -> Dump {
        Dump::of(&self.shared)
    }

    /// A snapshot of the runtime's counters (see [`Handle::metrics`]).
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let metrics = runtime.metrics();
    /// assert_eq!(metrics.workers.len(), 2);
    /// assert_eq!(metrics.spawned, 0);
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        crate::metrics::snapshot(&self.shared)
    }

    /// Waits until no detached fiber runs (see [`Handle::drain_detached`]).
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?.into_background()?;
    /// runtime.handle().spawn(|| fibra::detach(|| ())).join().unwrap();
    /// runtime.handle().drain_detached();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn drain_detached(&self) {
        self.handle().drain_detached();
    }

    /// As [`drain_detached`](Self::drain_detached), for at most `timeout`; true if none runs.
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?;
    /// assert!(runtime.drain_detached_timeout(std::time::Duration::from_millis(1)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn drain_detached_timeout(&self, timeout: std::time::Duration) -> bool {
        self.handle().drain_detached_timeout(timeout)
    }

    /// Runs `f` as the main fiber on the calling thread (worker 0), returns its value (or
    /// re-raises its panic), and shuts the runtime down.
    ///
    /// `f` needs neither `Send` nor `'static`: the main fiber never leaves this thread, and this
    /// call does not return before it has finished.
    ///
    /// # Panics
    ///
    /// When called from inside a fiber; when the main fiber's stack cannot be had; and with the
    /// main fiber's panic.
    ///
    /// ```
    /// let greeting = String::from("hello");
    /// let runtime = fibra::Runtime::builder().build().unwrap();
    /// let length = runtime.block_on(|| greeting.len());
    /// assert_eq!(length, 5);
    /// ```
    #[track_caller]
    pub fn block_on<F, T>(mut self, f: F) -> T
    where
        F: FnOnce() -> T,
    {
        let location = std::panic::Location::caller();
        let deque = self.first.take().expect("worker 0 runs once");
        let local = Local::new(0, self.shared.clone(), deque);
        let shared = self.shared.clone();
        let stop_worker = move |start: Result<(), StackError>, core: *const Core| {
            // Stops worker 0's loop however this ends: a loop left running would wait forever.
            let _stop = StopWorker;
            // SAFETY: `core` is the main fiber's, whose one handle below takes a `T`; what `T`
            // borrows outlives this call, as `f`'s borrows do (see below).
            unsafe { complete(f, start, core) };
            if crate::wait::in_fiber() {
                shared
                    .supervisor
                    .drain_at_exit(shared.config.shutdown_timeout);
                // This fiber is the one left running on purpose.
                shared.unwind_remaining(1, unwind_deadline(&shared));
            }
        };
        let stop_worker: Box<dyn FnOnce(Result<(), StackError>, *const Core) + '_> =
            Box::new(stop_worker);
        // SAFETY: erasing the lifetime of `f`'s borrows is sound because they are not used
        // after this call returns: the main fiber is placed on this thread's ready queue (never
        // stolen) and the worker loop below returns only once it has finished (a worker loop
        // that unwinds aborts the process). An unstarted entry is dropped right here, on this
        // thread, by `abandon` below.
        let stop_worker: Box<dyn FnOnce(Result<(), StackError>, *const Core) + 'static> =
            unsafe { std::mem::transmute(stop_worker) };
        let spec = Spec::main(location, self.shared.config.main_stack_size);
        let main = create(
            &self.shared,
            spec,
            Entry::new(Pinned::new(stop_worker).into_entry()),
            Packet::joined(None),
        )
        .unwrap_or_else(|error| panic!("fibra: cannot create the main fiber: {error}"));
        // SAFETY: the main fiber was made with a joined packet, which its entry completes with
        // a `T`; this is its one handle.
        let joined = unsafe { Joined::<T>::new(Fiber(main.clone())) };
        local.pin(main);
        run_worker(&local);
        self.shut_down();
        // Every other worker has left its loop: what is still queued here can go.
        local.abandon();
        drop(local);
        let result = joined
            .try_take()
            .expect("the worker loop returned before the main fiber finished");
        match result {
            Ok(value) => value,
            Err(error) => panic::resume_unwind(error.into_panic()),
        }
    }

    /// Runs worker 0 on a thread of its own instead of a `block_on` caller, for applications
    /// whose own threads are busy elsewhere (an async `main`): fibers are spawned through
    /// [`BackgroundRuntime::handle`] and joined or awaited from anywhere. Dropping the result
    /// shuts the runtime down.
    ///
    /// # Errors
    ///
    /// When the thread cannot be spawned.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).build()?.into_background()?;
    /// let fiber = runtime.handle().spawn(|| 2 + 3);
    /// assert_eq!(futures::executor::block_on(fiber).unwrap(), 5);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn into_background(mut self) -> io::Result<BackgroundRuntime> {
        self.start_first_worker()?;
        Ok(BackgroundRuntime { runtime: self })
    }

    /// Runs worker 0's loop on a thread of its own.
    fn start_first_worker(&mut self) -> io::Result<()> {
        let deque = self.first.take().expect("worker 0 runs once");
        let shared = self.shared.clone();
        let worker = thread::Builder::new()
            .name("fibra-worker-0".to_owned())
            .spawn(move || run_worker(&Local::new(0, shared, deque)))?;
        self.threads.push(worker);
        Ok(())
    }

    fn shut_down(&mut self) {
        let on_own_worker = with_worker(|local| {
            local.is_some_and(|local| Arc::ptr_eq(local.shared(), &self.shared))
        });
        // Unwinding needs every worker's loop, worker 0's too, and only worker 0 drops what is
        // queued for it: a runtime used only through its handles starts it now. Without a
        // thread for it, the fibers are abandoned, as those a shutdown times out on.
        let first_runs = self.first.is_none() || self.start_first_worker().is_ok();
        // A fiber dropping its own runtime would be unwound by it.
        if first_runs && !on_own_worker {
            self.shared
                .unwind_remaining(0, unwind_deadline(&self.shared));
        }
        self.shared.begin_shutdown();
        if let Some(task) = self.dump_on_signal.take() {
            task.abort();
        }
        let threads = std::mem::take(&mut self.threads);
        let shared = self.shared.clone();
        let driver = self.driver.take();
        let finish = move || {
            for thread in threads {
                // A worker thread never unwinds (its loop aborts instead).
                let _ = thread.join();
            }
            shared.finish_shutdown();
            drop(driver);
        };
        if on_own_worker {
            // Dropped inside one of its own fibers: this thread cannot join itself. The other
            // threads are joined from a thread of their own; this worker leaves its loop when
            // the fiber next suspends (it is abandoned then, as every other fiber).
            let spawned = thread::Builder::new()
                .name("fibra-shutdown".to_owned())
                .spawn(finish);
            if let Err(error) = spawned {
                panic!("fibra: cannot start the thread that shuts the runtime down: {error}");
            }
        } else {
            finish();
        }
    }
}

/// How long shutdown waits for the remaining fibers to unwind when no shutdown timeout is set.
const UNWIND_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Until when shutdown waits for the fibers it cancelled to unwind.
fn unwind_deadline(shared: &Shared) -> crate::wait::Deadline {
    crate::wait::Deadline::after(shared.config.shutdown_timeout.unwrap_or(UNWIND_GRACE))
}

/// Ends worker 0's loop when the main fiber's entry ends, whichever way it ends.
struct StopWorker;

impl Drop for StopWorker {
    fn drop(&mut self) {
        with_worker(|local| {
            local
                .expect("the main fiber runs on worker 0")
                .request_stop()
        });
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.shared.is_shut_down() {
            self.shut_down();
        }
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.shared.workers())
            .finish()
    }
}

/// A runtime whose every worker runs on a thread of its own; see [`Runtime::into_background`].
/// Dropping it shuts the runtime down, as [`Runtime::block_on`] does when it returns.
///
/// Dropping it, or [`shut_down`](Self::shut_down), blocks the calling thread until the
/// fibers have unwound; from async code, call it through tokio's `spawn_blocking`.
///
/// ```
/// let runtime = fibra::Runtime::builder().workers(2).build()?.into_background()?;
/// // Spawn from any thread; join blocks this thread (or `.await` the handle).
/// let fiber = runtime.handle().spawn(|| fibra::current_worker());
/// assert!(fiber.join().unwrap().is_some_and(|worker| worker < 2));
/// runtime.shut_down();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct BackgroundRuntime {
    runtime: Runtime,
}

impl BackgroundRuntime {
    /// A handle for spawning onto the runtime.
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?.into_background()?;
    /// assert_eq!(runtime.handle().spawn(|| 1).join().unwrap(), 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn handle(&self) -> Handle {
        self.runtime.handle()
    }

    /// The pending external waits, oldest first (see [`Runtime::holds`]).
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?.into_background()?;
    /// assert!(runtime.holds().is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn holds(&self) -> Vec<HoldInfo> {
        self.runtime.holds()
    }

    /// Shuts the runtime down now: fibers still running are cancelled and unwound, unstarted
    /// ones dropped (see [`Runtime`]'s shutdown); then every worker and the driver thread are
    /// joined.
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?.into_background()?;
    /// runtime.shut_down();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shut_down(self) {
        drop(self);
    }
}

/// A cheap, clonable reference to a runtime, for spawning onto it from anywhere.
///
/// ```
/// fibra::run(|| {
///     let handle = fibra::Handle::current();
///     let from_thread = std::thread::spawn(move || handle.spawn(|| 7).join().unwrap());
///     assert_eq!(from_thread.join().unwrap(), 7);
/// });
/// ```
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Handle {
    /// The runtime of the calling worker.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime's worker threads.
    ///
    /// ```
    /// fibra::run(|| {
    ///     let handle = fibra::Handle::current();
    ///     assert_eq!(handle.spawn(|| 1).join().unwrap(), 1);
    /// });
    /// ```
    #[track_caller]
    pub fn current() -> Handle {
        crate::spawn::current_handle("fibra::Handle::current")
    }

    /// The runtime of the calling worker, if the caller runs on one.
    ///
    /// ```
    /// assert!(fibra::Handle::try_current().is_none());
    /// ```
    pub fn try_current() -> Option<Handle> {
        with_worker(|local| {
            local.map(|local| Handle {
                shared: local.shared().clone(),
            })
        })
    }

    /// Spawns a fiber onto this runtime, from any thread or fiber.
    ///
    /// # Panics
    ///
    /// When no stack can be had (see [`Builder::spawn`]).
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// let fiber = runtime.handle().spawn(|| "from outside");
    /// runtime.block_on(move || assert_eq!(fiber.join().unwrap(), "from outside"));
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        Builder::new()
            .spawn_on(self, f)
            .unwrap_or_else(|error| panic!("fibra::Handle::spawn: {error}"))
    }

    /// Waits until no detached fiber of this runtime runs (a cancellation point in a fiber).
    /// Once the runtime has shut down it returns at once: no fiber runs any more, and the
    /// detached fibers its shutdown abandoned never will.
    ///
    /// ```
    /// fibra::run(|| {
    ///     fibra::detach(|| fibra::sleep(std::time::Duration::from_millis(1)));
    ///     fibra::Handle::current().drain_detached();
    /// });
    /// ```
    #[track_caller]
    pub fn drain_detached(&self) {
        self.shared.supervisor.drain(crate::wait::Deadline::NEVER);
    }

    /// As [`drain_detached`](Self::drain_detached), for at most `timeout`; true if none runs.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// // The shutdown timeout lets `block_on` cancel the sleeper instead of waiting an hour.
    /// let runtime = fibra::Runtime::builder()
    ///     .shutdown_timeout(Duration::from_millis(1))
    ///     .build()
    ///     .unwrap();
    /// runtime.block_on(|| {
    ///     fibra::detach(|| fibra::sleep(Duration::from_secs(3600)));
    ///     let handle = fibra::Handle::current();
    ///     assert!(!handle.drain_detached_timeout(Duration::from_millis(1)));
    /// });
    /// ```
    #[track_caller]
    pub fn drain_detached_timeout(&self, timeout: std::time::Duration) -> bool {
        self.shared
            .supervisor
            .drain(crate::wait::Deadline::after(timeout))
    }

    /// A dump of this runtime, from any thread: every live fiber (id, name, state, worker,
    /// spawn site, what it waits for and where, how long, whether it is being cancelled),
    /// every worker and the open holds. Safe while fibers run: each fiber is read on its own.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// let handle = runtime.handle();
    /// runtime.block_on(move || {
    ///     let sleeper = fibra::Builder::new()
    ///         .name("sleeper")
    ///         .spawn(|| fibra::sleep(Duration::from_millis(50)))
    ///         .unwrap();
    ///     while fibra::dump().fiber(sleeper.fiber().id().as_u64()).unwrap().state
    ///         != fibra::FiberState::Parked
    ///     {
    ///         fibra::yield_now();
    ///     }
    ///     let dump = handle.dump();
    ///     let info = dump.fiber(sleeper.fiber().id().as_u64()).unwrap();
    ///     assert_eq!(info.wait.as_ref().unwrap().kind, fibra::wait::WaitKind::Sleep);
    ///     assert!(dump.to_string().contains("fiber 2 \"sleeper\" [parked on sleep"));
    ///     sleeper.join().unwrap();
    /// });
    /// ```
    pub fn dump(&self) -> Dump {
        Dump::of(&self.shared)
    }

    /// A snapshot of this runtime's counters, from any thread: fibers live, spawned and
    /// finished; per worker, slices run, steals, parks, wakes through its inbox and sleeps;
    /// the stacks warm and in use; the driver's pending timers and blocking jobs. Reading
    /// costs a pass over the workers; counting costs the workers no atomic read-modify-write.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
    /// let handle = runtime.handle();
    /// runtime.block_on(move || {
    ///     fibra::spawn(|| fibra::yield_now()).join().unwrap();
    ///     let metrics = handle.metrics();
    ///     assert_eq!((metrics.spawned, metrics.finished, metrics.live), (2, 1, 1));
    ///     assert_eq!(metrics.workers[0].steals, 0);
    /// });
    /// ```
    pub fn metrics(&self) -> RuntimeMetrics {
        crate::metrics::snapshot(&self.shared)
    }

    /// The pending external waits of this runtime, oldest first (see [`Runtime::holds`]).
    ///
    /// ```
    /// fibra::run(|| assert!(fibra::Handle::current().holds().is_empty()));
    /// ```
    pub fn holds(&self) -> Vec<HoldInfo> {
        self.shared.holds.snapshot()
    }

    /// Runs `fut` to completion on the calling thread (or fiber) inside the runtime's driver
    /// context, so tokio resources work from a plain thread too (see [`block_on`](crate::block_on)).
    /// In a fiber of this runtime this is [`block_on`](crate::block_on): the context is already
    /// entered. In a fiber of another runtime the context is entered for each poll of `fut`
    /// and left before the fiber parks between polls, so `fut`'s `poll` must not call fibra's
    /// blocking operations (a nested `block_on`, a fibra lock or channel), which may suspend
    /// the fiber even when they need not wait: the worker's other fibers would run inside the
    /// context meanwhile.
    ///
    /// # Panics
    ///
    /// After the runtime has shut down, also when it shuts down while `fut` waits and `fut`
    /// then panics (tokio's futures do once their driver is gone); in a fiber of another
    /// runtime, when a poll of `fut` suspended the fiber.
    ///
    /// ```
    /// let runtime = fibra::Runtime::new()?.into_background()?;
    /// let handle = runtime.handle();
    /// let slept = handle.block_on(async {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     true
    /// });
    /// assert!(slept);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        assert!(
            !self.shared.is_shut_down(),
            "fibra: Handle::block_on called after the runtime shut down"
        );
        let own_fiber =
            with_running(|core| core.is_some_and(|core| Arc::ptr_eq(&core.shared, &self.shared)));
        if own_fiber {
            return crate::block_on(fut);
        }
        // Entered per poll, never across a wait of the caller: a fiber's worker runs other
        // fibers meanwhile, which must not run inside this context, nor enter and leave
        // contexts of their own under it (tokio requires its guards to be left in reverse
        // order). A plain thread's wait inside `fut` blocks the thread; a fiber that suspends
        // inside it has let the worker run others, which is reported.
        let tokio = &self.shared.tokio;
        let mut fut = std::pin::pin!(fut);
        crate::block_on(std::future::poll_fn(move |cx| {
            let resume = with_running(|core| core.map(Core::last_resumed));
            let polled = {
                let _driver = tokio.enter();
                panic::catch_unwind(panic::AssertUnwindSafe(|| fut.as_mut().poll(cx)))
            };
            assert!(
                with_running(|core| core.map(Core::last_resumed)) == resume,
                "fibra: a future given to Handle::block_on in a fiber of another runtime \
                 suspended the fiber inside its poll (a fibra blocking operation), with the \
                 handle's runtime context entered: the worker's other fibers ran inside it; \
                 call fibra's blocking operations outside that future"
            );
            polled.unwrap_or_else(|payload| rethrow_after_shutdown(&self.shared, payload))
        }))
    }

    /// The runtime's worker count.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// assert_eq!(runtime.handle().workers(), 2);
    /// ```
    pub fn workers(&self) -> usize {
        self.shared.workers()
    }

    /// The load of each worker, indexed like [`current_worker`](crate::current_worker): the
    /// fibers homed on it (started, or spawned with [`spawn_local`](crate::spawn_local), and
    /// not finished) plus the unstarted fibers handed to it to start. Unstarted fibers that any
    /// worker may still take are not counted. A snapshot for tests, benches and diagnostics:
    /// other workers change it meanwhile.
    ///
    /// ```
    /// let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
    /// let handle = runtime.handle();
    /// runtime.block_on(move || {
    ///     // The main fiber runs on worker 0 and is its only fiber.
    ///     assert_eq!(handle.worker_loads(), [1, 0]);
    /// });
    /// ```
    pub fn worker_loads(&self) -> Vec<usize> {
        self.shared.worker_loads()
    }
}

/// Re-raises the panic of a future polled by [`Handle::block_on`] outside the runtime's fibers:
/// one that came after the runtime shut down (tokio's futures panic once their driver is
/// gone) says that the runtime shut down while the caller waited.
fn rethrow_after_shutdown(shared: &Shared, payload: Box<dyn std::any::Any + Send>) -> ! {
    if !shared.is_shut_down() || crate::is_cancellation(&*payload) {
        panic::resume_unwind(payload);
    }
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic of another type");
    panic!(
        "fibra: the runtime shut down while Handle::block_on waited on a future, which then \
         panicked: {message}"
    );
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("workers", &self.shared.workers())
            .finish()
    }
}

/// Runs `f` as the main fiber of a runtime configured from the environment, returns its value
/// (re-raising its panic), and shuts the runtime down.
///
/// [`#[fibra::main]`](../fibra/attr.main.html) does the same for a program's `main`; for
/// settings other than the environment's, build the runtime with [`RuntimeBuilder`].
///
/// # Panics
///
/// When the runtime cannot start; inside a fiber; with `f`'s panic.
///
/// ```
/// let sum = fibra::run(|| {
///     fibra::scope(|s| {
///         let a = s.spawn(|| 1);
///         let b = s.spawn(|| 2);
///         a.join().unwrap() + b.join().unwrap()
///     })
/// });
/// assert_eq!(sum, 3);
/// ```
#[track_caller]
pub fn run<F, T>(f: F) -> T
where
    F: FnOnce() -> T,
{
    Runtime::new()
        .unwrap_or_else(|error| panic!("fibra::run: cannot start the runtime: {error}"))
        .block_on(f)
}
