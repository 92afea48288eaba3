//! fibra's fiber-aware locks and coordination primitives.
//!
//! The primitives arrive with their own issue; they park the fiber (or the thread) through
//! `fibra_runtime::wait` instead of blocking the worker thread.
