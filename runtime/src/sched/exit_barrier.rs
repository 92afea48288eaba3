//! The exit barrier: no worker thread returns (and so runs its thread-local destructors) while
//! a fiber anywhere may still run.
//!
//! A scope body may lend its children a borrow of a thread-local of its worker, and the children
//! may run on other workers. At shutdown every worker leaves its loop at its own next step, so
//! without this barrier one thread could exit and destroy that thread-local while a child on
//! another worker is still mid-slice. Once every worker has left its loop no fiber is ever
//! resumed again, so from then on a thread may exit.

use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Default)]
pub(crate) struct ExitBarrier {
    /// Workers inside their scheduling loop.
    inside: Mutex<usize>,
    all_out: Condvar,
}

impl ExitBarrier {
    fn lock(&self) -> MutexGuard<'_, usize> {
        // Never held across user code.
        self.inside.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker starts its loop.
    pub(crate) fn enter(&self) {
        *self.lock() += 1;
    }

    /// A worker has left its loop: it runs no fiber any more.
    pub(crate) fn leave(&self) {
        let mut inside = self.lock();
        *inside -= 1;
        if *inside == 0 {
            self.all_out.notify_all();
        }
    }

    /// Blocks until no worker is inside its loop.
    pub(crate) fn wait_all_out(&self) {
        let mut inside = self.lock();
        while *inside != 0 {
            inside = self.all_out.wait(inside).unwrap_or_else(|p| p.into_inner());
        }
    }
}
