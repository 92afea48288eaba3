//! The one deadline type of every timed wait.

use std::cmp::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Deadlines further out than this are "never": tokio's wheel cannot hold more, and no wait
/// lasts that long.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// The instant by which a timed wait gives up. "Never" is a value, not an absent deadline:
/// [`Deadline::NEVER`], and what [`Deadline::after`] gives for a duration too long to
/// represent (`Duration::MAX` and the like). Deadlines order by time, `NEVER` after all others.
///
/// ```
/// use fibra::wait::Deadline;
/// use std::time::{Duration, Instant};
///
/// let soon = Deadline::after(Duration::from_millis(5));
/// assert!(!soon.is_never());
/// assert!(soon < Deadline::NEVER);
/// assert_eq!(Deadline::after(Duration::MAX), Deadline::NEVER);
/// assert_eq!(Deadline::NEVER.remaining(), Duration::MAX);
/// assert!(Deadline::from(Instant::now()).has_passed());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deadline {
    /// `None` is never.
    at: Option<Instant>,
}

impl Deadline {
    /// A deadline that never passes.
    pub const NEVER: Deadline = Deadline { at: None };

    /// The deadline at `instant`.
    pub fn at(instant: Instant) -> Deadline {
        Deadline { at: Some(instant) }
    }

    /// The deadline `duration` from now; [`NEVER`](Deadline::NEVER) when that is decades away
    /// or cannot be represented.
    pub fn after(duration: Duration) -> Deadline {
        if duration >= FAR_FUTURE {
            return Deadline::NEVER;
        }
        Deadline {
            at: Instant::now().checked_add(duration),
        }
    }

    /// This deadline, `duration` later; never when that cannot be represented (saturating, as
    /// [`after`](Deadline::after)). Never stays never.
    ///
    /// ```
    /// use fibra_driver::Deadline;
    /// use std::time::{Duration, Instant};
    ///
    /// let now = Instant::now();
    /// let second = Duration::from_secs(1);
    /// assert_eq!(Deadline::at(now).later_by(second), Deadline::at(now + second));
    /// assert_eq!(Deadline::at(now).later_by(Duration::MAX), Deadline::NEVER);
    /// ```
    pub fn later_by(self, duration: Duration) -> Deadline {
        Deadline {
            at: self.at.and_then(|at| at.checked_add(duration)),
        }
    }

    /// Whether this is [`NEVER`](Deadline::NEVER).
    pub fn is_never(&self) -> bool {
        self.at.is_none()
    }

    /// The instant, unless the deadline is never.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// Whether the deadline has passed (never for [`NEVER`](Deadline::NEVER)).
    #[inline]
    pub fn has_passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// The time left: zero once passed, `Duration::MAX` for [`NEVER`](Deadline::NEVER).
    pub fn remaining(&self) -> Duration {
        match self.at {
            Some(at) => at.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        }
    }

    /// The instant to arm a timer with: a never deadline becomes one decades away, and so
    /// does a later one.
    pub(crate) fn timer_instant(&self) -> Instant {
        let far = || Instant::now() + FAR_FUTURE;
        match self.at {
            // No clock read for the usual deadline: one below the first far instant this
            // process computed is below every later one.
            Some(at) if at < first_far() => at,
            Some(at) => at.min(far()),
            None => far(),
        }
    }
}

/// [`FAR_FUTURE`] from the first time it was asked for.
fn first_far() -> Instant {
    static FIRST: OnceLock<Instant> = OnceLock::new();
    *FIRST.get_or_init(|| Instant::now() + FAR_FUTURE)
}

/// The default is [`NEVER`](Deadline::NEVER).
impl Default for Deadline {
    fn default() -> Deadline {
        Deadline::NEVER
    }
}

impl From<Instant> for Deadline {
    fn from(instant: Instant) -> Deadline {
        Deadline::at(instant)
    }
}

impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Deadline) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Deadline {
    fn cmp(&self, other: &Deadline) -> Ordering {
        match (self.at, other.at) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_orders_last_and_long_durations_saturate_to_it() {
        let now = Instant::now();
        assert!(Deadline::at(now) < Deadline::NEVER);
        assert!(Deadline::at(now) < Deadline::at(now + Duration::from_secs(1)));
        assert_eq!(Deadline::after(FAR_FUTURE), Deadline::NEVER);
        assert_eq!(Deadline::after(Duration::MAX), Deadline::NEVER);
        assert!(!Deadline::NEVER.has_passed());
        assert_eq!(Deadline::at(now).remaining(), Duration::ZERO);
        assert!(Deadline::NEVER.timer_instant() > now + Duration::from_secs(86_400));
    }

    #[test]
    fn a_timer_is_armed_at_the_deadline_or_decades_away_at_the_latest() {
        let now = Instant::now();
        let soon = now + Duration::from_millis(10);
        assert_eq!(Deadline::at(soon).timer_instant(), soon);
        let beyond = Instant::now() + 2 * FAR_FUTURE;
        let armed = Deadline::at(beyond).timer_instant();
        assert!(armed < beyond && armed >= now + FAR_FUTURE);
    }
}
