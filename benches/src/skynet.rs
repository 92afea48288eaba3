//! `skynet`: the 10-ary skynet tree. Every inner node spawns 10 children, joins them and
//! returns the sum of their results; leaf `k` returns `k`. Metric: ms for the whole tree.
//!
//! fibra (a scope per node) vs tokio multi-thread (a boxed recursive future per node,
//! `tokio::spawn` + `.await`), 2 workers each, in variant `2w` (1 000 000 leaves, full runs
//! only) and `2w_100k` (100 000 leaves, both modes). `may` (a coroutine per node) joins in
//! variant `2w_10k` only (10 000 leaves, both modes, with fibra and tokio): it maps every
//! coroutine stack with its own guard page, two kernel mappings each, and a tree whose nodes are
//! alive together by the hundred thousand exhausts the default `vm.max_map_count` (65 530) — on
//! the 100 000-leaf tree `may` aborts with "failed to alloc sys stack". Every run checks the sum.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::report::Metric;
use crate::rounds::{checked_elapsed, compare_timed, sum_below};
use crate::runtimes;

/// Children per inner node.
const ARITY: u64 = 10;
/// Workers of every system.
const WORKERS: usize = 2;

/// Runs the variants and prints their JSON lines.
pub fn run(quick: bool) {
    let rounds = if quick { 3 } else { 5 };
    let trees: &[(&str, u64)] = if quick {
        &[("2w_100k", 100_000)]
    } else {
        &[("2w", 1_000_000), ("2w_100k", 100_000)]
    };
    for &(variant, leaves) in trees {
        compare_timed(
            "skynet",
            variant,
            Metric::MsTotal,
            leaves,
            rounds,
            &[("fibra", &fibra), ("tokio", &tokio)],
        );
    }
    compare_timed(
        "skynet",
        "2w_10k",
        Metric::MsTotal,
        10_000,
        rounds,
        &[("fibra", &fibra), ("tokio", &tokio), ("may", &may)],
    );
}

/// fibra: the root node runs on the main fiber.
fn fibra(leaves: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let start = Instant::now();
        let sum = fibra_node(0, leaves);
        checked_elapsed(start, sum, sum_below(leaves))
    })
}

/// One fibra node: a scope with a child fiber per subtree.
fn fibra_node(first: u64, leaves: u64) -> u64 {
    if leaves == 1 {
        return first;
    }
    let sub = leaves / ARITY;
    fibra::scope(|s| {
        let children: [_; ARITY as usize] =
            std::array::from_fn(|i| s.spawn(move || fibra_node(first + i as u64 * sub, sub)));
        children
            .into_iter()
            .map(|child| child.join().expect("skynet fiber panicked"))
            .sum()
    })
}

/// tokio: the root node is a task on a worker.
fn tokio(leaves: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let start = Instant::now();
        let sum = tokio_node(0, leaves).await;
        checked_elapsed(start, sum, sum_below(leaves))
    })
}

/// One tokio node: a boxed future spawning a task per subtree.
fn tokio_node(first: u64, leaves: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if leaves == 1 {
            return first;
        }
        let sub = leaves / ARITY;
        let children: [_; ARITY as usize] =
            std::array::from_fn(|i| tokio::spawn(tokio_node(first + i as u64 * sub, sub)));
        let mut sum = 0;
        for child in children {
            sum += child.await.expect("skynet task panicked");
        }
        sum
    })
}

/// may: the root node is a coroutine.
fn may(leaves: u64) -> Duration {
    let root = move || {
        let start = Instant::now();
        let sum = may_node(0, leaves);
        checked_elapsed(start, sum, sum_below(leaves))
    };
    // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between threads (a
    // thread-local must not be held across a switch) and has a small fixed stack. The root
    // touches no thread-local (only `Instant` and may's own spawn and join, made for
    // coroutines) and one node's frame is well within may's default stack.
    let handle = unsafe { may::coroutine::spawn(root) };
    handle.join().expect("skynet root panicked")
}

/// One may node: a coroutine per subtree, joined in order.
fn may_node(first: u64, leaves: u64) -> u64 {
    if leaves == 1 {
        return first;
    }
    let sub = leaves / ARITY;
    let children: [_; ARITY as usize] = std::array::from_fn(|i| {
        let child = move || may_node(first + i as u64 * sub, sub);
        // SAFETY: as for the root: a node touches no thread-local and its frame is small; the
        // recursion goes through a new coroutine per level, never deeper on one stack.
        unsafe { may::coroutine::spawn(child) }
    });
    children
        .into_iter()
        .map(|child| child.join().expect("skynet coroutine panicked"))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_sums_the_tree() {
        // Each function asserts the sum itself.
        runtimes::init_may();
        fibra(1000);
        tokio(1000);
        may(1000);
    }
}
