//! A socket's read and write timeouts, remembered beside it so that a wait does not ask the
//! kernel (`getsockopt`) each time.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Not read from the socket yet.
const UNKNOWN: u64 = u64::MAX;
/// No timeout.
const NONE: u64 = 0;

/// `SO_RCVTIMEO` and `SO_SNDTIMEO` as the last `set_*_timeout` through one of the socket's
/// handles left them, or as the socket had them when first asked. Shared by the handles
/// `try_clone` makes, since timeouts are the socket's, not a handle's.
#[derive(Debug)]
pub(crate) struct Timeouts {
    read: Slot,
    write: Slot,
}

impl Timeouts {
    pub(crate) fn new() -> Timeouts {
        Timeouts {
            read: Slot(AtomicU64::new(UNKNOWN)),
            write: Slot(AtomicU64::new(UNKNOWN)),
        }
    }

    /// Those of a socket known to have none (one just made): the socket is never asked.
    pub(crate) fn none() -> Timeouts {
        Timeouts {
            read: Slot(AtomicU64::new(NONE)),
            write: Slot(AtomicU64::new(NONE)),
        }
    }

    /// The read timeout; `from_socket` asks the socket the first time.
    pub(crate) fn read(
        &self,
        from_socket: impl FnOnce() -> io::Result<Option<Duration>>,
    ) -> io::Result<Option<Duration>> {
        self.read.get(from_socket)
    }

    /// The write timeout; `from_socket` asks the socket the first time.
    pub(crate) fn write(
        &self,
        from_socket: impl FnOnce() -> io::Result<Option<Duration>>,
    ) -> io::Result<Option<Duration>> {
        self.write.get(from_socket)
    }

    /// Records a read timeout just set on the socket.
    pub(crate) fn set_read(&self, timeout: Option<Duration>) {
        self.read.set(timeout);
    }

    /// Records a write timeout just set on the socket.
    pub(crate) fn set_write(&self, timeout: Option<Duration>) {
        self.write.set(timeout);
    }
}

/// One timeout in nanoseconds: [`NONE`], [`UNKNOWN`] or the duration (at least 1).
#[derive(Debug)]
struct Slot(AtomicU64);

impl Slot {
    fn get(
        &self,
        from_socket: impl FnOnce() -> io::Result<Option<Duration>>,
    ) -> io::Result<Option<Duration>> {
        match self.0.load(Ordering::Acquire) {
            UNKNOWN => {
                let timeout = from_socket()?;
                // A `set` that raced with the question wins: its value is the newer one.
                let _ = self.0.compare_exchange(
                    UNKNOWN,
                    encode(timeout),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                Ok(timeout)
            }
            NONE => Ok(None),
            nanos => Ok(Some(Duration::from_nanos(nanos))),
        }
    }

    fn set(&self, timeout: Option<Duration>) {
        self.0.store(encode(timeout), Ordering::Release);
    }
}

fn encode(timeout: Option<Duration>) -> u64 {
    match timeout {
        None => NONE,
        // Longer than `UNKNOWN - 1` ns (five centuries) waits that long instead.
        Some(timeout) => u64::try_from(timeout.as_nanos())
            .unwrap_or(UNKNOWN - 1)
            .clamp(1, UNKNOWN - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_is_asked_once_and_a_set_replaces_its_answer() {
        let timeouts = Timeouts::new();
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Ok(Some(Duration::from_secs(3)))
        };
        assert_eq!(timeouts.read(ask).unwrap(), Some(Duration::from_secs(3)));
        assert_eq!(timeouts.read(ask).unwrap(), Some(Duration::from_secs(3)));
        assert_eq!(asked.get(), 1);
        timeouts.set_read(None);
        assert_eq!(timeouts.read(ask).unwrap(), None);
        timeouts.set_read(Some(Duration::from_nanos(1)));
        assert_eq!(timeouts.read(ask).unwrap(), Some(Duration::from_nanos(1)));
        assert_eq!(asked.get(), 1);
        // The write timeout is its own.
        assert_eq!(timeouts.write(|| Ok(None)).unwrap(), None);
    }

    #[test]
    fn a_socket_known_to_have_no_timeouts_is_never_asked_and_a_set_still_counts() {
        let timeouts = Timeouts::none();
        assert_eq!(timeouts.read(|| unreachable!()).unwrap(), None);
        assert_eq!(timeouts.write(|| unreachable!()).unwrap(), None);
        timeouts.set_write(Some(Duration::from_millis(5)));
        assert_eq!(
            timeouts.write(|| unreachable!()).unwrap(),
            Some(Duration::from_millis(5))
        );
        assert_eq!(timeouts.read(|| unreachable!()).unwrap(), None);
    }

    #[test]
    fn an_error_asking_the_socket_is_returned_and_asked_again() {
        let timeouts = Timeouts::new();
        let error = timeouts
            .write(|| Err(io::Error::other("gone")))
            .unwrap_err();
        assert_eq!(error.to_string(), "gone");
        assert_eq!(timeouts.write(|| Ok(None)).unwrap(), None);
    }

    #[test]
    fn a_timeout_beyond_the_encoding_is_the_longest_one() {
        let timeouts = Timeouts::new();
        timeouts.set_read(Some(Duration::MAX));
        assert_eq!(
            timeouts.read(|| unreachable!()).unwrap(),
            Some(Duration::from_nanos(UNKNOWN - 1))
        );
    }
}
