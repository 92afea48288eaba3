//! Where a fiber's result waits for its joiner: a part of the fiber's `Core`, so that a spawn
//! allocates once.
//!
//! A joinable fiber's packet has two holders, the fiber's entry and its join handle. The entry
//! lets go once it has stored the result (or, never called, when the `Core` goes), the handle
//! when it is dropped; the last of them ends the packet: an untaken result is dropped (a scoped
//! child's panic handed to its scope) and a scoped child counts as gone.

use super::error::JoinError;
use super::pinned::Pinned;
use super::run_entry;
use super::scope::ScopeState;
use crate::erased::Erased;
use crate::fiber::{Core, Entry, Fiber};
use crate::stack::StackError;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

pub(crate) struct Packet {
    state: Mutex<State>,
    finished: AtomicBool,
    /// Holders that have not let go yet (see the module docs): 2 for a joinable fiber, 0 for
    /// one nobody joins.
    holders: AtomicU8,
    /// The scope this fiber is a child of: it waits until every child's packet has ended.
    scope: Option<Arc<ScopeState>>,
}

struct State {
    /// The outcome: the value erased (the entry and the handle agree on its type), or the error.
    result: Option<Result<Erased, JoinError>>,
    waker: Option<Waker>,
    /// For a scoped child that panicked: when, among its siblings' panics.
    panic_order: u64,
}

impl Packet {
    /// The packet of a fiber that a handle joins, a child of `scope` if there is one.
    pub(crate) fn joined(scope: Option<Arc<ScopeState>>) -> Packet {
        Packet::with_holders(2, scope)
    }

    /// The packet of a fiber nobody joins: unused.
    pub(crate) fn unjoined() -> Packet {
        Packet::with_holders(0, None)
    }

    fn with_holders(holders: u8, scope: Option<Arc<ScopeState>>) -> Packet {
        Packet {
            state: Mutex::new(State {
                result: None,
                waker: None,
                panic_order: 0,
            }),
            finished: AtomicBool::new(false),
            holders: AtomicU8::new(holders),
            scope,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held across user code, so poisoning cannot happen; recover anyway.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores the fiber's outcome, wakes the joiner and lets go of the entry's hold.
    ///
    /// # Safety
    ///
    /// `T` is the type the fiber's handle takes (the `Joined<T>` made with this fiber), this
    /// is the entry's one call, and whatever `T` borrows outlives the packet's end (`T` is
    /// `'static`, or the fiber is a scoped child, whose scope waits for that end).
    pub(crate) unsafe fn complete<T>(&self, result: Result<T, JoinError>) {
        // SAFETY: the borrows are the caller's promise.
        let result = result.map(|value| unsafe { Erased::new(value) });
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
        // Lets go even if the wake panics (a waker from outside the runtime is anyone's code),
        // so the packet ends with the handle, not only when the `Core` goes.
        let _let_go = LetGo(self);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// One holder lets go; the last one ends the packet.
    fn let_go(&self) {
        if self.holders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.end();
        }
    }

    /// Drops a result nobody took (a scoped child's panic goes to its scope instead), then
    /// counts a scoped child gone: the result may borrow from the scope's environment.
    fn end(&self) {
        let (result, panic_order) = {
            let mut state = self.lock();
            (state.result.take(), state.panic_order)
        };
        match (result, &self.scope) {
            (Some(Err(error)), Some(scope)) => {
                if let Ok(payload) = error.try_into_panic() {
                    scope.record_panic(panic_order, payload);
                }
            }
            (Some(result), _) => {
                crate::sched::contain("the drop of a fiber's result nobody took", || drop(result))
            }
            (None, _) => {}
        }
        if let Some(scope) = &self.scope {
            scope.child_gone();
        }
    }

    /// The outcome, erased, if it is there; otherwise leaves `waker` to be woken by `complete`.
    fn poll_take(&self, waker: &Waker) -> Option<Result<Erased, JoinError>> {
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

    fn try_take(&self) -> Option<Result<Erased, JoinError>> {
        self.lock().result.take()
    }

    fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

/// Lets go of a packet when dropped.
struct LetGo<'a>(&'a Packet);

impl Drop for LetGo<'_> {
    fn drop(&mut self) {
        self.0.let_go();
    }
}

impl Packet {
    /// For a fiber abandoned mid-run, whose `Core` goes while its frames are kept: its packet
    /// never ends, so its scope keeps waiting, as those frames may borrow from the scope.
    pub(crate) fn abandon(&mut self) {
        *self.holders.get_mut() = 0;
    }
}

impl Drop for Packet {
    fn drop(&mut self) {
        // Holders left when the packet goes: the entry's, never called (its fiber dropped
        // unstarted, or never made when a spawn failed), and, for a spawn that failed, the
        // handle's that was never made (a handle keeps the `Core`, so it has let go).
        if *self.holders.get_mut() > 0 {
            self.end();
        }
    }
}

/// A fiber's entry that runs a closure returning `T` and completes the fiber's packet with its
/// outcome: what a `Joined<T>` takes.
pub(crate) struct JoinableEntry<T> {
    pub(crate) entry: Entry,
    _result: PhantomData<fn() -> T>,
}

impl<T> JoinableEntry<T> {
    pub(crate) fn new<F>(f: F) -> JoinableEntry<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        // SAFETY: neither borrows anything.
        unsafe { JoinableEntry::new_unchecked(f) }
    }

    /// # Safety
    ///
    /// Whatever `f` and `T` borrow outlives the entry's call or drop and the packet's end.
    pub(crate) unsafe fn new_unchecked<'a, F>(f: F) -> JoinableEntry<T>
    where
        F: FnOnce() -> T + Send + 'a,
        T: Send + 'a,
    {
        // SAFETY: the entry completes the packet with a `T` (this type's promise to `Joined`),
        // once; the borrows are the caller's promise.
        let entry = move |start, core| unsafe { complete(f, start, core) };
        JoinableEntry {
            // SAFETY: the borrows are the caller's promise.
            entry: unsafe { Entry::new_unchecked(entry) },
            _result: PhantomData,
        }
    }

    /// An entry for a fiber pinned to the calling worker, which needs no `Send`.
    pub(crate) fn local<F>(f: F) -> JoinableEntry<T>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        // SAFETY: neither borrows anything.
        unsafe { JoinableEntry::local_unchecked(f) }
    }

    /// As `local`, for a closure that may borrow.
    ///
    /// # Safety
    ///
    /// As `new_unchecked`.
    pub(crate) unsafe fn local_unchecked<'a, F>(f: F) -> JoinableEntry<T>
    where
        F: FnOnce() -> T + 'a,
        T: 'a,
    {
        // SAFETY: as in `new_unchecked`.
        let entry = move |start, core| unsafe { complete(f, start, core) };
        JoinableEntry {
            // SAFETY: the borrows are the caller's promise.
            entry: unsafe { Entry::new_unchecked(Pinned::new(entry).into_entry()) },
            _result: PhantomData,
        }
    }
}

/// Runs `f` if the fiber got a stack and completes `core`'s packet with the outcome.
///
/// # Safety
///
/// `core` is the `Core` of the fiber whose entry this is, and `T` is as `Packet::complete`
/// requires.
pub(crate) unsafe fn complete<F, T>(f: F, start: Result<(), StackError>, core: *const Core)
where
    F: FnOnce() -> T,
{
    let outcome = run_entry(f, start);
    // SAFETY: an entry runs while its worker holds its fiber's `Core` (see `Entry`), and the
    // rest is the caller's promise.
    unsafe { (*core).packet.complete(outcome) }
}

/// A join handle's hold on its fiber's packet, which knows the result's type.
pub(crate) struct Joined<T> {
    fiber: Fiber,
    /// `Send` and `Sync` when `T` is `Send`, as a shared `Mutex<T>` is: a handle hands its
    /// `T` to whichever thread joins, and nothing else. (Unpin, and invariant in `T`, as the
    /// `Arc` of a generic packet was.)
    _result: PhantomData<Arc<Mutex<T>>>,
}

impl<T> Joined<T> {
    /// # Safety
    ///
    /// `fiber` was made with `Packet::joined`, with an entry that completes its packet with a
    /// `Result<T, JoinError>`, and this is its only `Joined`.
    pub(crate) unsafe fn new(fiber: Fiber) -> Joined<T> {
        Joined {
            fiber,
            _result: PhantomData,
        }
    }

    pub(crate) fn fiber(&self) -> &Fiber {
        &self.fiber
    }

    /// Takes the outcome if it is there; otherwise leaves `waker` to be woken by `complete`.
    pub(crate) fn poll_take(&self, waker: &Waker) -> Option<Result<T, JoinError>> {
        self.take_with(|packet| packet.poll_take(waker))
    }

    /// Takes the outcome if it is there.
    pub(crate) fn try_take(&self) -> Option<Result<T, JoinError>> {
        self.take_with(Packet::try_take)
    }

    /// The outcome `take` takes from this handle's packet, its value as the `T` it is.
    fn take_with(
        &self,
        take: impl FnOnce(&Packet) -> Option<Result<Erased, JoinError>>,
    ) -> Option<Result<T, JoinError>> {
        let outcome = take(&self.fiber.0.packet)?;
        // SAFETY: the packet holds a `T` (see `new`).
        Some(outcome.map(|value| unsafe { value.take::<T>() }))
    }

    /// A scoped child's panic was taken through its join (see `ScopeState::panic_joined`).
    pub(crate) fn panic_joined(&self) {
        if let Some(scope) = &self.fiber.0.packet.scope {
            scope.panic_joined();
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.fiber.0.packet.is_finished()
    }
}

impl<T> Drop for Joined<T> {
    fn drop(&mut self) {
        self.fiber.0.packet.let_go();
    }
}
