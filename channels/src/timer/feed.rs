//! The time feed of a timer channel: what a channel made by `close_at` or `tick` does when its
//! deadline has come. There is no timer thread: every operation on the channel looks at the
//! clock first, and a caller parked on it sleeps until the feed's deadline
//! (`park_current_until`), then looks again.

use fibra_runtime::wait::Deadline;
use std::time::{Duration, Instant};

/// A deadline and what happens there.
pub(crate) struct Feed<T> {
    next: Deadline,
    kind: Kind<T>,
}

enum Kind<T> {
    /// Close the channel at the deadline.
    Close,
    /// Deliver `make(deadline)` at every multiple of `period`.
    Tick {
        period: Duration,
        make: fn(Instant) -> T,
    },
}

/// What a feed did when it was looked at.
pub(crate) enum Fired<T> {
    /// The deadline has not come.
    Waiting,
    /// Close the channel (and the feed is spent).
    Close,
    /// A tick is due: deliver the value (if there is room); the feed keeps going.
    Tick(T),
    /// A tick is due and the next one cannot be represented: deliver, then the feed is spent.
    LastTick(T),
}

impl<T> Feed<T> {
    /// A feed that closes its channel at `at`.
    pub(crate) fn close_at(at: Deadline) -> Self {
        Feed {
            next: at,
            kind: Kind::Close,
        }
    }

    /// A feed that delivers `make(t)` for `t` = `first`, `first + period`, ….
    pub(crate) fn tick(first: Deadline, period: Duration, make: fn(Instant) -> T) -> Self {
        Feed {
            next: first,
            kind: Kind::Tick { period, make },
        }
    }

    /// When the feed fires next.
    pub(crate) fn deadline(&self) -> Deadline {
        self.next
    }

    /// Looks at the clock. A due tick delivers its scheduled instant; when several were missed,
    /// only the latest is delivered (a slow receiver gets one tick, not a burst).
    pub(crate) fn fire(&mut self, now: Instant) -> Fired<T> {
        let Some(next) = self.next.instant().filter(|&next| now >= next) else {
            return Fired::Waiting;
        };
        match self.kind {
            Kind::Close => Fired::Close,
            Kind::Tick { period, make } => {
                // The latest due tick is delivered; ticks missed before it are skipped, and the
                // next one is the first multiple of `period` after `now`. The due tick is at
                // most `now`, so it is representable; the next one saturates to never.
                let missed = now.duration_since(next).as_nanos() / period.as_nanos();
                let since_next = u64::try_from(missed * period.as_nanos())
                    .map_or(Duration::MAX, Duration::from_nanos);
                let due = Deadline::at(next).later_by(since_next);
                let (Some(due), after) = (due.instant(), due.later_by(period)) else {
                    return Fired::Close;
                };
                if after.is_never() {
                    return Fired::LastTick(make(due));
                }
                self.next = after;
                Fired::Tick(make(due))
            }
        }
    }
}
