//! What the runtime does about a deadlock it finds, and the panic payload of `Deadlock::Panic`.

use std::fmt;
use std::sync::Arc;

/// What a runtime does when it finds a deadlock: set with
/// [`RuntimeBuilder::on_deadlock`](crate::RuntimeBuilder::on_deadlock), else from the
/// environment variable `FIBRA_DEADLOCK` (`report`, `panic` or `off`), else `Report`.
///
/// A cycle (fibers each waiting for a mutex, reentrant mutex, `RwLock` writer or join that
/// the next one holds) is found when the worker of its last fiber to wait next looks: before
/// that worker sleeps, or within a few milliseconds while it stays busy. Every fiber
/// being asleep is found when the last worker goes to sleep, and reported only if nothing
/// outside the fibers could wake one: no timer, blocking job, socket or future is waited for
/// (see [`Runtime::holds`](crate::Runtime::holds)), no tokio task but the runtime's own runs
/// on its driver, and every other thread of the process is blocked either in a wait without
/// a deadline on a fibra lock, channel, join or other primitive, or in a wait it has been in
/// since before the runtime was built. A thread blocked anywhere else (on a tokio timer or
/// socket, which the runtime's own driver may serve, or on a `std` channel) may still wake a
/// fiber, and keeps the check silent.
///
/// Calls between processes (`fibra::process::call`) are not part of the cycle check: a
/// request may be forwarded, and the reply come from a process other than the one called, so
/// processes calling each other are no certain deadlock (a call's timeout ends such a wait);
/// the dump shows them.
///
/// A lock's owner, for the cycle check, is the fiber that took it. The guards of `Mutex` and
/// of `RwLock`'s writer are `Send` (async code holds them across `.await`), so a guard can be
/// moved to another fiber or thread while held; it then still counts as its taker's, and a
/// cycle through it can be reported that is none (under `Panic`, its fibers unwound). Where
/// deadlocks are looked for, keep a guard in the fiber that took it.
///
/// ```
/// let runtime = fibra::Runtime::builder()
///     .on_deadlock(fibra::Deadlock::Panic)
///     .build()
///     .unwrap();
/// runtime.block_on(|| ());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Deadlock {
    /// Report it once, through `tracing::error!` and on stderr; the fibers stay blocked.
    #[default]
    Report,
    /// Report it, then unwind every fiber of the cycle with a [`Deadlocked`] panic (for a
    /// global deadlock: every fiber). A fiber waiting inside a [`shield`](crate::shield) is
    /// not unwound: it goes on waiting, and the others' unwinding may free it (a scope waiting
    /// for its children waits while they unwind, then re-raises their panics); the verdict
    /// does not outlive that wait.
    Panic,
    /// Look for nothing.
    Off,
}

impl Deadlock {
    /// Parses `FIBRA_DEADLOCK`'s value.
    pub(crate) fn parse(value: &str) -> Option<Deadlock> {
        match value.to_ascii_lowercase().as_str() {
            "report" => Some(Deadlock::Report),
            "panic" => Some(Deadlock::Panic),
            "off" => Some(Deadlock::Off),
            _ => None,
        }
    }
}

/// The panic payload a fiber unwinds with when it was part of a deadlock and the policy is
/// [`Deadlock::Panic`]; its `Display` is the report.
///
/// ```
/// use fibra::sync::Mutex;
/// use std::sync::Arc;
///
/// let runtime = fibra::Runtime::builder()
///     .workers(1)
///     .on_deadlock(fibra::Deadlock::Panic)
///     .build()
///     .unwrap();
/// runtime.block_on(|| {
///     let me = fibra::current().id();
///     let (a, b) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
///     let held = a.lock();
///     let (a2, b2) = (a.clone(), b.clone());
///     let other = fibra::spawn(move || {
///         let _b = b2.lock();
///         let _a = a2.lock();
///     });
///     while !b.is_locked() {
///         fibra::sleep(std::time::Duration::from_millis(1)); // `other` takes `b`
///     }
///     let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.lock()));
///     let payload = outcome.err().expect("the cycle unwinds this fiber");
///     let report = payload.downcast_ref::<fibra::Deadlocked>().unwrap();
///     assert!(report.to_string().contains(&format!("fiber {me}")));
///     drop(held);
///     assert!(other.join().unwrap_err().into_panic().is::<fibra::Deadlocked>());
/// });
/// ```
#[derive(Clone)]
pub struct Deadlocked {
    report: Arc<str>,
}

impl Deadlocked {
    pub(crate) fn new(report: Arc<str>) -> Deadlocked {
        Deadlocked { report }
    }

    /// The report, as printed.
    pub fn report(&self) -> &str {
        &self.report
    }
}

impl fmt::Display for Deadlocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.report)
    }
}

impl fmt::Debug for Deadlocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadlocked").finish_non_exhaustive()
    }
}
