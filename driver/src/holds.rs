//! Holds: the record of every pending external wait, for diagnostics.

use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use slab::Slab;

/// What a hold waits for: the kind of an open [`HoldInfo`].
///
/// ```
/// use fibra::HoldKind;
///
/// assert_eq!(HoldKind::Timer.to_string(), "timer");
/// assert_eq!(HoldKind::Blocking.to_string(), "blocking job");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HoldKind {
    /// A timer (sleep, park with timeout, a deadline).
    Timer,
    /// A job on the blocking pool.
    Blocking,
    /// A future polled by `block_on` that returned `Pending`.
    Future,
    /// A cancel token that any thread or task may cancel (a scope's token).
    CancelToken,
}

impl fmt::Display for HoldKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HoldKind::Timer => "timer",
            HoldKind::Blocking => "blocking job",
            HoldKind::Future => "future",
            HoldKind::CancelToken => "cancel token",
        })
    }
}

/// One pending external wait of a runtime — a timer, a blocking job, a future, a cancel
/// token — as listed by `fibra::Runtime::holds` (also on `BackgroundRuntime` and `Handle`):
/// what a hung program is waiting for, and where each wait began.
///
/// ```
/// use fibra::HoldKind;
/// use std::time::Duration;
///
/// let runtime = fibra::Runtime::builder().workers(1).build().unwrap().into_background().unwrap();
/// let sleeper = runtime.handle().spawn(|| fibra::sleep(Duration::from_secs(3600)));
/// let hold = loop {
///     if let Some(hold) = runtime.holds().into_iter().next() {
///         break hold;
///     }
///     std::thread::yield_now();
/// };
/// assert_eq!(hold.kind, HoldKind::Timer);
/// assert_eq!(hold.owner, Some(sleeper.fiber().id().as_u64()));
/// assert!(hold.to_string().starts_with("timer taken at"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldInfo {
    /// What is waited for.
    pub kind: HoldKind,
    /// Where the wait was started.
    pub location: &'static Location<'static>,
    /// When the hold was taken: when the wait began, or, for a fiber's timed park (whose
    /// deadline its worker arms only if the wait outlasts a moment), when it was armed.
    pub since: Instant,
    /// Who waits: a fiber id, if the waiter is a fiber.
    pub owner: Option<u64>,
}

impl fmt::Display for HoldInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} taken at {}", self.kind, self.location)?;
        if let Some(owner) = self.owner {
            write!(f, " by fiber {owner}")?;
        }
        Ok(())
    }
}

/// The open holds of one runtime.
///
/// ```
/// use fibra_driver::{HoldKind, Holds};
///
/// let holds = Holds::new();
/// let hold = holds.take(HoldKind::Timer, None);
/// assert_eq!(holds.snapshot()[0].kind, HoldKind::Timer);
/// drop(hold);
/// assert!(holds.snapshot().is_empty());
/// ```
#[derive(Debug)]
pub struct Holds {
    /// Every thread takes its holds in a shard of its own (while there are no more threads
    /// than shards): the workers of a runtime arm a timer for every sleeping fiber, and one
    /// shared lock and reference count made them queue behind each other.
    shards: Box<[Arc<Shard>]>,
}

/// How many shards a runtime's holds are spread over.
const SHARDS: usize = 16;

/// One shard's holds, on cache lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    open: Mutex<Slab<HoldInfo>>,
}

impl Shard {
    fn lock(&self) -> MutexGuard<'_, Slab<HoldInfo>> {
        // Never held across user code; recover from a poisoned lock anyway.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Releases the hold at `key`. A double or unknown release is a bug in fibra, caught by a
    /// debug assertion.
    fn release(&self, key: usize) {
        let released = self.lock().try_remove(key);
        debug_assert!(
            released.is_some(),
            "hold {key} released twice or never taken"
        );
    }
}

/// The shard of the calling thread: threads are dealt the shards in turn as they first take a
/// hold.
fn own_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static OWN: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    OWN.with(|own| *own)
}

impl Default for Holds {
    fn default() -> Holds {
        Holds {
            shards: (0..SHARDS).map(|_| Arc::default()).collect(),
        }
    }
}

impl Holds {
    /// No holds.
    pub fn new() -> Holds {
        Holds::default()
    }

    /// Takes a hold for a wait started at the caller's location; dropping the [`Hold`]
    /// releases it.
    #[track_caller]
    pub fn take(&self, kind: HoldKind, owner: Option<u64>) -> Hold {
        self.take_at(kind, owner, Location::caller())
    }

    /// Takes a hold for a wait started at `location` (for a hold taken on the waiter's behalf,
    /// away from where its wait began).
    ///
    /// ```
    /// use fibra_driver::{HoldKind, Holds};
    ///
    /// let holds = Holds::new();
    /// let at = std::panic::Location::caller();
    /// let _hold = holds.take_at(HoldKind::Timer, Some(7), at);
    /// assert_eq!(holds.snapshot()[0].location, at);
    /// ```
    pub fn take_at(
        &self,
        kind: HoldKind,
        owner: Option<u64>,
        location: &'static Location<'static>,
    ) -> Hold {
        let info = HoldInfo {
            kind,
            location,
            since: Instant::now(),
            owner,
        };
        let shard = self.shards[own_shard()].clone();
        let key = shard.lock().insert(info);
        Hold { shard, key }
    }

    /// Every open hold, one shard locked at a time.
    fn each(&self, mut f: impl FnMut(&HoldInfo)) {
        for shard in self.shards.iter() {
            shard.lock().iter().for_each(|(_, info)| f(info));
        }
    }

    /// The open holds, oldest first.
    ///
    /// ```
    /// let holds = fibra_driver::Holds::new();
    /// let _a = holds.take(fibra_driver::HoldKind::Blocking, Some(3));
    /// assert_eq!(holds.snapshot()[0].owner, Some(3));
    /// ```
    pub fn snapshot(&self) -> Vec<HoldInfo> {
        let mut open = Vec::new();
        self.each(|info| open.push(info.clone()));
        open.sort_by_key(|info| info.since);
        open
    }

    /// How many holds are open.
    ///
    /// ```
    /// let holds = fibra_driver::Holds::new();
    /// assert_eq!(holds.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().len()).sum()
    }

    /// How many holds of `kind` are open.
    ///
    /// ```
    /// use fibra_driver::{HoldKind, Holds};
    ///
    /// let holds = Holds::new();
    /// let _timer = holds.take(HoldKind::Timer, None);
    /// assert_eq!(holds.count(HoldKind::Timer), 1);
    /// assert_eq!(holds.count(HoldKind::Blocking), 0);
    /// ```
    pub fn count(&self, kind: HoldKind) -> usize {
        let mut count = 0;
        self.each(|info| count += usize::from(info.kind == kind));
        count
    }

    /// Whether no hold is open.
    ///
    /// ```
    /// assert!(fibra_driver::Holds::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One open hold; dropping it releases it, exactly once.
#[must_use = "dropping a hold releases it at once"]
pub struct Hold {
    shard: Arc<Shard>,
    key: usize,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.shard.release(self.key);
    }
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hold").field("key", &self.key).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_record_their_location_and_release_once() {
        let holds = Arc::new(Holds::new());
        let line = line!() + 1;
        let a = holds.take(HoldKind::Timer, Some(1));
        let b = holds.take(HoldKind::Future, None);
        let open = holds.snapshot();
        assert_eq!(open.len(), 2);
        assert_eq!(open[0].location.line(), line);
        assert_eq!(open[0].location.file(), file!());
        drop(a);
        assert_eq!(holds.snapshot()[0].kind, HoldKind::Future);
        drop(b);
        assert!(holds.is_empty());
        // Freed slots are reused.
        let c = holds.take(HoldKind::Blocking, None);
        assert!(c.key < 2, "key {} is not one of the two freed", c.key);
    }

    #[test]
    fn holds_of_every_thread_are_listed_and_counted() {
        let holds = Arc::new(Holds::new());
        // More threads than shards: some share one.
        let threads = SHARDS + 3;
        let taken: Vec<Hold> = std::thread::scope(|s| {
            let spawned: Vec<_> = (0..threads)
                .map(|owner| {
                    let holds = &holds;
                    s.spawn(move || holds.take(HoldKind::Blocking, Some(owner as u64)))
                })
                .collect();
            spawned.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let _timer = holds.take(HoldKind::Timer, None);
        assert_eq!(holds.len(), threads + 1);
        assert_eq!(holds.count(HoldKind::Blocking), threads);
        let mut owners: Vec<u64> = holds.snapshot().iter().filter_map(|h| h.owner).collect();
        owners.sort_unstable();
        assert_eq!(owners, (0..threads as u64).collect::<Vec<_>>());
        // Released from this thread, whatever thread took them.
        drop(taken);
        assert_eq!(holds.len(), 1);
        assert_eq!(holds.count(HoldKind::Blocking), 0);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "released twice or never taken")]
    fn a_double_release_is_caught() {
        let holds = Arc::new(Holds::new());
        let hold = holds.take(HoldKind::Timer, None);
        let (shard, key) = (hold.shard.clone(), hold.key);
        drop(hold);
        shard.release(key);
    }
}
