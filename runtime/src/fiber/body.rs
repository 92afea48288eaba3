//! What a fiber runs, in each phase of its life.

use crate::stack::{PooledStack, StackError, StackTicket};
use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Why a fiber handed control back to its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suspend {
    /// Its latch is `WAITING`; whoever wins the dispatch re-queues it.
    Park,
    /// It wants to go to the back of the ready queue.
    Yield,
    /// It retries a blocked operation: it runs again after the fibers woken on its worker, as
    /// if woken itself (see `wait::RetryBudget`).
    Retry,
}

pub(crate) type Yielder = corosensei::Yielder<(), Suspend>;
pub(crate) type Coroutine = corosensei::Coroutine<(), Suspend, (), PooledStack>;

/// Machine words an [`Entry`] holds its closure in.
const INLINE_WORDS: usize = 4;

/// A fiber's whole job: called once, on the fiber's stack with `Ok(())`, or on the worker's
/// own stack with the error when no stack could be had (it then reports the failure to the
/// joiner without running user code).
///
/// The closure is kept in the entry itself (and so in the fiber's `Core`) when it fits in
/// `INLINE_WORDS` words, as a spawn's closure with a few captures and its packet does; a
/// bigger one is boxed. That saves a spawn one of its heap allocations.
pub(crate) struct Entry {
    /// The closure, or a `Box` of it.
    data: MaybeUninit<[usize; INLINE_WORDS]>,
    /// Moves the closure out of `data` and calls it.
    call: unsafe fn(*mut u8, Result<(), StackError>),
    /// Drops the closure in `data`.
    drop: unsafe fn(*mut u8),
    /// Not `Sync`, and `Send` only by the impl below.
    _closure: PhantomData<*mut ()>,
}

// SAFETY: an `Entry` is made only from a `Send` closure (or a `Box` of one), which it owns.
unsafe impl Send for Entry {}

impl Entry {
    pub(crate) fn new<F>(f: F) -> Entry
    where
        F: FnOnce(Result<(), StackError>) + Send + 'static,
    {
        // SAFETY: `F` borrows nothing.
        unsafe { Entry::new_unchecked(f) }
    }

    /// An entry for a closure that may borrow.
    ///
    /// # Safety
    ///
    /// Whatever `f` borrows outlives the entry's call or drop, whichever comes.
    pub(crate) unsafe fn new_unchecked<'a, F>(f: F) -> Entry
    where
        F: FnOnce(Result<(), StackError>) + Send + 'a,
    {
        if size_of::<F>() <= size_of::<[usize; INLINE_WORDS]>()
            && align_of::<F>() <= align_of::<[usize; INLINE_WORDS]>()
        {
            // SAFETY: `F` fits, as just checked; the borrows are the caller's promise.
            unsafe { Entry::inline(f) }
        } else {
            // SAFETY: a `Box` is one word; the borrows are the caller's promise.
            unsafe { Entry::inline(Box::new(f)) }
        }
    }

    /// # Safety
    ///
    /// `F` fits in `data` (size and alignment), and what it borrows outlives the entry.
    unsafe fn inline<F>(f: F) -> Entry
    where
        F: FnOnce(Result<(), StackError>) + Send,
    {
        let mut data = MaybeUninit::<[usize; INLINE_WORDS]>::uninit();
        // SAFETY: `data` is big and aligned enough for `F` (the caller's promise).
        unsafe { data.as_mut_ptr().cast::<F>().write(f) };
        Entry {
            data,
            call: call_inline::<F>,
            drop: drop_inline::<F>,
            _closure: PhantomData,
        }
    }

    /// Runs the fiber's job (see the type's docs).
    pub(crate) fn call(self, start: Result<(), StackError>) {
        let mut entry = ManuallyDrop::new(self);
        // SAFETY: `data` holds the closure `call` was made for; `entry` is not dropped, so the
        // closure moved out here is not dropped again.
        unsafe { (entry.call)(entry.data.as_mut_ptr().cast(), start) }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: `data` holds the closure `drop` was made for, not yet moved out (`call`
        // consumes the entry without dropping it).
        unsafe { (self.drop)(self.data.as_mut_ptr().cast()) }
    }
}

/// # Safety
///
/// `data` holds an `F`, which is not used again.
unsafe fn call_inline<F: FnOnce(Result<(), StackError>)>(
    data: *mut u8,
    start: Result<(), StackError>,
) {
    // SAFETY: per the contract.
    let f = unsafe { data.cast::<F>().read() };
    f(start);
}

/// # Safety
///
/// `data` holds an `F`, which is not used again.
unsafe fn drop_inline<F>(data: *mut u8) {
    // SAFETY: per the contract.
    unsafe { data.cast::<F>().drop_in_place() }
}

pub(crate) enum Body {
    Unstarted(Entry, StackTicket),
    /// Started and suspended (or running). Never dropped: see `Core`'s `Send` impl.
    Running(ManuallyDrop<Coroutine>, StackTicket),
    Done,
}
