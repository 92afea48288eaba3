//! One fiber's diagnostic record: how far it has got (unstarted, started, done) and, while it
//! waits, what it waits on and where. Written only by the fiber itself (and its worker), read
//! by dumps and deadlock checks on other threads.
//!
//! The wait is a sequence lock over atomic fields whose parity says whether a wait is
//! published, so a park (which publishes and ends one wait) costs the field stores and one
//! store of the sequence each way: the writer fills the fields while the sequence is even (no
//! wait) and makes it odd to publish; ending the wait makes it even again. A reader that sees
//! an odd sequence reads the fields and keeps them if the sequence has not moved meanwhile;
//! the fields are only rewritten after the sequence has moved on. A
//! wait on a resource with a [`Holder`] is read further, through the holder, which lives in
//! the resource: that read holds `pin`, and a fiber ending such a wait while a reader is
//! [`Looking`] takes `pin` too before it returns (see `looking`), so the resource (borrowed by
//! the waiting call until the wait has ended) is alive meanwhile.

use super::looking::{readers_may_look, Looking};
use crate::loom::sync::SpinLock;
use crate::wait::{Holder, WaitKind, WaitSite};
use std::hash::{Hash, Hasher};
use std::panic::Location;
use std::sync::atomic::Ordering;
use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};
use std::sync::Arc;

const UNSTARTED: u8 = 0;
const STARTED: u8 = 1;
const DONE: u8 = 2;

/// Who can end a published wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum Tag {
    /// Nobody in particular: the wait has no edge in the wait-for graph.
    Nobody,
    /// The owner a [`Holder`] records.
    Holder,
    /// The end of one fiber.
    Fiber,
}

/// How far a fiber has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Unstarted,
    Started,
    Done,
}

/// The small fields of a published wait, packed into one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) kind: WaitKind,
    pub(crate) timed: bool,
    pub(crate) tag: Tag,
}

impl Shape {
    /// A wait site's shape, before it is published with or without a deadline.
    #[inline]
    pub(crate) const fn untimed(kind: WaitKind, tag: Tag) -> Shape {
        Shape {
            kind,
            timed: false,
            tag,
        }
    }

    #[inline]
    pub(crate) const fn pack(self) -> u32 {
        self.kind as u32 | (self.timed as u32) << TIMED_SHIFT | (self.tag as u32) << TAG_SHIFT
    }

    /// `pack`ed word `word` with owner tag `tag` instead of its own.
    #[inline]
    pub(crate) const fn with_tag(word: u32, tag: Tag) -> u32 {
        word & !(0xff << TAG_SHIFT) | (tag as u32) << TAG_SHIFT
    }

    /// `pack`ed word `word`, marked timed.
    #[inline]
    fn timed(word: u32, timed: bool) -> u32 {
        word | u32::from(timed) << TIMED_SHIFT
    }

    #[inline]
    pub(crate) fn unpack(word: u32) -> Shape {
        Shape {
            kind: WAIT_KINDS[usize::from(word as u8)],
            timed: Shape::is_timed(word),
            tag: Shape::tag(word),
        }
    }

    /// The owner tag of `pack`ed word `word`.
    #[inline]
    fn tag(word: u32) -> Tag {
        match (word >> TAG_SHIFT) as u8 {
            0 => Tag::Nobody,
            1 => Tag::Holder,
            _ => Tag::Fiber,
        }
    }

    /// Whether `pack`ed word `word` is marked timed.
    #[inline]
    fn is_timed(word: u32) -> bool {
        (word >> TIMED_SHIFT) & 1 == 1
    }
}

/// Where a packed shape keeps `timed` and the tag (the kind is its low byte).
const TIMED_SHIFT: u32 = 8;
const TAG_SHIFT: u32 = 16;

/// A published wait, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub(crate) kind: WaitKind,
    pub(crate) object: usize,
    pub(crate) location: &'static Location<'static>,
    /// When it began, on the coarse monotonic clock ([`coarse_now`]) as its worker last read
    /// it (see `WorkerSlots::tick`).
    pub(crate) since: u64,
    pub(crate) timed: bool,
    /// Tells waits apart: a wait that ended and a new one on the same object differ.
    pub(crate) generation: u64,
    /// What the wait is for, if it has an owner (who may have none right now).
    pub(crate) resource: Option<Resource>,
}

/// A resource with one known owner, as a published wait names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resource {
    /// The resource of the [`Holder`] at this address.
    Holder(usize),
    /// The end of the fiber of this id.
    Fiber(u64),
}

/// One word (the derived hash writes the discriminant and the value byte by byte through the
/// fiber table's hasher): a pass of cycle checks hashes one per listed fiber. Addresses and
/// fiber ids that hash alike only share a bucket.
impl Hash for Resource {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            Resource::Holder(address) => state.write_u64(address as u64),
            Resource::Fiber(id) => state.write_u64(id),
        }
    }
}

/// How to end a published wait: carried by the waiting fiber across its suspension, so that
/// ending the wait is one store, with no load of the record (which a fiber that just switched
/// back in pays for).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// The sequence that says the wait has ended.
    seq: u64,
    /// Whether it names a holder: readers then look through it, under `pin`.
    holder: bool,
}

/// The owner of a published wait, read live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwnerNow {
    pub(crate) fiber: u64,
    pub(crate) took_at: Option<&'static Location<'static>>,
}

/// See the module docs.
pub(crate) struct Record {
    phase: AtomicU8,
    seq: AtomicU64,
    /// The published wait's kind (its index in `WAIT_KINDS`), whether it is timed and its
    /// owner tag, in one word (see [`Shape`]) so that publishing stores it at once.
    shape: AtomicU32,
    /// The holder's address or the owning fiber's id, after the owner tag; 0 without one.
    owner: AtomicUsize,
    object: AtomicUsize,
    location: AtomicPtr<Location<'static>>,
    since: AtomicU64,
    pin: SpinLock<()>,
    /// Set with `report` by the check that found this fiber in a deadlock: it unwinds.
    doomed: AtomicBool,
    /// Set by the monitor for a fiber that ran too long: it yields at its next cancellation
    /// point (the monitor raises its cancel hint too).
    preempt: AtomicBool,
    report: SpinLock<Option<Arc<str>>>,
}

impl Record {
    pub(crate) fn new() -> Record {
        Record {
            phase: AtomicU8::new(UNSTARTED),
            seq: AtomicU64::new(0),
            shape: AtomicU32::new(0),
            owner: AtomicUsize::new(0),
            object: AtomicUsize::new(0),
            location: AtomicPtr::new(std::ptr::null_mut()),
            since: AtomicU64::new(0),
            pin: SpinLock::new(()),
            doomed: AtomicBool::new(false),
            preempt: AtomicBool::new(false),
            report: SpinLock::new(None),
        }
    }

    pub(crate) fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            UNSTARTED => Phase::Unstarted,
            STARTED => Phase::Started,
            _ => Phase::Done,
        }
    }

    /// Asks the fiber to end its slice; it looks once its cancel hint is raised.
    pub(crate) fn request_preempt(&self) {
        self.preempt.store(true, Ordering::Relaxed);
    }

    /// Whether the fiber has been asked to end its slice and has not looked yet.
    pub(crate) fn preempt_requested(&self) -> bool {
        self.preempt.load(Ordering::Relaxed)
    }

    /// Whether the fiber was asked to end its slice (and no longer is). The caller took the
    /// cancel hint first, acquiring the raise that followed the request.
    pub(crate) fn take_preempt(&self) -> bool {
        self.preempt.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn started(&self) {
        self.phase.store(STARTED, Ordering::Release);
    }

    pub(crate) fn finished(&self) {
        self.phase.store(DONE, Ordering::Release);
    }

    /// Changes with every wait published and ended: the same fiber in the same generation
    /// has not run since it was last read.
    pub(crate) fn generation(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Publishes a wait; what it returns ends it ([`clear`](Self::clear)). `None`, publishing
    /// nothing, while a wait is published already: a wait made inside another (code that a
    /// wait runs, such as a primitive's own `Waitable::woken`, waiting in turn) leaves the
    /// outer one recorded, and the sequence never goes back to a value a reader has seen.
    #[inline]
    pub(crate) fn publish(&self, site: &WaitSite<'_>, timed: bool, since: u64) -> Option<Ending> {
        // Only the fiber itself writes.
        let seq = self.seq.load(Ordering::Relaxed);
        if seq % 2 != 0 {
            return None;
        }
        // Orders the end of the last wait (the even store) before these field stores: a
        // reader that sees one of them sees the sequence moved past its odd value.
        fence(Ordering::Release);
        self.shape
            .store(Shape::timed(site.shape, timed), Ordering::Relaxed);
        self.owner.store(site.owner, Ordering::Relaxed);
        self.object.store(site.object, Ordering::Relaxed);
        let location = site.location as *const Location<'static>;
        self.location.store(location.cast_mut(), Ordering::Relaxed);
        self.since.store(since, Ordering::Relaxed);
        self.seq.store(seq + 1, Ordering::Release);
        Some(Ending {
            seq: seq + 2,
            holder: Shape::tag(site.shape) == Tag::Holder,
        })
    }

    /// Ends the wait `publish` returned `ending` for.
    #[inline]
    pub(crate) fn clear(&self, ending: Ending) {
        self.seq.store(ending.seq, Ordering::Release);
        // A reader that saw the wait may be reading its holder: it holds `pin` then.
        if ending.holder && readers_may_look() {
            drop(self.pin.lock());
        }
    }

    /// The generation of the published wait if it asks for a deadlock check (an owned,
    /// untimed wait). Read by the fiber itself, or by its home worker while it is suspended:
    /// the thread that writes the record.
    pub(crate) fn check_due(&self) -> Option<u64> {
        let seq = self.seq.load(Ordering::Relaxed);
        if seq % 2 == 0 {
            return None;
        }
        let shape = self.shape.load(Ordering::Relaxed);
        (Shape::tag(shape) != Tag::Nobody && !Shape::is_timed(shape)).then_some(seq)
    }

    /// A consistent read of the published wait.
    fn read_stable(&self) -> Option<Waiting> {
        let mut spins = 0u32;
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            if seq % 2 == 0 {
                return None;
            }
            let shape = self.shape.load(Ordering::Relaxed);
            let owner = self.owner.load(Ordering::Relaxed);
            let object = self.object.load(Ordering::Relaxed);
            let location = self.location.load(Ordering::Relaxed);
            let since = self.since.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == seq {
                // SAFETY: the sequence did not move while we read, so `location` is the one
                // published with it, and a published location came from a `&'static Location`.
                let location = unsafe { &*location.cast_const() };
                let Shape { kind, timed, tag } = Shape::unpack(shape);
                return Some(Waiting {
                    kind,
                    object,
                    location,
                    since,
                    timed,
                    generation: seq,
                    resource: match tag {
                        Tag::Nobody => None,
                        Tag::Holder => Some(Resource::Holder(owner)),
                        Tag::Fiber => Some(Resource::Fiber(owner as u64)),
                    },
                });
            }
            spins += 1;
            if spins % 64 == 0 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// The published wait and its owner now; `_looking` lets it follow a holder. A wait on a
    /// resource `skip` picks is read without its owner (as one that has none).
    pub(crate) fn read(
        &self,
        _looking: &Looking,
        skip: impl Fn(Resource) -> bool,
    ) -> Option<(Waiting, Option<OwnerNow>)> {
        loop {
            let waiting = self.read_stable()?;
            let owner = match waiting.resource {
                Some(resource) if skip(resource) => None,
                Some(Resource::Fiber(fiber)) => Some(OwnerNow {
                    fiber,
                    took_at: None,
                }),
                Some(Resource::Holder(holder)) => {
                    let _pin = self.pin.lock();
                    if self.seq.load(Ordering::Acquire) != waiting.generation {
                        // The wait ended or changed meanwhile: read again.
                        continue;
                    }
                    // SAFETY: the holder belongs to the resource the fiber waits on, which the
                    // waiting call borrows until its wait has ended; the sequence shows it had
                    // not ended when we took `pin`, and while we look (`_looking`) a fiber that
                    // ends a wait with a holder takes `pin` before its call returns.
                    let (fiber, took_at) = unsafe { &*(holder as *const Holder) }.read();
                    (fiber != 0).then_some(OwnerNow { fiber, took_at })
                }
                None => None,
            };
            return Some((waiting, owner));
        }
    }

    /// Tells the fiber to unwind from its wait with `report`.
    pub(crate) fn doom(&self, report: Arc<str>) {
        *self.report.lock() = Some(report);
        self.doomed.store(true, Ordering::Release);
    }

    /// Whether a deadlock check doomed the fiber and it has not unwound for it yet.
    #[inline]
    pub(crate) fn is_doomed(&self) -> bool {
        self.doomed.load(Ordering::Acquire)
    }

    /// Takes the deadlock report the fiber must unwind with, and ends its doom.
    pub(crate) fn take_doom(&self) -> Option<Arc<str>> {
        self.doomed.store(false, Ordering::Relaxed);
        self.report.lock().take()
    }
}

/// Every `WaitKind`, in declaration order (the index stored in a record).
const WAIT_KINDS: [WaitKind; 23] = [
    WaitKind::Park,
    WaitKind::Sleep,
    WaitKind::Join,
    WaitKind::BlockOn,
    WaitKind::Blocking,
    WaitKind::Mutex,
    WaitKind::ReentrantMutex,
    WaitKind::RwLockRead,
    WaitKind::RwLockWrite,
    WaitKind::Semaphore,
    WaitKind::Condvar,
    WaitKind::Barrier,
    WaitKind::CountDownLatch,
    WaitKind::WaitGroup,
    WaitKind::Once,
    WaitKind::Event,
    WaitKind::EventCount,
    WaitKind::Recv,
    WaitKind::Send,
    WaitKind::Select,
    WaitKind::Io,
    WaitKind::Receive,
    WaitKind::Call,
];

/// Nanoseconds on the coarse monotonic clock: a few nanoseconds to read (no time-stamp
/// counter), ticking every few milliseconds, which is what "waited for 120 ms" needs.
pub(crate) fn coarse_now() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid `timespec` to write to; the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut now) };
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::{Looking, Record, Resource, Shape, Tag, WAIT_KINDS};
    use crate::wait::{Holder, WaitKind, WaitSite};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    #[test]
    fn a_reader_never_sees_the_fields_of_two_waits_mixed() {
        let record = Record::new();
        let (first, second) = (1u8, 2u64);
        let first_site = WaitSite::new(WaitKind::Mutex, &first);
        let second_site = WaitSite::new(WaitKind::Recv, &second);
        let done = AtomicBool::new(false);
        // The writer goes on until the reader has read often, however the two are scheduled.
        let reads = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut round = 0u64;
                while round < 20_000 || reads.load(Ordering::Relaxed) < 1_000 {
                    let (site, since) = if round % 2 == 0 {
                        (&first_site, 10)
                    } else {
                        (&second_site, 20)
                    };
                    let ending = record
                        .publish(site, round % 2 == 1, since)
                        .expect("nothing published");
                    record.clear(ending);
                    round += 1;
                }
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                if let Some(waiting) = record.read_stable() {
                    let expected = if waiting.kind == WaitKind::Mutex {
                        (first_site.object, 10, false)
                    } else {
                        (second_site.object, 20, true)
                    };
                    let got = (waiting.object, waiting.since, waiting.timed);
                    assert_eq!(got, expected, "torn read");
                    assert_eq!(waiting.generation % 2, 1, "a published wait is odd");
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(record.read_stable(), None, "the last wait was ended");
    }

    #[test]
    fn ending_an_owned_wait_waits_for_a_reader_that_holds_the_pin() {
        super::super::looking::init();
        let record = Record::new();
        let (holder, object) = (Holder::new(), 3u8);
        let site = WaitSite::new(WaitKind::Mutex, &object).held_by(&holder);
        let ending = record.publish(&site, false, 1).expect("nothing published");
        let released = AtomicBool::new(false);
        let looking = Looking::enter();
        let pin = record.pin.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                record.clear(ending);
                // The holder's resource may go once `clear` returns: not while a reader is
                // still reading it under the pin.
                assert!(released.load(Ordering::SeqCst), "ended under a reader");
            });
            // The wait has ended (the sequence is even) and the fiber waits for the pin.
            while record.seq.load(Ordering::SeqCst) % 2 == 1 {
                std::hint::spin_loop();
            }
            released.store(true, Ordering::SeqCst);
            drop(pin);
        });
        drop(looking);
    }

    #[test]
    fn a_wait_made_inside_another_leaves_the_outer_one_recorded() {
        let record = Record::new();
        let (outer, inner) = (1u8, 2u8);
        let outer_site = WaitSite::new(WaitKind::BlockOn, &outer);
        let ending = record
            .publish(&outer_site, false, 1)
            .expect("nothing published");
        let before = record.read_stable().expect("published");
        assert!(record
            .publish(&WaitSite::new(WaitKind::Mutex, &inner), false, 2)
            .is_none());
        let during = record.read_stable().expect("still published");
        assert_eq!(
            (during.kind, during.object, during.generation),
            (WaitKind::BlockOn, before.object, before.generation)
        );
        record.clear(ending);
        assert_eq!(record.read_stable(), None);
    }

    #[test]
    fn a_shape_unpacks_to_what_was_packed() {
        for kind in WAIT_KINDS {
            for timed in [false, true] {
                for tag in [Tag::Nobody, Tag::Holder, Tag::Fiber] {
                    let shape = Shape { kind, timed, tag };
                    assert_eq!(Shape::unpack(shape.pack()), shape);
                }
            }
        }
    }

    #[test]
    fn an_ended_wait_reads_as_none_and_the_next_one_as_itself() {
        let record = Record::new();
        assert_eq!(record.read_stable(), None);
        let object = 7u32;
        let site = WaitSite::new(WaitKind::Sleep, &object);
        let ending = record.publish(&site, true, 5).expect("nothing published");
        let waiting = record.read_stable().expect("published");
        assert_eq!(
            (waiting.kind, waiting.since, waiting.timed),
            (WaitKind::Sleep, 5, true)
        );
        record.clear(ending);
        assert_eq!(record.read_stable(), None);
        let ending = record.publish(&site, false, 6).expect("nothing published");
        let again = record.read_stable().expect("published again");
        assert_ne!(again.generation, waiting.generation, "waits are told apart");
        record.clear(ending);
    }

    #[test]
    fn only_an_owned_untimed_wait_asks_for_a_check() {
        let record = Record::new();
        let (holder, object) = (Holder::new(), 1u8);
        let plain = WaitSite::new(WaitKind::Event, &object);
        let owned = plain.held_by(&holder);
        let joining = plain.ended_by(crate::FiberId(7));
        for (site, timed, due) in [
            (&plain, false, false),
            (&owned, true, false),
            (&owned, false, true),
            (&joining, false, true),
        ] {
            assert_eq!(record.check_due(), None);
            let ending = record.publish(site, timed, 0).expect("nothing published");
            assert_eq!(
                record.check_due().is_some(),
                due,
                "{site:?}, timed: {timed}"
            );
            record.clear(ending);
        }
        assert_eq!(record.check_due(), None, "the last wait was ended");
    }

    #[test]
    fn a_skipped_resource_is_read_without_its_owner() {
        super::super::looking::init();
        let record = Record::new();
        let object = 2u8;
        let site = WaitSite::new(WaitKind::Join, &object).ended_by(crate::FiberId(7));
        let ending = record.publish(&site, false, 0).expect("nothing published");
        let looking = Looking::enter();
        let (waiting, owner) = record.read(&looking, |_| false).expect("published");
        assert_eq!(waiting.resource, Some(Resource::Fiber(7)));
        assert_eq!(owner.map(|owner| owner.fiber), Some(7));
        let (_, owner) = record
            .read(&looking, |resource| resource == Resource::Fiber(7))
            .expect("published");
        assert_eq!(owner, None);
        drop(looking);
        record.clear(ending);
    }

    #[test]
    fn wait_kinds_are_stored_by_their_declaration_index() {
        for (index, kind) in WAIT_KINDS.iter().enumerate() {
            assert_eq!(*kind as usize, index);
        }
    }
}
