//! What a waiting fiber waits for and where: the wait site every blocking primitive hands the
//! toolkit, and the [`Holder`] of a resource with one known owner.

use crate::diag::{Shape, Tag};
use crate::sched::with_running;
use serde::Serialize;
use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// What a fiber is waiting for, as shown by [`dump`](crate::dump) and in deadlock reports.
///
/// A plain thread parked without a deadline in a wait of a primitive's kind (any kind but
/// `Park`, `Sleep`, `BlockOn`, `Blocking` and `Io`) counts as blocked until a fiber or
/// another thread ends the wait through that primitive, when
/// [`Deadlock`](crate::Deadlock) looks for every fiber being asleep: name such a kind only
/// for a wait nothing else (a timer, a socket, a future given the waker) can end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
#[repr(u8)]
pub enum WaitKind {
    /// [`park`](crate::park) or a wait that named no kind.
    Park,
    /// [`sleep`](crate::sleep) or [`park_timeout`](crate::park_timeout).
    Sleep,
    /// [`JoinHandle::join`](crate::JoinHandle::join): another fiber's end.
    Join,
    /// A future polled by [`block_on`](crate::block_on).
    BlockOn,
    /// A job on the blocking pool ([`blocking`](crate::blocking)).
    Blocking,
    /// A mutex.
    Mutex,
    /// A re-entrant mutex.
    ReentrantMutex,
    /// A read lock of a readers-writer lock.
    RwLockRead,
    /// The write lock of a readers-writer lock.
    RwLockWrite,
    /// Semaphore permits.
    Semaphore,
    /// A condition variable.
    Condvar,
    /// A barrier.
    Barrier,
    /// A count-down latch.
    CountDownLatch,
    /// A wait group.
    WaitGroup,
    /// A one-time initialisation run by another caller.
    Once,
    /// An event.
    Event,
    /// An event count or sequencer.
    EventCount,
    /// A channel receive.
    Recv,
    /// A channel send.
    Send,
    /// A select over several operations.
    Select,
    /// Socket or file readiness.
    Io,
    /// A process's receive: the next message, or one that matches.
    Receive,
    /// A process's call, waiting for the reply.
    Call,
}

impl WaitKind {
    /// Whether a wait of this kind ends only through its primitive, by a fiber or a thread
    /// using it: never by the driver (a timer, a socket, a future), nor by anyone holding
    /// the waiter's waker (a plain park).
    pub(crate) fn ended_by_callers_only(self) -> bool {
        !matches!(
            self,
            WaitKind::Park
                | WaitKind::Sleep
                | WaitKind::BlockOn
                | WaitKind::Blocking
                | WaitKind::Io
        )
    }

    fn describe(self) -> &'static str {
        match self {
            WaitKind::Park => "park",
            WaitKind::Sleep => "sleep",
            WaitKind::Join => "join",
            WaitKind::BlockOn => "block_on",
            WaitKind::Blocking => "blocking job",
            WaitKind::Mutex => "mutex",
            WaitKind::ReentrantMutex => "reentrant mutex",
            WaitKind::RwLockRead => "rwlock read",
            WaitKind::RwLockWrite => "rwlock write",
            WaitKind::Semaphore => "semaphore",
            WaitKind::Condvar => "condvar",
            WaitKind::Barrier => "barrier",
            WaitKind::CountDownLatch => "count-down latch",
            WaitKind::WaitGroup => "wait group",
            WaitKind::Once => "once",
            WaitKind::Event => "event",
            WaitKind::EventCount => "event count",
            WaitKind::Recv => "channel recv",
            WaitKind::Send => "channel send",
            WaitKind::Select => "select",
            WaitKind::Io => "io",
            WaitKind::Receive => "receive",
            WaitKind::Call => "call",
        }
    }
}

impl fmt::Display for WaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Who holds a resource that has one owner at a time (a mutex, a writer lock): the fiber and
/// where it took it. The waiting toolkit follows it from a waiter to the owner to find
/// deadlock cycles; the owner sets it after acquiring and clears it before releasing.
///
/// A holder on a plain thread is not recorded (a thread is not part of the wait-for graph).
///
/// ```
/// use fibra::wait::Holder;
///
/// static HOLDER: Holder = Holder::new();
/// fibra::run(|| {
///     HOLDER.acquired();
///     assert_eq!(HOLDER.owner(), Some(fibra::current().id()));
///     HOLDER.released();
///     assert_eq!(HOLDER.owner(), None);
/// });
/// ```
pub struct Holder {
    /// The owner's fiber id; 0 when free or held by a plain thread.
    owner: AtomicU64,
    /// Where the owner took it.
    site: AtomicPtr<Location<'static>>,
}

impl Holder {
    /// No holder.
    pub const fn new() -> Holder {
        Holder {
            owner: AtomicU64::new(0),
            site: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Records the calling fiber as the holder, taken at the caller's location.
    #[inline]
    #[track_caller]
    pub fn acquired(&self) {
        if !crate::diag::RECORDS_WAITS {
            return;
        }
        let id = with_running(|core| core.map_or(0, |core| core.id.as_u64()));
        let site = Location::caller() as *const Location<'static>;
        self.site.store(site.cast_mut(), Ordering::Relaxed);
        self.owner.store(id, Ordering::Relaxed);
    }

    /// Clears the holder; called before the resource is released, so a waiter never sees a
    /// holder that has let go (a stale owner could show a cycle that is not there).
    #[inline]
    pub fn released(&self) {
        if !crate::diag::RECORDS_WAITS {
            return;
        }
        self.owner.store(0, Ordering::Relaxed);
    }

    /// The holding fiber, if a fiber holds it.
    pub fn owner(&self) -> Option<crate::FiberId> {
        match self.owner.load(Ordering::Acquire) {
            0 => None,
            id => Some(crate::FiberId(id)),
        }
    }

    /// The owner's fiber id (0 for none) and where it took the resource.
    pub(crate) fn read(&self) -> (u64, Option<&'static Location<'static>>) {
        let owner = self.owner.load(Ordering::Acquire);
        let site = self.site.load(Ordering::Relaxed);
        // SAFETY: the pointer is null or came from a `&'static Location` in `acquired`.
        (owner, unsafe { site.cast_const().as_ref() })
    }
}

impl Default for Holder {
    fn default() -> Holder {
        Holder::new()
    }
}

impl fmt::Debug for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Holder")
            .field("owner", &self.owner())
            .finish()
    }
}

/// What a blocking call waits on and where it was called: handed to
/// [`park_current_at`](crate::wait::park_current_at) or [`Wait::block_at`](crate::wait::Wait::block_at),
/// which record it for the fiber while it waits.
///
/// The location is the caller's: make the blocking method and everything between it and the
/// site `#[track_caller]`, so the site is the user's line.
///
/// ```
/// use fibra::wait::{WaitKind, WaitSite};
///
/// let object = 5u8;
/// let site = WaitSite::new(WaitKind::Event, &object);
/// assert_eq!(site.kind(), WaitKind::Event);
/// assert_eq!(site.location().line(), line!() - 2);
/// ```
#[derive(Clone, Copy)]
pub struct WaitSite<'a> {
    /// The wait's kind and owner tag, packed as a published wait stores them (see
    /// `diag::Shape`), so that publishing the wait is one store; not yet marked timed.
    pub(crate) shape: u32,
    /// The holder's address or the owning fiber's id; 0 without an owner.
    pub(crate) owner: usize,
    pub(crate) object: usize,
    pub(crate) location: &'static Location<'static>,
    holder: PhantomData<&'a Holder>,
}

impl<'a> WaitSite<'a> {
    /// A wait of `kind` on `object` (its address identifies it), at the caller's location.
    #[track_caller]
    #[inline]
    pub fn new<T: ?Sized>(kind: WaitKind, object: &T) -> WaitSite<'a> {
        WaitSite {
            shape: Shape::untimed(kind, Tag::Nobody).pack(),
            owner: 0,
            object: object as *const T as *const () as usize,
            location: Location::caller(),
            holder: PhantomData,
        }
    }

    /// The same wait, on a resource whose owner `holder` records: it can end only when that
    /// owner lets go, which makes it part of the wait-for graph checked for deadlocks.
    #[inline]
    pub fn held_by(self, holder: &'a Holder) -> WaitSite<'a> {
        WaitSite {
            shape: Shape::with_tag(self.shape, Tag::Holder),
            owner: holder as *const Holder as usize,
            ..self
        }
    }

    /// A wait that only the end of fiber `id` can finish.
    pub(crate) fn ended_by(self, id: crate::FiberId) -> WaitSite<'a> {
        WaitSite {
            shape: Shape::with_tag(self.shape, Tag::Fiber),
            owner: id.as_u64() as usize,
            ..self
        }
    }

    /// What is waited for.
    #[inline]
    pub fn kind(&self) -> WaitKind {
        Shape::unpack(self.shape).kind
    }

    /// Where the wait was called.
    pub fn location(&self) -> &'static Location<'static> {
        self.location
    }
}

impl fmt::Debug for WaitSite<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitSite")
            .field("kind", &self.kind())
            .field("object", &self.object)
            .field("owner", &Shape::unpack(self.shape).tag)
            .field("location", &self.location)
            .finish()
    }
}
