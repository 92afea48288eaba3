//! Go's channel semantics as executable tests, in fibers and on plain threads, written as a
//! user writes them (through the facade).

// tokio compiles its networking out under `--cfg loom`, and the facade needs it.
#![cfg(not(loom))]

use fibra::chan::{bounded, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn fifo_per_sender_buffered_and_rendezvous() {
    for cap in [0, 1, 3, 64] {
        let (tx, rx) = bounded(cap);
        let got = fibra::run(move || {
            fibra::scope(|s| {
                s.spawn(move || {
                    for i in 0..500 {
                        tx.send(i).unwrap();
                    }
                });
                rx.iter().collect::<Vec<_>>()
            })
        });
        assert_eq!(got, (0..500).collect::<Vec<_>>(), "cap {cap}");
    }
}

#[test]
fn rendezvous_send_waits_for_a_receiver() {
    fibra::run(|| {
        let (tx, rx) = bounded(0);
        let sent = AtomicBool::new(false);
        fibra::scope(|s| {
            s.spawn(|| {
                tx.send(1).unwrap();
                sent.store(true, Ordering::SeqCst);
            });
            for _ in 0..50 {
                fibra::yield_now();
            }
            assert!(
                !sent.load(Ordering::SeqCst),
                "a rendezvous send completed without a receiver"
            );
            assert_eq!(tx.len(), 0);
            assert_eq!(rx.recv(), Some(1));
        });
        assert!(sent.load(Ordering::SeqCst));
    });
}

#[test]
fn rendezvous_try_send_needs_a_parked_receiver() {
    fibra::run(|| {
        let (tx, rx) = bounded(0);
        assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
        fibra::scope(|s| {
            let receiver = s.spawn(|| rx.recv());
            // Let the receiver park.
            while tx.try_send(2).is_err() {
                fibra::yield_now();
            }
            assert_eq!(receiver.join().unwrap(), Some(2));
        });
    });
}

#[test]
fn buffered_send_blocks_only_when_full() {
    fibra::run(|| {
        let (tx, rx) = bounded(2);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert!(tx.is_full());
        let third_done = AtomicBool::new(false);
        fibra::scope(|s| {
            s.spawn(|| {
                tx.send(3).unwrap();
                third_done.store(true, Ordering::SeqCst);
            });
            for _ in 0..20 {
                fibra::yield_now();
            }
            assert!(!third_done.load(Ordering::SeqCst));
            assert_eq!(rx.recv(), Some(1));
        });
        assert!(third_done.load(Ordering::SeqCst));
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [2, 3]);
    });
}

#[test]
fn close_wakes_every_parked_receiver_and_sender() {
    fibra::run(|| {
        let (_tx, rx) = bounded::<u32>(0);
        let (tx_full, rx_full) = bounded::<u32>(0);
        fibra::scope(|s| {
            let receivers: Vec<_> = (0..5).map(|_| s.spawn(|| rx.recv())).collect();
            let senders: Vec<_> = (0..5)
                .map(|i| {
                    let tx_full = &tx_full;
                    s.spawn(move || tx_full.send(i))
                })
                .collect();
            for _ in 0..20 {
                fibra::yield_now();
            }
            assert!(rx.close());
            assert!(rx_full.close());
            for r in receivers {
                assert_eq!(r.join().unwrap(), None);
            }
            let mut returned: Vec<u32> = senders
                .into_iter()
                .map(|h| h.join().unwrap().unwrap_err().into_inner())
                .collect();
            returned.sort();
            assert_eq!(
                returned,
                [0, 1, 2, 3, 4],
                "every sender gets its value back"
            );
        });
    });
}

#[test]
fn close_from_a_thread_wakes_fibers() {
    let rt = fibra_testing::runtime(2);
    let (tx, rx) = bounded::<u8>(0);
    let closer = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.close()
        })
    };
    let got = rt.block_on(move || {
        fibra::scope(|s| {
            let handles: Vec<_> = (0..4).map(|_| s.spawn(|| rx.recv())).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    });
    assert_eq!(got, [None; 4]);
    assert!(closer.join().unwrap());
    assert!(tx.send(1).is_err());
}

#[test]
fn recv_after_close_drains_then_none() {
    let (tx, rx) = bounded(4);
    for i in 0..4 {
        tx.send(i).unwrap();
    }
    assert!(tx.close());
    assert!(!tx.close(), "close is idempotent");
    assert!(!rx.close());
    assert!(rx.is_closed() && tx.is_closed());
    assert_eq!(tx.send(9).unwrap_err().into_inner(), 9);
    assert_eq!(tx.try_send(9), Err(TrySendError::Closed(9)));
    assert_eq!(rx.len(), 4);
    assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(rx.recv(), None);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)),
        Err(RecvTimeoutError::Closed)
    );
}

#[test]
fn last_writer_drop_closes_and_clones_keep_it_open() {
    let (tx, rx) = bounded::<u8>(1);
    let tx2 = tx.clone();
    drop(tx);
    assert!(!rx.is_closed());
    tx2.send(1).unwrap();
    drop(tx2);
    assert!(rx.is_closed());
    assert_eq!(rx.recv(), Some(1));
    assert_eq!(rx.recv(), None);
}

#[test]
fn last_reader_drop_makes_sends_fail() {
    let (tx, rx) = bounded::<u8>(1);
    let rx2 = rx.clone();
    drop(rx);
    tx.send(1).unwrap();
    drop(rx2);
    assert!(tx.is_closed());
    assert_eq!(tx.send(2), Err(fibra::chan::SendError(2)));
    assert_eq!(
        tx.len(),
        0,
        "buffered values are dropped with the last reader"
    );
}

#[test]
fn last_reader_drop_wakes_a_parked_sender() {
    fibra::run(|| {
        let (tx, rx) = bounded::<u8>(0);
        fibra::scope(|s| {
            let sender = s.spawn(|| tx.send(7));
            for _ in 0..10 {
                fibra::yield_now();
            }
            drop(rx);
            assert_eq!(sender.join().unwrap().unwrap_err().into_inner(), 7);
        });
    });
}

#[test]
fn try_operations_never_park() {
    // On a plain thread a park would hang the test: every call here must return at once.
    let (tx, rx) = bounded::<u8>(1);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    assert_eq!(rx.try_recv(), Ok(1));
    let (tx0, rx0) = bounded::<u8>(0);
    assert_eq!(tx0.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx0.try_recv(), Err(TryRecvError::Empty));
    fibra::run(|| {
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(tx0.try_send(3), Err(TrySendError::Full(3)));
    });
}

#[test]
fn timeouts_return_the_timed_out_error() {
    let (tx, rx) = bounded::<u8>(0);
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(2)),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(
        tx.send_timeout(4, Duration::from_millis(2)),
        Err(SendTimeoutError::Timeout(4))
    );
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    fibra::run(|| {
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(2)),
            Err(RecvTimeoutError::Timeout)
        );
        assert_eq!(
            tx.send_timeout(5, Duration::from_millis(2)),
            Err(SendTimeoutError::Timeout(5))
        );
    });
    // A timed-out wait leaves nothing registered: later operations pair up normally.
    fibra::run(|| {
        fibra::scope(|s| {
            s.spawn(|| tx.send(6).unwrap());
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(6));
        });
    });
}

#[test]
fn timeout_does_not_lose_a_value_that_arrives() {
    fibra::run(|| {
        let (tx, rx) = bounded(0);
        fibra::scope(|s| {
            s.spawn(|| {
                for i in 0..200 {
                    tx.send(i).unwrap();
                }
            });
            let mut got = Vec::new();
            while got.len() < 200 {
                if let Ok(v) = rx.recv_timeout(Duration::from_micros(50)) {
                    got.push(v);
                }
            }
            assert_eq!(got, (0..200).collect::<Vec<_>>());
        });
    });
}

#[test]
fn huge_timeouts_do_not_overflow() {
    let (tx, rx) = bounded(1);
    tx.send_timeout(1, Duration::MAX).unwrap();
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
}

#[test]
fn len_capacity_and_fullness() {
    let (tx, rx) = bounded(3);
    assert_eq!((tx.capacity(), rx.capacity()), (3, 3));
    assert!(rx.is_empty() && !rx.is_full());
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert_eq!((tx.len(), rx.len()), (2, 2));
    tx.send(3).unwrap();
    assert!(tx.is_full() && rx.is_full());
    let (tx0, rx0) = bounded::<u8>(0);
    assert_eq!(tx0.capacity(), 0);
    assert!(rx0.is_empty() && rx0.is_full());
    assert!(tx.same_channel(&tx.clone()) && rx.same_channel(&rx.clone()));
    let (_other_tx, other_rx) = bounded::<i32>(3);
    assert!(!rx.same_channel(&other_rx));
}

/// Counts drops of its values.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn buffered_values_are_dropped_exactly_once_when_the_channel_dies() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded(8);
    for _ in 0..5 {
        tx.send(Tracked(drops.clone())).unwrap();
    }
    drop(rx.recv());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(tx);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "closing keeps buffered values"
    );
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), 5);

    // Writers outliving the last reader: buffered values go when the reader does.
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = bounded(8);
    for _ in 0..3 {
        tx.send(Tracked(drops.clone())).unwrap();
    }
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    let err = tx.send(Tracked(drops.clone())).unwrap_err();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "a refused value comes back, not dropped"
    );
    drop(err);
    drop(tx);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
}

/// Spawns `f` and returns once it has parked (in the blocking call it makes).
fn spawn_until_parked<'scope, 'env, T: Send + 'scope>(
    s: &'scope fibra::Scope<'scope, 'env>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> fibra::ScopedJoinHandle<'scope, T> {
    let handle = s.spawn(f);
    fibra_testing::until_parked(handle.fiber());
    handle
}

#[test]
fn waiters_are_woken_in_fifo_order() {
    fibra_testing::runtime(1).block_on(|| {
        let (tx, rx) = bounded::<u32>(0);
        let order = std::sync::Mutex::new(Vec::new());
        fibra::scope(|s| {
            for id in 0..5 {
                let (rx, order) = (&rx, &order);
                spawn_until_parked(s, move || {
                    let v = rx.recv().unwrap();
                    order.lock().unwrap().push((id, v));
                });
            }
            for v in 0..5 {
                tx.send(v).unwrap();
            }
        });
        let order = order.into_inner().unwrap();
        assert_eq!(order.len(), 5);
        assert!(
            order.iter().all(|&(id, v)| id == v),
            "the first parked receiver gets the first value: {order:?}"
        );
    });
}

#[test]
fn parked_senders_move_into_the_buffer_in_order() {
    fibra_testing::runtime(1).block_on(|| {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(0).unwrap();
        fibra::scope(|s| {
            for v in 1..=4 {
                let tx = &tx;
                spawn_until_parked(s, move || tx.send(v).unwrap());
            }
            let got: Vec<u32> = (0..5).map(|_| rx.recv().unwrap()).collect();
            assert_eq!(got, [0, 1, 2, 3, 4]);
        });
    });
}

#[test]
fn ends_are_send_sync_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<fibra::chan::Writer<std::cell::Cell<u8>>>();
    check::<fibra::chan::Reader<std::cell::Cell<u8>>>();
    fn send<T: Send>() {}
    send::<fibra::chan::RecvFuture<'static, u8>>();
    send::<fibra::chan::SendFuture<'static, u8>>();
}

#[test]
fn errors_display() {
    assert_eq!(
        fibra::chan::SendError(1).to_string(),
        "sending on a closed channel"
    );
    assert_eq!(
        TrySendError::Full(1).to_string(),
        "sending on a full channel"
    );
    assert_eq!(
        TryRecvError::Empty.to_string(),
        "receiving on an empty channel"
    );
    assert_eq!(
        TryRecvError::Closed.to_string(),
        "receiving on a closed channel"
    );
    assert_eq!(
        RecvTimeoutError::Timeout.to_string(),
        "timed out waiting on receive operation"
    );
    assert_eq!(
        SendTimeoutError::Timeout(1).to_string(),
        "timed out waiting on send operation"
    );
    assert_eq!(
        format!("{:?}", fibra::chan::SendError(String::new())),
        "SendError { .. }"
    );
}
