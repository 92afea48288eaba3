//! `select2`: one consumer selecting over two channels, each fed by its own producer; ns per
//! message.
//!
//! Variant `2w` (10 000 000 messages, 1 000 000 with `--quick`, half on each channel; channels
//! of capacity 1024): fibra's `select!` with three fibers on a 2-worker runtime vs
//! `crossbeam_channel::select!` with three plain threads vs `tokio::select!` over two
//! `tokio::sync::mpsc` receivers with three tasks on a 2-worker tokio runtime. The consumer's
//! count and sum are checked every run.

use std::time::{Duration, Instant};

use crate::rounds::{compare_per_op, sum_below};
use crate::runtimes;

/// The capacity of both channels.
const CAP: usize = 1024;
/// Workers of every multi-worker system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let messages = if quick { 1_000_000 } else { 10_000_000 };
    compare_per_op(
        "select2",
        "2w",
        messages,
        ROUNDS,
        &[
            ("fibra", &fibra),
            ("crossbeam", &crossbeam),
            ("tokio", &tokio),
        ],
    );
}

/// Producer 0 sends the even values below `messages`, producer 1 the odd ones.
fn values(producer: u64, messages: u64) -> impl Iterator<Item = u64> {
    (producer..messages).step_by(2)
}

/// fibra: two producer fibers and the selecting main fiber on a 2-worker runtime.
fn fibra(messages: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let (tx_a, rx_a) = fibra::chan::bounded::<u64>(CAP);
        let (tx_b, rx_b) = fibra::chan::bounded::<u64>(CAP);
        let start = Instant::now();
        let (count, sum) = fibra::scope(|s| {
            for (producer, tx) in [tx_a, tx_b].into_iter().enumerate() {
                s.spawn(move || {
                    for v in values(producer as u64, messages) {
                        tx.send(v).expect("send");
                    }
                });
            }
            let (mut count, mut sum) = (0u64, 0u64);
            while count < messages {
                fibra::select! {
                    recv(rx_a) -> Some(v) => { count += 1; sum += v; }
                    recv(rx_b) -> Some(v) => { count += 1; sum += v; }
                }
            }
            (count, sum)
        });
        let elapsed = start.elapsed();
        assert_eq!((count, sum), (messages, sum_below(messages)));
        elapsed
    })
}

/// crossbeam-channel: two producer threads and the selecting calling thread.
fn crossbeam(messages: u64) -> Duration {
    let (tx_a, rx_a) = crossbeam_channel::bounded::<u64>(CAP);
    let (tx_b, rx_b) = crossbeam_channel::bounded::<u64>(CAP);
    let start = Instant::now();
    let (count, sum) = std::thread::scope(|s| {
        for (producer, tx) in [tx_a, tx_b].into_iter().enumerate() {
            s.spawn(move || {
                for v in values(producer as u64, messages) {
                    tx.send(v).expect("send");
                }
            });
        }
        // A finished producer's channel is ready with an error: swap it for `never()`.
        let (mut rx_a, mut rx_b) = (rx_a, rx_b);
        let (mut count, mut sum) = (0u64, 0u64);
        while count < messages {
            crossbeam_channel::select! {
                recv(rx_a) -> v => match v {
                    Ok(v) => { count += 1; sum += v; }
                    Err(_) => rx_a = crossbeam_channel::never(),
                },
                recv(rx_b) -> v => match v {
                    Ok(v) => { count += 1; sum += v; }
                    Err(_) => rx_b = crossbeam_channel::never(),
                },
            }
        }
        (count, sum)
    });
    let elapsed = start.elapsed();
    assert_eq!((count, sum), (messages, sum_below(messages)));
    elapsed
}

/// tokio: two producer tasks and a selecting task on a 2-worker runtime.
fn tokio(messages: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let (tx_a, mut rx_a) = tokio::sync::mpsc::channel::<u64>(CAP);
        let (tx_b, mut rx_b) = tokio::sync::mpsc::channel::<u64>(CAP);
        let start = Instant::now();
        for (producer, tx) in [tx_a, tx_b].into_iter().enumerate() {
            tokio::spawn(async move {
                for v in values(producer as u64, messages) {
                    tx.send(v).await.expect("send");
                }
            });
        }
        let (mut count, mut sum) = (0u64, 0u64);
        while count < messages {
            tokio::select! {
                Some(v) = rx_a.recv() => { count += 1; sum += v; }
                Some(v) = rx_b.recv() => { count += 1; sum += v; }
            }
        }
        let elapsed = start.elapsed();
        assert_eq!((count, sum), (messages, sum_below(messages)));
        elapsed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_receives_every_message() {
        // Each function asserts the count and sum itself.
        fibra(4000);
        crossbeam(4000);
        tokio(4000);
    }
}
