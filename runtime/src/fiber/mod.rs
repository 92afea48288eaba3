//! A fiber: its identity, its park/wake latch, and its body (a closure not yet started, a
//! suspended coroutine on a pooled stack, or nothing once finished).

mod body;
mod handle;
pub(crate) mod warm;

pub(crate) use body::{Body, Entry, Suspend, Yielder};
pub use handle::{Fiber, FiberId};

use crate::cancel::{CancelHint, CancelScope};
use crate::diag::Record;
use crate::fiber_ctx::FiberCtx;
use crate::latch::{Latch, Unpark};
use crate::sched::Shared;
use crate::spawn::Packet;
use crate::stack::StackTicket;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Wake;

/// `home` of a fiber that has not started: any worker may take it.
pub(crate) const NO_HOME: usize = usize::MAX;

/// Everything about one fiber; shared as `Arc<Core>` by its queues, wakers and handles.
///
/// The fields a suspension, a wake and a resume touch come first, and the rest after them
/// (`repr(C)` keeps the order): a fiber resumed behind hundreds of others finds its `Core`
/// out of the cache, and the lines it misses on are the lines its hot fields span (see
/// `Core::HOT_BYTES`).
#[repr(C)]
pub(crate) struct Core {
    pub(crate) latch: Latch,
    /// Whether the fiber's innermost cancel scope may be cancelled: false guarantees it is not,
    /// which lets a cancellation point skip `ctx` altogether (see `cancel::point`). Set by the
    /// cancel tree for every member of a scope it marks, and by the fiber itself when it enters
    /// a cancelled scope; cleared only by the owner of `ctx`, which then looks at the scope.
    pub(crate) cancel_hint: CancelHint,
    /// Whether its home worker lists it for a cycle check (see `diag::lazy_check`); used only
    /// on the home worker.
    pub(crate) check_noted: Cell<bool>,
    /// Its home worker's resume count when it last resumed it (see `Local::push_ready`); used
    /// only on the home worker.
    last_resumed: Cell<u32>,
    pub(crate) id: FiberId,
    /// The worker that first ran the fiber, where it stays (the pinning rule). Before the
    /// fiber starts: the worker it is pinned or was handed to, whose load counts it, or
    /// `NO_HOME`.
    pub(crate) home: AtomicUsize,
    pub(crate) shared: Arc<Shared>,
    /// The worker's reference to the fiber while it runs, and, once it parks, the one a winning
    /// dispatch moves into a queue, so waking costs no reference-count traffic. Written by the
    /// home worker around a resume; taken by whoever wins the latch's `WAITING → DISPATCHED`
    /// (exclusive: at most one winner per suspension, and the worker does not touch it while
    /// the fiber is parked). A fiber that parks and is never woken keeps itself alive here, as
    /// its stack is kept (see `Body::Running`).
    queued_ref: UnsafeCell<Option<Arc<Core>>>,
    /// The coroutine's yielder, set when it starts; read only on the home worker while the
    /// fiber runs.
    yielder: Cell<*const Yielder>,
    /// Where its stack stood when it last suspended (`warm::stack_mark`), 0 before it starts;
    /// used only on the home worker.
    suspended_at: Cell<usize>,
    /// The top (highest address) of its stack once it has one; used only on the home worker.
    stack_top: Cell<usize>,
    /// Only ever touched by the thread that currently runs the fiber: the worker that popped it
    /// from a queue (before it started) or its home worker (after).
    body: UnsafeCell<Body>,
    /// What diagnostics see of the fiber: its phase and its published wait.
    pub(crate) diag: Record,
    /// Its key in its home worker's list of started fibers; used only on the home worker.
    pub(crate) started_key: Cell<usize>,
    pub(crate) stack_size: usize,
    pub(crate) location: &'static Location<'static>,
    pub(crate) name: Option<Arc<str>>,
    /// Cancel scope, shield and fiber-locals: set by the spawner before the fiber is queued,
    /// then used only by the fiber itself.
    pub(crate) ctx: RefCell<FiberCtx>,
    /// Where its result waits for its joiner. Last, so that it ends after the entry (which may
    /// borrow from a scope that waits for the end) is dropped with `body`.
    pub(crate) packet: Packet,
}

// SAFETY: the non-thread-safe parts are `body`, `yielder`, `started_key`, `suspended_at`, `last_resumed`, `stack_top`, `check_noted`, `queued_ref` (whose protocol is
// described on the field) and `ctx` (written by the spawner before the fiber is published
// through a queue, afterwards used only by the fiber itself, on its home worker). A fiber is handed between threads
// only through queues (crossbeam deques and SegQueue, which synchronise push with pop), and
// at any moment at most one thread holds it for running: before it starts, the one worker that
// popped or stole it; afterwards, only its home worker (the latch dispatches it at most once per
// suspension, and only to its home worker's queues). `body`, `yielder`, `started_key`, `suspended_at`, `last_resumed`, `stack_top` and `check_noted` are accessed
// only by that thread. A suspended coroutine (which may hold `!Send` state) is never resumed, moved or
// dropped elsewhere: `Body::Running` holds it in `ManuallyDrop`, so dropping a `Core` on another
// thread leaks it instead of touching it. `packet` holds the fiber's result, stored by the fiber
// and taken (or dropped) by its join handle or by the fiber: a result crosses threads only
// when its type is `Send`, as a handle (`Joined`'s marker) is `Send` only then, and a fiber
// with a result that is not `Send` (a local spawn) is pinned to the worker of its handle's
// fiber, which cannot leave it either.
unsafe impl Send for Core {}
// SAFETY: see `Send`; every other field is `Sync`.
unsafe impl Sync for Core {}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Core {
    /// The bytes at the start of a `Core` that a suspension, a wake and a resume touch: what
    /// is worth warming before a resume.
    pub(crate) const HOT_BYTES: usize = std::mem::offset_of!(Core, started_key);

    pub(crate) fn new(
        name: Option<Arc<str>>,
        location: &'static Location<'static>,
        stack_size: usize,
        shared: Arc<Shared>,
        unstarted: (Entry, StackTicket),
        ctx: FiberCtx,
        packet: Packet,
    ) -> Core {
        let (entry, ticket) = unstarted;
        Core {
            id: FiberId(NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            name,
            location,
            stack_size,
            latch: Latch::new(),
            home: AtomicUsize::new(NO_HOME),
            shared,
            body: UnsafeCell::new(Body::Unstarted(entry, ticket)),
            yielder: Cell::new(std::ptr::null()),
            started_key: Cell::new(usize::MAX),
            suspended_at: Cell::new(0),
            last_resumed: Cell::new(0),
            stack_top: Cell::new(0),
            check_noted: Cell::new(false),
            queued_ref: UnsafeCell::new(None),
            ctx: RefCell::new(ctx),
            cancel_hint: CancelHint::new(),
            diag: Record::new(),
            packet,
        }
    }

    /// Brings the hint in line with `scope`, which has just become the fiber's innermost scope
    /// and which the fiber has joined (so from here on the tree raises the hint for it). While
    /// shutdown unwinds every fiber, the hint stays up whatever the scope.
    pub(crate) fn resync_cancel_hint(&self, scope: Option<&CancelScope>) {
        // Clear first, then look: see `CancelHint`.
        self.cancel_hint.take();
        if self.shared.is_unwinding() || scope.is_some_and(|scope| scope.cancelled().is_some()) {
            self.cancel_hint.raise();
        }
    }

    /// The body, for the thread that holds the fiber for running.
    ///
    /// # Safety
    ///
    /// The caller is that thread (see the `Send` impl) and holds no other reference to the body.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn body(&self) -> &mut Body {
        // SAFETY: exclusive per the caller's contract.
        unsafe { &mut *self.body.get() }
    }

    /// Records the top of the stack the fiber starts on.
    pub(crate) fn set_stack_top(&self, top: usize) {
        self.stack_top.set(top);
    }

    /// Records the running coroutine's yielder.
    pub(crate) fn set_yielder(&self, yielder: &Yielder) {
        self.yielder.set(yielder);
    }

    /// The running coroutine's yielder (null before the fiber starts).
    pub(crate) fn yielder(&self) -> *const Yielder {
        self.yielder.get()
    }

    /// Notes that the fiber, running, is about to suspend from the caller's frame.
    #[inline(always)]
    pub(crate) fn note_suspend(&self) {
        self.suspended_at.set(warm::stack_mark());
    }

    /// Notes that its home worker resumes it now, as its `resumes`-th resume.
    #[inline]
    pub(crate) fn note_resume(&self, resumes: u32) {
        self.last_resumed.set(resumes);
    }

    /// Its home worker's resume that it runs in: changes whenever it suspends and runs again.
    #[inline]
    pub(crate) fn last_resumed(&self) -> u32 {
        self.last_resumed.get()
    }

    /// How many resumes its home worker, now at `resumes`, has made since it last resumed
    /// this fiber: the other fibers that ran in between, whose memory may have pushed its own
    /// out of the cache.
    #[inline]
    pub(crate) fn resumes_since(&self, resumes: u32) -> u32 {
        resumes.wrapping_sub(self.last_resumed.get())
    }

    /// Asks the CPU for the stack lines the fiber's next resume touches (see `warm`).
    #[inline]
    pub(crate) fn warm_stack(&self) {
        warm::stack(self.suspended_at.get(), self.stack_top.get());
    }

    /// Hands the worker's reference to the fiber while it runs (see `queued_ref`).
    ///
    /// # Safety
    ///
    /// The caller is the home worker, about to resume the fiber, and `queued_ref` is empty.
    pub(crate) unsafe fn lend(self: Arc<Self>) {
        let cell = self.queued_ref.get();
        // SAFETY: only the home worker writes the cell around a resume, and no dispatch can be
        // in progress: the fiber is not parked (it is about to run).
        unsafe { *cell = Some(self) };
    }

    /// Takes back the reference lent for a resume that ended without parking.
    ///
    /// # Safety
    ///
    /// The caller is the home worker, and the fiber has just yielded or finished (so no
    /// dispatch can have taken the reference).
    pub(crate) unsafe fn reclaim(&self) -> Arc<Core> {
        // SAFETY: per the contract, nobody else touches the cell now.
        unsafe { (*self.queued_ref.get()).take() }.expect("a running fiber's reference was lent")
    }

    /// Sets the unpark token; if the fiber was parked, puts it back on its home worker.
    pub(crate) fn unpark(&self) {
        if self.latch.unpark() == Unpark::Dispatch {
            // SAFETY: winning the dispatch grants exclusive use of `queued_ref` until the fiber
            // runs again; the home worker filled it before the resume in which the fiber parked
            // (that write happens before the fiber's WAITING, which our winning CAS read).
            let queued = unsafe { (*self.queued_ref.get()).take() };
            crate::sched::dispatch(queued.expect("a parked fiber's reference is lent"));
        }
    }
}

/// Another counted reference to the running fiber's `Core`, from the pointer the running
/// fiber has to itself.
///
/// # Safety
///
/// `core` is the running fiber's `Core`, as its worker's pointer (`running_ptr`: made from the
/// `Arc`, so its provenance covers the counts), and the fiber has not committed to park: its
/// worker lent a reference for this resume, which nobody else can take before that commitment.
pub(crate) unsafe fn counted_running(core: *const Core) -> Arc<Core> {
    // SAFETY: per the contract `core` points into an `Arc<Core>` whose count is at least one
    // while we add ours.
    unsafe {
        Arc::increment_strong_count(core);
        Arc::from_raw(core)
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.shared.fibers.remove(self.id.as_u64());
        // A fiber abandoned mid-run keeps its context, as it keeps its stack: its frames (and
        // the frames of scope children on other workers) may borrow its fiber-locals, and
        // those children may still be running while this last reference goes away.
        if let Body::Running(..) = self.body.get_mut() {
            std::mem::forget(std::mem::take(self.ctx.get_mut()));
            self.packet.abandon();
        }
    }
}

impl Wake for Core {
    fn wake(self: Arc<Self>) {
        self.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn the_fields_a_resume_touches_come_first_in_four_lines() {
        let hot = [
            offset_of!(Core, latch) + size_of::<Latch>(),
            offset_of!(Core, cancel_hint) + size_of::<CancelHint>(),
            offset_of!(Core, check_noted) + size_of::<Cell<bool>>(),
            offset_of!(Core, last_resumed) + size_of::<Cell<u32>>(),
            offset_of!(Core, id) + size_of::<FiberId>(),
            offset_of!(Core, home) + size_of::<AtomicUsize>(),
            offset_of!(Core, shared) + size_of::<Arc<Shared>>(),
            offset_of!(Core, queued_ref) + size_of::<UnsafeCell<Option<Arc<Core>>>>(),
            offset_of!(Core, yielder) + size_of::<Cell<*const Yielder>>(),
            offset_of!(Core, suspended_at) + size_of::<Cell<usize>>(),
            offset_of!(Core, stack_top) + size_of::<Cell<usize>>(),
            offset_of!(Core, body) + size_of::<UnsafeCell<Body>>(),
            offset_of!(Core, diag) + size_of::<Record>(),
        ];
        let cold = [
            offset_of!(Core, started_key),
            offset_of!(Core, stack_size),
            offset_of!(Core, location),
            offset_of!(Core, name),
            offset_of!(Core, ctx),
        ];
        assert!(hot.iter().all(|&end| end <= Core::HOT_BYTES), "{hot:?}");
        assert!(
            cold.iter().all(|&start| start >= Core::HOT_BYTES),
            "{cold:?}"
        );
        // Behind the `Arc`'s two counts.
        assert!(Core::HOT_BYTES + 2 * size_of::<usize>() <= 4 * 64);
    }
}
