//! fibra's centralized I/O driver: one OS thread running tokio's reactor, timers and blocking
//! pool, which knows `Waker`s and never fiber state.
//!
//! The driver arrives with its own issue; this crate fixes its place at the bottom of the
//! dependency graph (`driver` ← `runtime` ← …) so the layers above can be built against it.
