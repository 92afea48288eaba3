//! fibra's `select!`, `select_biased!` and dynamic `Select` over channels.
//!
//! Select arrives with the channels issue; it sits above `fibra-channels` in the dependency
//! graph.
