//! [`Once`], and the run-once protocol under it, [`OnceCell`](crate::OnceCell) and
//! [`Lazy`](crate::Lazy): one atomic word says incomplete, complete, poisoned, or which caller
//! is running the initializer; the others wait on an [`EventCount`] for it to change.

use crate::event_count::EventCount;
use crate::owner::Owner;
use fibra_runtime::wait::{Deadline, WaitKind, WaitSite};
use std::any::Any;
use std::convert::Infallible;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

const INCOMPLETE: u64 = 0;
const COMPLETE: u64 = 1;
const POISONED: u64 = 2;
// Any other value: the `Owner` running the initializer (all are at least `Owner::MIN`).
const _: () = assert!(Owner::MIN > POISONED);

/// What an initializer that panics leaves behind (a cancelled one always leaves the state
/// incomplete).
#[derive(Clone, Copy)]
pub(crate) enum OnPanic {
    /// Incomplete: a later caller runs its own initializer.
    Retry,
    /// Poisoned for good: every later caller panics, naming the type `what`.
    Poison { what: &'static str },
}

pub(crate) struct OnceState {
    word: AtomicU64,
    changed: EventCount,
}

impl OnceState {
    const_unless_loom! {
        pub(crate) fn new() -> OnceState {
            OnceState {
                word: AtomicU64::new(INCOMPLETE),
                changed: EventCount::new(),
            }
        }
    }

    /// Whether an initializer has completed; what it wrote is then visible.
    pub(crate) fn is_complete(&self) -> bool {
        self.word.load(Ordering::Acquire) == COMPLETE
    }

    /// Runs `init` unless an initializer has completed; parks while another caller runs one.
    /// An `Err` from `init`, or its caller's cancellation, leaves it incomplete. Returns
    /// `init`'s result, or `Ok` if someone else completed.
    ///
    /// Panics if poisoned, or if `init` (directly or not) calls back into the same state.
    /// Runs `init` unless a run completed, waiting while another caller runs it; a wait is
    /// recorded at the caller's location.
    #[track_caller]
    pub(crate) fn run<E>(
        &self,
        on_panic: OnPanic,
        init: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        if self.is_complete() {
            return Ok(());
        }
        self.run_slow(on_panic, init)
    }

    #[cold]
    #[track_caller]
    fn run_slow<E>(
        &self,
        on_panic: OnPanic,
        init: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let me = Owner::current().as_u64();
        loop {
            match self
                .word
                .compare_exchange(INCOMPLETE, me, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    let result = match panic::catch_unwind(AssertUnwindSafe(init)) {
                        Ok(result) => result,
                        Err(payload) => {
                            self.publish(after_unwind(on_panic, &*payload));
                            panic::resume_unwind(payload);
                        }
                    };
                    self.publish(if result.is_ok() { COMPLETE } else { INCOMPLETE });
                    return result;
                }
                Err(COMPLETE) => return Ok(()),
                Err(POISONED) => {
                    let what = match on_panic {
                        OnPanic::Poison { what } => what,
                        OnPanic::Retry => unreachable!("only a poisoning state is poisoned"),
                    };
                    panic!("{what} instance has previously been poisoned");
                }
                Err(owner) if owner == me => panic!(
                    "recursive initialization: the initializer called back into the \
                     once-cell it is initializing, which would deadlock"
                ),
                Err(_) => {
                    let site = WaitSite::new(WaitKind::Once, self);
                    // Without a deadline the wait cannot time out.
                    let _ = self
                        .changed
                        .wait_until(|| !self.is_running(), Deadline::NEVER, &site);
                }
            }
        }
    }

    /// Publishes the initializer's outcome and wakes the waiters.
    fn publish(&self, to: u64) {
        self.word.store(to, Ordering::Release);
        self.changed.advance();
    }

    fn is_running(&self) -> bool {
        self.word.load(Ordering::Acquire) >= Owner::MIN
    }
}

/// The state an unwinding initializer leaves. A cancellation is not a failure of the
/// initializer — the caller's scope gave up on it — so it leaves the state incomplete and a
/// waiter runs the initializer instead; a panic follows `on_panic`.
fn after_unwind(on_panic: OnPanic, payload: &(dyn Any + Send)) -> u64 {
    match on_panic {
        _ if fibra_runtime::is_cancellation(payload) => INCOMPLETE,
        OnPanic::Retry => INCOMPLETE,
        OnPanic::Poison { .. } => POISONED,
    }
}

/// Runs a one-time initialization: the first [`call_once`](Self::call_once) runs its closure,
/// concurrent callers park until it has finished, later ones return at once.
///
/// If the closure panics the `Once` is poisoned for good: every later `call_once` panics. A
/// closure that unwinds because its fiber was cancelled (a timeout, a cancelled scope) does not
/// poison it: the `Once` stays incomplete, and the next caller — a fiber parked on it
/// meanwhile, or a later one — runs its own closure.
///
/// ```
/// use fibra::sync::Once;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// static INIT: Once = Once::new();
/// static RUNS: AtomicUsize = AtomicUsize::new(0);
/// fibra::run(|| {
///     fibra::scope(|s| {
///         for _ in 0..4 {
///             s.spawn(|| INIT.call_once(|| { RUNS.fetch_add(1, Ordering::SeqCst); }));
///         }
///     });
/// });
/// assert_eq!(RUNS.load(Ordering::SeqCst), 1);
/// assert!(INIT.is_completed());
/// ```
pub struct Once {
    state: OnceState,
}

const ONCE: OnPanic = OnPanic::Poison { what: "Once" };

impl Once {
    const_unless_loom! {
        /// A `Once` that has not run.
        ///
        /// ```
        /// assert!(!fibra::sync::Once::new().is_completed());
        /// ```
        pub fn new() -> Once {
            Once {
                state: OnceState::new(),
            }
        }
    }

    /// Runs `f` if no call has completed yet, parking while another caller runs its closure.
    ///
    /// # Panics
    ///
    /// If a closure panicked before (the `Once` is poisoned), and if `f` itself calls
    /// `call_once` on the same `Once` (which would deadlock).
    ///
    /// ```
    /// let once = fibra::sync::Once::new();
    /// let mut runs = 0;
    /// once.call_once(|| runs += 1);
    /// once.call_once(|| runs += 1);
    /// assert_eq!(runs, 1);
    /// ```
    ///
    /// ```should_panic
    /// let once = fibra::sync::Once::new();
    /// let _ = std::panic::catch_unwind(|| once.call_once(|| panic!("boom")));
    /// once.call_once(|| {}); // poisoned
    /// ```
    #[track_caller]
    pub fn call_once(&self, f: impl FnOnce()) {
        let _: Result<(), Infallible> = self.state.run(ONCE, || {
            f();
            Ok(())
        });
    }

    /// Whether a call has completed.
    ///
    /// ```
    /// let once = fibra::sync::Once::new();
    /// once.call_once(|| {});
    /// assert!(once.is_completed());
    /// ```
    pub fn is_completed(&self) -> bool {
        self.state.is_complete()
    }
}

impl Default for Once {
    fn default() -> Self {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once")
            .field("completed", &self.is_completed())
            .finish_non_exhaustive()
    }
}
