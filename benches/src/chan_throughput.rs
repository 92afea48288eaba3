//! `chan_throughput`: `u64`s streamed through one `bounded(1024)` channel; ns per message.
//!
//! 10 000 000 messages (1 000 000 with `--quick`), split evenly between the producers; the
//! consumers' sum is checked every run. Variant `1x1`: one producer, one consumer. Variant
//! `4x4`: four producers, four consumers. fibra runs fibers on a 2-worker runtime (for `1x1`
//! the producer and the consumer on different workers, like the two-thread peers); the peers:
//! `crossbeam-channel` and `flume` between plain threads, `async-channel` and (`1x1` only:
//! it is single-consumer) `tokio::sync::mpsc` between tasks on a 2-worker tokio runtime, and
//! `may` coroutines on its 2 workers (`may::sync::mpsc` / `mpmc`, unbounded: `may` has no
//! bounded channel).

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::rounds::{checked_elapsed, compare_per_op, sum_below};
use crate::runtimes;

/// The channel capacity of every bounded peer.
const CAP: usize = 1024;
/// Workers of every multi-worker system.
const WORKERS: usize = 2;
/// Rounds per system.
const ROUNDS: usize = 5;

/// Runs both variants and prints their JSON lines.
pub fn run(quick: bool) {
    let messages = if quick { 1_000_000 } else { 10_000_000 };
    compare_per_op(
        "chan_throughput",
        "1x1",
        messages,
        ROUNDS,
        &[
            ("fibra", &|messages| fibra(1, messages)),
            ("crossbeam", &|messages| crossbeam(1, messages)),
            ("flume", &|messages| flume(1, messages)),
            ("async_channel", &|messages| async_channel(1, messages)),
            ("tokio", &tokio),
            ("may", &|messages| may(1, messages)),
        ],
    );
    compare_per_op(
        "chan_throughput",
        "4x4",
        messages,
        ROUNDS,
        &[
            ("fibra", &|messages| fibra(4, messages)),
            ("crossbeam", &|messages| crossbeam(4, messages)),
            ("flume", &|messages| flume(4, messages)),
            ("async_channel", &|messages| async_channel(4, messages)),
            ("may", &|messages| may(4, messages)),
        ],
    );
}

/// The values producer `p` of `n` sends: `p * per .. (p + 1) * per`; with `messages` a multiple
/// of `n` the shares make up `0..messages`, so the consumers must sum to [`sum_below`]`(messages)`.
fn share(p: u64, n: u64, messages: u64) -> std::ops::Range<u64> {
    let per = messages / n;
    p * per..(p + 1) * per
}

/// fibra: `n` producer and `n` consumer fibers in a scope on a 2-worker runtime. For `1x1`
/// the consumer is placed on the other worker than the producer (the main fiber spins, without
/// yielding, until an idle worker has stolen the consumer), so that it measures what the
/// two-thread peers measure; `4x4` leaves placement to the scheduler.
fn fibra(n: u64, messages: u64) -> Duration {
    runtimes::fibra(WORKERS).block_on(move || {
        let (tx, rx) = fibra::chan::bounded::<u64>(CAP);
        let placed = AtomicBool::new(false);
        let start = Instant::now();
        let sum: u64 = fibra::scope(|s| {
            let consumers: Vec<_> = (0..n)
                .map(|_| {
                    let rx = rx.clone();
                    let placed = &placed;
                    s.spawn(move || {
                        placed.store(fibra::current_worker() != Some(0), Ordering::Release);
                        rx.iter().sum::<u64>()
                    })
                })
                .collect();
            drop(rx);
            if n == 1 {
                while !placed.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                for v in share(0, 1, messages) {
                    tx.send(v).expect("send");
                }
                drop(tx);
            } else {
                for p in 0..n {
                    let tx = tx.clone();
                    s.spawn(move || {
                        for v in share(p, n, messages) {
                            tx.send(v).expect("send");
                        }
                    });
                }
                drop(tx);
            }
            consumers
                .into_iter()
                .map(|c| c.join().expect("consumer"))
                .sum()
        });
        checked_elapsed(start, sum, sum_below(messages))
    })
}

/// crossbeam-channel: `n` producer and `n` consumer threads.
fn crossbeam(n: u64, messages: u64) -> Duration {
    threads(
        n,
        messages,
        crossbeam_channel::bounded,
        crossbeam_channel::Sender::send,
    )
}

/// flume: `n` producer and `n` consumer threads.
fn flume(n: u64, messages: u64) -> Duration {
    threads(n, messages, flume::bounded, flume::Sender::send)
}

/// `n` producer and `n` consumer threads over a blocking channel crate (crossbeam-channel and
/// flume share this API): `bounded` makes the channel, `send` is its sender's method, and a
/// consumer drains its receiver as an iterator.
fn threads<Tx, Rx, SendError>(
    n: u64,
    messages: u64,
    bounded: impl FnOnce(usize) -> (Tx, Rx),
    send: impl Fn(&Tx, u64) -> Result<(), SendError> + Copy + Send,
) -> Duration
where
    Tx: Clone + Send,
    Rx: Clone + IntoIterator<Item = u64> + Send,
    SendError: Debug,
{
    let (tx, rx) = bounded(CAP);
    let start = Instant::now();
    let sum: u64 = std::thread::scope(|s| {
        for p in 0..n {
            let tx = tx.clone();
            s.spawn(move || {
                for v in share(p, n, messages) {
                    send(&tx, v).expect("send");
                }
            });
        }
        drop(tx);
        let consumers: Vec<_> = (0..n)
            .map(|_| {
                let rx = rx.clone();
                s.spawn(move || rx.into_iter().sum::<u64>())
            })
            .collect();
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer"))
            .sum()
    });
    checked_elapsed(start, sum, sum_below(messages))
}

/// async-channel: `n` producer and `n` consumer tasks on a 2-worker tokio runtime.
fn async_channel(n: u64, messages: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let (tx, rx) = async_channel::bounded::<u64>(CAP);
        let start = Instant::now();
        for p in 0..n {
            let tx = tx.clone();
            tokio::spawn(async move {
                for v in share(p, n, messages) {
                    tx.send(v).await.expect("send");
                }
            });
        }
        drop(tx);
        let consumers: Vec<_> = (0..n)
            .map(|_| {
                let rx = rx.clone();
                tokio::spawn(async move {
                    let mut sum = 0u64;
                    while let Ok(v) = rx.recv().await {
                        sum += v;
                    }
                    sum
                })
            })
            .collect();
        let mut sum = 0;
        for consumer in consumers {
            sum += consumer.await.expect("consumer");
        }
        checked_elapsed(start, sum, sum_below(messages))
    })
}

/// tokio mpsc (single consumer, so `1x1` only): two tasks on a 2-worker runtime.
fn tokio(messages: u64) -> Duration {
    let runtime = runtimes::tokio_multi(WORKERS);
    runtimes::tokio_on_worker(&runtime, async move {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(CAP);
        let start = Instant::now();
        tokio::spawn(async move {
            for v in 0..messages {
                tx.send(v).await.expect("send");
            }
        });
        let consumer = tokio::spawn(async move {
            let mut sum = 0u64;
            while let Some(v) = rx.recv().await {
                sum += v;
            }
            sum
        });
        let sum = consumer.await.expect("consumer");
        checked_elapsed(start, sum, sum_below(messages))
    })
}

/// may: `n` producer and `n` consumer coroutines (mpsc for `1x1`, mpmc for `4x4`).
fn may(n: u64, messages: u64) -> Duration {
    let main = move || {
        let start = Instant::now();
        let sum: u64 = if n == 1 {
            let (tx, rx) = may::sync::mpsc::channel::<u64>();
            // SAFETY: `may::coroutine::spawn` is unsafe because a coroutine may move between
            // threads (so a thread-local must not be held across a switch) and has a small fixed
            // stack. This producer touches no thread-local (only may's channel) and uses a few
            // bytes of stack.
            let producer = unsafe {
                may::coroutine::spawn(move || {
                    for v in 0..messages {
                        tx.send(v).expect("send");
                    }
                })
            };
            let sum = rx.iter().sum();
            producer.join().expect("may producer panicked");
            sum
        } else {
            let (tx, rx) = may::sync::mpmc::channel::<u64>();
            let producers: Vec<_> = (0..n)
                .map(|p| {
                    let tx = tx.clone();
                    // SAFETY: as above.
                    unsafe {
                        may::coroutine::spawn(move || {
                            for v in share(p, n, messages) {
                                tx.send(v).expect("send");
                            }
                        })
                    }
                })
                .collect();
            drop(tx);
            let consumers: Vec<_> = (0..n)
                .map(|_| {
                    let rx = rx.clone();
                    // SAFETY: as above; the consumer only sums what may's channel yields.
                    unsafe { may::coroutine::spawn(move || rx.iter().sum::<u64>()) }
                })
                .collect();
            drop(rx);
            for producer in producers {
                producer.join().expect("may producer panicked");
            }
            consumers
                .into_iter()
                .map(|c| c.join().expect("may consumer panicked"))
                .sum()
        };
        checked_elapsed(start, sum, sum_below(messages))
    };
    // SAFETY: as for the children: the main coroutine touches no thread-local (`Instant`, the
    // allocator, may's channels and join handles) and its frames are far within may's stack.
    let handle = unsafe { may::coroutine::spawn(main) };
    handle.join().expect("may main panicked")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_system_delivers_every_message() {
        // Each function asserts the consumers' sum itself.
        runtimes::init_may();
        for n in [1, 4] {
            fibra(n, 4000);
            crossbeam(n, 4000);
            flume(n, 4000);
            async_channel(n, 4000);
            may(n, 4000);
        }
        tokio(4000);
    }
}
