//! Timer channels: readers that time closes or feeds, for timeouts and periodic work in
//! `select!`. There is no timer thread: the channel's feed (`feed`) acts when an operation
//! looks at it, and a caller waiting on the channel times its park with the feed's deadline —
//! the driver's timer wheel, with a hold, like every timed wait.

pub(crate) mod feed;

use crate::core::chan::Chan;
use crate::Reader;
use feed::Feed;
use fibra_runtime::wait::Deadline;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A reader that is closed once `duration` has passed (never before): the select-friendly
/// timeout. Receiving from it waits until then and returns `None`. A `duration` too large to
/// represent never closes. Closing it early with [`Reader::close`] works too.
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// let timeout = fibra::chan::close_after(Duration::from_millis(5));
/// assert_eq!(timeout.recv(), None);
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
pub fn close_after(duration: Duration) -> Reader<()> {
    close_by(Deadline::after(duration))
}

/// A reader that is closed at `deadline` (never before).
///
/// ```
/// use std::time::{Duration, Instant};
/// let deadline = Instant::now() + Duration::from_millis(2);
/// let timeout = fibra::chan::close_at(deadline);
/// assert!(!timeout.is_closed() || Instant::now() >= deadline);
/// assert_eq!(timeout.recv(), None);
/// assert!(Instant::now() >= deadline);
/// ```
pub fn close_at(deadline: Instant) -> Reader<()> {
    close_by(Deadline::at(deadline))
}

fn close_by(deadline: Deadline) -> Reader<()> {
    let feed = (!deadline.is_never()).then(|| Feed::close_at(deadline));
    timer_reader(0, feed)
}

/// A reader that delivers an `Instant` every `period`, starting one period from now; each
/// value is the instant the tick was due. Like Go's ticker it holds at most one tick: a slow
/// receiver gets the latest due tick, not a burst of missed ones. It stops when closed.
///
/// # Panics
///
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
/// let ticks = fibra::chan::tick(Duration::from_millis(1));
/// let first = ticks.recv().unwrap();
/// let second = ticks.recv().unwrap();
/// assert!(second >= first + Duration::from_millis(1));
/// ticks.close();
/// assert_eq!(ticks.recv(), None);
/// ```
#[track_caller]
pub fn tick(period: Duration) -> Reader<Instant> {
    assert!(!period.is_zero(), "tick: the period must be non-zero");
    let first = Deadline::after(period);
    let feed = (!first.is_never()).then(|| Feed::tick(first, period, |at| at));
    timer_reader(1, feed)
}

fn timer_reader<T>(cap: usize, feed: Option<Feed<T>>) -> Reader<T> {
    Reader::from_chan(Arc::new(Chan::timer(cap, feed)))
}
