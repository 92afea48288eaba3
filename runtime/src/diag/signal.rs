//! The dump on a signal (`FIBRA_DUMP_SIGNAL`): tokio's signal support turns the signal into
//! a wake of a task on the driver thread, which prints the dump there; nothing but tokio's
//! own async-signal-safe write runs in the signal handler. Under loom, where tokio compiles
//! its signal support out, no signal is watched.

use crate::config::DumpSignal;
use crate::sched::Shared;
use std::sync::Arc;
use tokio::task::AbortHandle;

/// Starts printing a dump to stderr on every `kind` signal; the task ends when aborted (at
/// shutdown) or when the runtime is gone.
#[cfg(not(loom))]
pub(crate) fn print_dump_on(shared: &Arc<Shared>, kind: DumpSignal) -> Option<AbortHandle> {
    use super::Dump;
    use std::sync::Weak;
    use tokio::signal::unix::{signal, SignalKind};

    let (kind, name) = match kind {
        DumpSignal::Quit => (SignalKind::quit(), "SIGQUIT"),
        DumpSignal::Usr1 => (SignalKind::user_defined1(), "SIGUSR1"),
    };
    // Registered here, not in the task, so the signal is caught from the moment `build`
    // returns.
    let registered = {
        let _driver = shared.tokio.enter();
        signal(kind)
    };
    let mut signals = match registered {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("fibra: cannot watch {name} for dumps ({error}); no dump signal");
            return None;
        }
    };
    let runtime: Weak<Shared> = Arc::downgrade(shared);
    let task = super::spawn_own_task(shared, async move {
        while signals.recv().await.is_some() {
            let Some(shared) = runtime.upgrade() else {
                return;
            };
            eprintln!("{}", Dump::of(&shared));
        }
    });
    Some(task)
}

#[cfg(loom)]
pub(crate) fn print_dump_on(_: &Arc<Shared>, _: DumpSignal) -> Option<AbortHandle> {
    None
}
