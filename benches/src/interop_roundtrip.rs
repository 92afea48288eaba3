//! `interop_roundtrip`: a tokio task spawning a task and awaiting its result, one at a time; ns
//! per spawn + await.
//!
//! Variant `2w` (100 000 round trips, 20 000 with `--quick`): a task on a 2-worker tokio
//! multi-thread runtime spawns a fibra fiber through the `Handle` of a 2-worker background fibra
//! runtime and awaits its `JoinHandle`, vs the same task spawning a tokio task with
//! `tokio::spawn` and awaiting it, and vs `tokio_blocking`: the same task handing the work to
//! tokio's blocking pool with `spawn_blocking` and awaiting it (async code running sync work on
//! another thread, which is what a fiber spawned from a task is). The runtimes are built before
//! the timed region and kept alive through it; one untimed round trip comes first. The sum of
//! the results is checked.

use std::hint::black_box;
use std::time::Duration;

use crate::rounds::{compare_per_op, time_round_trips, time_round_trips_on_tokio};
use crate::runtimes;

/// Workers of every runtime.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let trips = if quick { 20_000 } else { 100_000 };
    compare_per_op(
        "interop_roundtrip",
        "2w",
        trips,
        ROUNDS,
        &[
            ("fibra", &fibra),
            ("tokio", &tokio),
            ("tokio_blocking", &tokio_blocking),
        ],
    );
}

/// fibra: the tokio task spawns fibers onto a background fibra runtime and awaits them.
fn fibra(trips: u64) -> Duration {
    let fibers = runtimes::fibra(WORKERS)
        .into_background()
        .expect("start the fibra runtime in the background");
    let handle = fibers.handle();
    let runtime = runtimes::tokio_multi(WORKERS);
    let elapsed = runtimes::tokio_on_worker(&runtime, async move {
        // Borrowed, so that every trip's future can use it.
        let handle = &handle;
        time_round_trips(trips, |i| async move {
            handle
                .spawn(move || black_box(i))
                .await
                .expect("fiber panicked")
        })
        .await
    });
    drop(runtime);
    fibers.shut_down();
    elapsed
}

/// tokio: the task spawns tokio tasks on its own runtime and awaits them.
fn tokio(trips: u64) -> Duration {
    time_round_trips_on_tokio(WORKERS, trips, |i| async move {
        tokio::spawn(async move { black_box(i) })
            .await
            .expect("task panicked")
    })
}

/// tokio_blocking: the task runs each trip's work on tokio's blocking pool and awaits it.
fn tokio_blocking(trips: u64) -> Duration {
    time_round_trips_on_tokio(WORKERS, trips, |i| async move {
        tokio::task::spawn_blocking(move || black_box(i))
            .await
            .expect("blocking task panicked")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_completes_every_round_trip() {
        // Each function asserts the sum itself.
        fibra(100);
        tokio(100);
        tokio_blocking(100);
    }
}
