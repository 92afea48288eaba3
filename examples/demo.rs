//! fibra's demo: a scope of many fibers that borrow from the main fiber and exchange work.
//!
//! 1. Fan-out: 1 000 fibers each sort a disjoint slice of one `Vec` owned by the main fiber.
//! 2. A ring: 1 000 fibers pass a token around 100 times, each hop a park/unpark handoff; every
//!    fiber adds its index, so the final value is known in advance.
//! 3. Work exchange: producers hand batches to consumers through a shared mailbox, parking
//!    when there is nothing to do.
//!
//! Run it with `cargo run --release --example demo`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

const FIBERS: usize = 1_000;
const LAPS: u64 = 100;

fn main() {
    let started = Instant::now();
    let report = fibra::run(|| {
        let mut lines = Vec::new();
        lines.push(format!(
            "runtime: {} workers",
            fibra::Handle::current().workers()
        ));
        lines.push(fan_out());
        lines.push(ring());
        lines.push(exchange());
        lines
    });
    for line in report {
        println!("{line}");
    }
    println!("total: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
}

/// Sorts 1 000 slices of one vector in place, one fiber per slice.
fn fan_out() -> String {
    let mut data: Vec<u32> = (0..FIBERS as u32 * 100).rev().collect();
    let per_worker: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
    fibra::scope(|s| {
        for slice in data.chunks_mut(100) {
            let per_worker = &per_worker;
            s.spawn(move || {
                slice.sort_unstable();
                let worker = fibra::current_worker().expect("fibers run on workers");
                per_worker[worker].fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    let sorted = data.chunks(100).all(|c| c.windows(2).all(|w| w[0] <= w[1]));
    let spread: Vec<String> = per_worker
        .iter()
        .enumerate()
        .filter(|(_, n)| n.load(Ordering::Relaxed) > 0)
        .map(|(w, n)| format!("worker {w}: {}", n.load(Ordering::Relaxed)))
        .collect();
    format!(
        "fan-out: {FIBERS} fibers sorted their slices in place (all sorted: {sorted}; {})",
        spread.join(", ")
    )
}

/// One ring member: where the token lands, and who to wake.
struct Seat {
    token: Mutex<Option<u64>>,
    fiber: Mutex<Option<fibra::Fiber>>,
}

/// Passes a token around a ring of fibers.
fn ring() -> String {
    let seats: Vec<Seat> = (0..FIBERS)
        .map(|_| Seat {
            token: Mutex::new(None),
            fiber: Mutex::new(None),
        })
        .collect();
    let registered = AtomicUsize::new(0);
    let started = Instant::now();
    let result = fibra::scope(|s| {
        let handles: Vec<_> = (0..FIBERS)
            .map(|i| {
                let (seats, registered) = (&seats, &registered);
                s.spawn(move || {
                    *seats[i].fiber.lock().unwrap() = Some(fibra::current());
                    registered.fetch_add(1, Ordering::Release);
                    let mut last = 0;
                    for _ in 0..LAPS {
                        let value = loop {
                            if let Some(v) = seats[i].token.lock().unwrap().take() {
                                break v;
                            }
                            fibra::park();
                        };
                        last = value + i as u64;
                        let next = &seats[(i + 1) % FIBERS];
                        *next.token.lock().unwrap() = Some(last);
                        wake(next);
                    }
                    last
                })
            })
            .collect();
        while registered.load(Ordering::Acquire) < FIBERS {
            fibra::yield_now();
        }
        *seats[0].token.lock().unwrap() = Some(0);
        wake(&seats[0]);
        let last = handles.into_iter().last().expect("a ring has members");
        last.join().expect("ring fiber panicked")
    });
    // The token left by the last hop lands back at seat 0; nobody takes it.
    let expected = LAPS * (FIBERS as u64 * (FIBERS as u64 - 1) / 2);
    let hops = LAPS * FIBERS as u64;
    format!(
        "ring: {FIBERS} fibers passed a token {hops} hops; final value {result} (expected {expected}); \
         {:.0} ns per hop",
        started.elapsed().as_nanos() as f64 / hops as f64
    )
}

fn wake(seat: &Seat) {
    if let Some(fiber) = &*seat.fiber.lock().unwrap() {
        fiber.unpark();
    }
}

/// Producers push batches of numbers; consumers take them and sum them.
fn exchange() -> String {
    const PRODUCERS: u64 = 50;
    const BATCHES: u64 = 200;
    let mailbox: Mutex<VecDeque<Vec<u64>>> = Mutex::new(VecDeque::new());
    let waiting: Mutex<Vec<fibra::Fiber>> = Mutex::new(Vec::new());
    let done = AtomicUsize::new(0);
    let total = AtomicU64::new(0);
    let consumed = AtomicU64::new(0);
    fibra::scope(|s| {
        for p in 0..PRODUCERS {
            let (mailbox, waiting, done) = (&mailbox, &waiting, &done);
            s.spawn(move || {
                for b in 0..BATCHES {
                    let batch: Vec<u64> = (0..10).map(|k| p * 10_000 + b * 10 + k).collect();
                    mailbox.lock().unwrap().push_back(batch);
                    if let Some(consumer) = waiting.lock().unwrap().pop() {
                        consumer.unpark();
                    }
                    fibra::yield_now();
                }
                done.fetch_add(1, Ordering::Release);
                for consumer in waiting.lock().unwrap().drain(..) {
                    consumer.unpark();
                }
            });
        }
        for _ in 0..PRODUCERS / 5 {
            let (mailbox, waiting, done, total, consumed) =
                (&mailbox, &waiting, &done, &total, &consumed);
            s.spawn(move || loop {
                let batch = mailbox.lock().unwrap().pop_front();
                match batch {
                    Some(batch) => {
                        total.fetch_add(batch.iter().sum(), Ordering::Relaxed);
                        consumed.fetch_add(1, Ordering::Relaxed);
                    }
                    None if done.load(Ordering::Acquire) == PRODUCERS as usize => {
                        if mailbox.lock().unwrap().is_empty() {
                            break;
                        }
                    }
                    None => {
                        waiting.lock().unwrap().push(fibra::current());
                        if mailbox.lock().unwrap().is_empty()
                            && done.load(Ordering::Acquire) < PRODUCERS as usize
                        {
                            fibra::park();
                        }
                    }
                }
            });
        }
    });
    let expected: u64 = (0..PRODUCERS)
        .flat_map(|p| (0..BATCHES).flat_map(move |b| (0..10).map(move |k| p * 10_000 + b * 10 + k)))
        .sum();
    format!(
        "exchange: {PRODUCERS} producers handed {} batches to {} consumers; sum {} (expected {expected})",
        consumed.load(Ordering::Relaxed),
        PRODUCERS / 5,
        total.load(Ordering::Relaxed)
    )
}
