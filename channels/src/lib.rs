//! fibra's bounded and rendezvous MPMC channels and timer channels.
//!
//! The channels arrive with their own issue; they are written over `fibra_runtime::wait`, whose
//! park and waker work in fibers, on plain threads and in async code alike.
