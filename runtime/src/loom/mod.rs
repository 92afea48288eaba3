//! The one `cfg(loom)` switch of fibra's concurrency cores: atomics, locks, cells and threads
//! come from `std` normally and from `loom` under `--cfg loom`, so the same code is
//! model-checked and shipped. Every fibra crate's cores import these, never `std` or `loom`
//! directly, so all loom models see one waker model (see [`crate::wait`]: under loom a waiter
//! is a modelled thread blocked on a per-thread notification).
//!
//! This module is fibra's internal toolkit, public only so that fibra's crates share it.

pub mod cell;
mod lock;
mod spin_lock;

/// Synchronization types: `std`'s or `loom`'s.
pub mod sync {
    pub use super::lock::Lock;
    pub use super::spin_lock::{SpinGuard, SpinLock};

    /// Atomics: `std`'s or `loom`'s.
    pub mod atomic {
        #[cfg(loom)]
        pub use loom::sync::atomic::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering};
        #[cfg(not(loom))]
        pub use std::sync::atomic::{fence, AtomicBool, AtomicU8, AtomicUsize, Ordering};
    }

    #[cfg(loom)]
    pub use loom::sync::{Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub use std::sync::{Mutex, MutexGuard};
}

/// Threads: `std`'s or `loom`'s.
pub mod thread {
    #[cfg(loom)]
    pub use loom::thread::*;
    #[cfg(not(loom))]
    pub use std::thread::*;
}
