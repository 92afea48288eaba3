//! Unbounded channels: sends never block, values beyond the ring wait in order behind it, and
//! close and drop behave as for bounded channels.

use fibra_channels::{unbounded, TryRecvError, TrySendError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn sends_never_block_and_arrive_in_order() {
    let (tx, rx) = unbounded();
    for i in 0..5_000u32 {
        assert_eq!(tx.try_send(i), Ok(()));
    }
    assert_eq!(rx.len(), 5_000);
    assert!(!tx.is_full());
    assert_eq!(tx.capacity(), usize::MAX);
    // Interleaved sends while the overflow drains keep their place behind it.
    for i in 0..5_000u32 {
        assert_eq!(rx.recv(), Some(i));
        tx.send(5_000 + i).unwrap();
    }
    for i in 5_000..10_000u32 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn close_refuses_sends_and_receivers_drain_the_overflow() {
    let (tx, rx) = unbounded();
    for i in 0..1_000u32 {
        tx.send(i).unwrap();
    }
    assert!(rx.close());
    assert_eq!(tx.try_send(7), Err(TrySendError::Closed(7)));
    assert!(rx.iter().eq(0..1_000));
    assert_eq!(rx.recv(), None);
}

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropping_the_last_reader_drops_what_overflowed() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = unbounded();
    for _ in 0..1_000 {
        tx.send(Counted(dropped.clone())).unwrap();
    }
    drop(rx);
    assert_eq!(dropped.load(Ordering::SeqCst), 1_000);
    assert!(tx.send(Counted(dropped.clone())).is_err());
    assert_eq!(dropped.load(Ordering::SeqCst), 1_001);
}

/// Four senders and four receivers on 1, 2 and 4 workers: every value arrives once, and each
/// sender's values arrive in the order sent.
#[test]
fn mpmc_delivers_everything_once_in_per_sender_order() {
    const PER_SENDER: u64 = 20_000;
    for workers in [1, 2, 4] {
        fibra_testing::on(workers, || {
            let (tx, rx) = unbounded::<(u64, u64)>();
            let received = fibra_runtime::scope(|s| {
                for id in 0..4 {
                    let tx = tx.clone();
                    s.spawn(move || {
                        for i in 0..PER_SENDER {
                            tx.send((id, i)).unwrap();
                        }
                    });
                }
                drop(tx);
                let readers: Vec<_> = (0..4)
                    .map(|_| {
                        let rx = rx.clone();
                        s.spawn(move || {
                            let mut last = [None::<u64>; 4];
                            let mut count = 0u64;
                            for (id, i) in rx.iter() {
                                let id = id as usize;
                                assert!(last[id].is_none_or(|last| last < i), "out of order");
                                last[id] = Some(i);
                                count += 1;
                            }
                            count
                        })
                    })
                    .collect();
                readers
                    .into_iter()
                    .map(|reader| reader.join().unwrap())
                    .sum::<u64>()
            });
            assert_eq!(received, 4 * PER_SENDER);
        });
    }
}

#[test]
fn a_parked_receiver_gets_a_value_sent_later() {
    fibra_testing::on(2, || {
        let (tx, rx) = unbounded::<u8>();
        let receiver = fibra_runtime::spawn(move || rx.recv());
        fibra_testing::let_others_run();
        tx.send(9).unwrap();
        assert_eq!(receiver.join().unwrap(), Some(9));
    });
}
