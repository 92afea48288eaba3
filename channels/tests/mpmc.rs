//! MPMC stress with exact counts: every value arrives exactly once, and the values of one
//! producer arrive at each consumer in the order sent — for capacities 0, 1 and 1024, under 1,
//! 2 and 4 workers.

use fibra_channels::bounded;

const PRODUCERS: u64 = 8;
const CONSUMERS: usize = 8;
const TOTAL: u64 = 1_000_000;

fn stress(workers: usize, cap: usize) {
    let per_producer = TOTAL / PRODUCERS;
    let runtime = fibra_runtime::Runtime::builder()
        .workers(workers)
        .build()
        .unwrap();
    let received: Vec<Vec<u64>> = runtime.block_on(move || {
        let (tx, rx) = bounded::<u64>(cap);
        fibra_runtime::scope(|s| {
            for p in 0..PRODUCERS {
                let tx = tx.clone();
                s.spawn(move || {
                    for i in 0..per_producer {
                        tx.send(p * per_producer + i).unwrap();
                    }
                });
            }
            drop(tx);
            let consumers: Vec<_> = (0..CONSUMERS)
                .map(|_| {
                    let rx = rx.clone();
                    s.spawn(move || {
                        let mut got = Vec::new();
                        let mut last = vec![None::<u64>; PRODUCERS as usize];
                        for v in rx.iter() {
                            let p = (v / per_producer) as usize;
                            assert!(last[p] < Some(v), "producer {p}'s values out of order");
                            last[p] = Some(v);
                            got.push(v);
                        }
                        got
                    })
                })
                .collect();
            drop(rx);
            consumers.into_iter().map(|c| c.join().unwrap()).collect()
        })
    });
    let mut seen = vec![false; TOTAL as usize];
    let mut count = 0u64;
    for v in received.into_iter().flatten() {
        assert!(!seen[v as usize], "value {v} received twice");
        seen[v as usize] = true;
        count += 1;
    }
    assert_eq!(count, TOTAL, "values lost");
}

#[test]
fn mpmc_cap0_1w() {
    stress(1, 0);
}

#[test]
fn mpmc_cap0_2w() {
    stress(2, 0);
}

#[test]
fn mpmc_cap0_4w() {
    stress(4, 0);
}

#[test]
fn mpmc_cap1_1w() {
    stress(1, 1);
}

#[test]
fn mpmc_cap1_2w() {
    stress(2, 1);
}

#[test]
fn mpmc_cap1_4w() {
    stress(4, 1);
}

#[test]
fn mpmc_cap1024_1w() {
    stress(1, 1024);
}

#[test]
fn mpmc_cap1024_2w() {
    stress(2, 1024);
}

#[test]
fn mpmc_cap1024_4w() {
    stress(4, 1024);
}
