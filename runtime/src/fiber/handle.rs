//! The public handle to a fiber.

use super::Core;
use std::fmt;
use std::sync::Arc;
use std::task::Waker;

/// A unique identifier of a fiber in this process, like [`std::thread::ThreadId`].
///
/// ```
/// fibra::run(|| {
///     let a = fibra::current().id();
///     let b = fibra::spawn(|| fibra::current().id()).join().unwrap();
///     assert_ne!(a, b);
/// });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiberId(pub(crate) u64);

impl FiberId {
    /// The identifier as a number, unique for the life of the process.
    ///
    /// ```
    /// fibra::run(|| assert!(fibra::current().id().as_u64() > 0));
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FiberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A handle to a fiber: its identity, and the right to unpark it.
///
/// Like [`std::thread::Thread`], it is cheap to clone and may be sent anywhere. Keeping one does
/// not keep the fiber running or alive past its end.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// fibra::run(|| {
///     let ready = Arc::new(AtomicBool::new(false));
///     let me = fibra::current();
///     let flag = ready.clone();
///     let helper = fibra::spawn(move || {
///         flag.store(true, Ordering::Release);
///         me.unpark();
///     });
///     while !ready.load(Ordering::Acquire) {
///         fibra::park();
///     }
///     helper.join().unwrap();
/// });
/// ```
#[derive(Clone)]
pub struct Fiber(pub(crate) Arc<Core>);

impl Fiber {
    /// This fiber's identifier.
    pub fn id(&self) -> FiberId {
        self.0.id
    }

    /// The name given with [`Builder::name`](crate::Builder::name), if any.
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }

    /// Makes the fiber's unpark token available: its current or next [`park`](crate::park)
    /// returns. Repeated unparks before a park coalesce into one token.
    pub fn unpark(&self) {
        self.0.unpark();
    }

    /// A [`Waker`] that unparks this fiber.
    pub fn waker(&self) -> Waker {
        Waker::from(self.0.clone())
    }
}

impl fmt::Debug for Fiber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fiber")
            .field("id", &self.0.id)
            .field("name", &self.0.name)
            .field("spawned_at", &format_args!("{}", self.0.location))
            .finish()
    }
}
