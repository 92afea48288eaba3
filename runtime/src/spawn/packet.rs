//! Where a fiber's result waits for its joiner.

use super::error::JoinError;
use super::scope::ScopeState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

pub(crate) struct Packet<T> {
    state: Mutex<State<T>>,
    finished: AtomicBool,
    /// The scope this fiber is a child of: it waits until every child's packet is gone.
    scope: Option<Arc<ScopeState>>,
}

struct State<T> {
    result: Option<Result<T, JoinError>>,
    waker: Option<Waker>,
    /// For a scoped child that panicked: when, among its siblings' panics.
    panic_order: u64,
}

impl<T> Packet<T> {
    pub(crate) fn new(scope: Option<Arc<ScopeState>>) -> Packet<T> {
        Packet {
            state: Mutex::new(State {
                result: None,
                waker: None,
                panic_order: 0,
            }),
            finished: AtomicBool::new(false),
            scope,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // The lock is never held across user code, so poisoning cannot happen; recover anyway.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores the fiber's outcome and wakes the joiner.
    pub(crate) fn complete(&self, result: Result<T, JoinError>) {
        let waker = {
            let mut state = self.lock();
            if let (Err(error), Some(scope)) = (&result, &self.scope) {
                if error.is_panic() {
                    state.panic_order = scope.next_panic_order();
                    // A child's panic cancels its siblings and the scope body.
                    scope.child_panicked();
                }
            }
            state.result = Some(result);
            self.finished.store(true, Ordering::Release);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Takes the outcome if it is there; otherwise leaves `waker` to be woken by `complete`.
    pub(crate) fn poll_take(&self, waker: &Waker) -> Option<Result<T, JoinError>> {
        let mut state = self.lock();
        if let Some(result) = state.result.take() {
            return Some(result);
        }
        match &state.waker {
            Some(old) if old.will_wake(waker) => {}
            _ => state.waker = Some(waker.clone()),
        }
        None
    }

    /// Takes the outcome if it is there.
    pub(crate) fn try_take(&self) -> Option<Result<T, JoinError>> {
        self.lock().result.take()
    }

    /// A scoped child's panic was taken through its join (see `ScopeState::panic_joined`).
    pub(crate) fn panic_joined(&self) {
        if let Some(scope) = &self.scope {
            scope.panic_joined();
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

impl<T> Drop for Packet<T> {
    fn drop(&mut self) {
        let Some(scope) = self.scope.take() else {
            return;
        };
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        // The result may borrow from the scope's environment: it is dropped (or its panic handed
        // to the scope) before the scope learns that this child is gone.
        if let Some(Err(error)) = state.result.take() {
            if let Ok(payload) = error.try_into_panic() {
                scope.record_panic(state.panic_order, payload);
            }
        }
        scope.child_gone();
    }
}
