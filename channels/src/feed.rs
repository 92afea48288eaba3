//! The time feed of a timer channel: what a channel made by `close_at` or `tick` does when its
//! deadline has come. There is no timer thread: every operation on the channel looks at the
//! clock first, and a caller parked on it sleeps until the feed's deadline
//! (`park_current_until`), then looks again.

use std::time::{Duration, Instant};

/// A deadline and what happens there.
pub(crate) struct Feed<T> {
    next: Instant,
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
    pub(crate) fn close_at(at: Instant) -> Self {
        Feed {
            next: at,
            kind: Kind::Close,
        }
    }

    /// A feed that delivers `make(t)` for `t` = `first`, `first + period`, ….
    pub(crate) fn tick(first: Instant, period: Duration, make: fn(Instant) -> T) -> Self {
        Feed {
            next: first,
            kind: Kind::Tick { period, make },
        }
    }

    /// When the feed fires next.
    pub(crate) fn deadline(&self) -> Instant {
        self.next
    }

    /// Looks at the clock. A due tick delivers its scheduled instant; when several were missed,
    /// only the latest is delivered (a slow receiver gets one tick, not a burst).
    pub(crate) fn fire(&mut self, now: Instant) -> Fired<T> {
        if now < self.next {
            return Fired::Waiting;
        }
        match self.kind {
            Kind::Close => Fired::Close,
            Kind::Tick { period, make } => {
                // The latest due tick is delivered; ticks missed before it are skipped, and the
                // next one is the first multiple of `period` after `now`.
                let missed = now.duration_since(self.next).as_nanos() / period.as_nanos();
                let after = |steps: u128| {
                    u64::try_from(steps * period.as_nanos())
                        .ok()
                        .and_then(|nanos| self.next.checked_add(Duration::from_nanos(nanos)))
                };
                let (Some(due), next) = (after(missed), after(missed + 1)) else {
                    return Fired::Close;
                };
                let Some(next) = next else {
                    return Fired::LastTick(make(due));
                };
                self.next = next;
                Fired::Tick(make(due))
            }
        }
    }
}
