//! tokio interop adapters for fibra and the cross-crate integration tests.
//!
//! The adapters arrive with the driver and I/O issues; the integration tests in `tests/` exercise
//! the crates together through the `fibra` facade.
