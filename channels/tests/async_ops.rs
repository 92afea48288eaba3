//! The async forms: futures, `Stream`, dropping futures, and mixing fibers, threads and tokio
//! tasks on one channel.

use fibra_channels::bounded;
use futures::StreamExt;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

fn tokio_multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn send_and_recv_futures_rendezvous_between_tasks() {
    let rt = tokio_multi();
    let (tx, rx) = bounded::<u32>(0);
    rt.block_on(async move {
        let producer = tokio::spawn(async move {
            for i in 0..1000 {
                tx.send_async(i).await.unwrap();
            }
        });
        let mut got = Vec::new();
        while let Some(v) = rx.recv_async().await {
            got.push(v);
        }
        producer.await.unwrap();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    });
}

#[test]
fn stream_yields_every_value_then_ends() {
    let rt = tokio_multi();
    let (tx, rx) = bounded::<u32>(4);
    rt.block_on(async move {
        tokio::spawn(async move {
            for i in 0..500 {
                tx.send_async(i).await.unwrap();
            }
        });
        let got: Vec<u32> = rx.collect().await;
        assert_eq!(got, (0..500).collect::<Vec<_>>());
    });
}

#[test]
fn dropped_recv_future_loses_no_value() {
    let (tx, rx) = bounded::<u32>(0);
    // Register a receive, let a sender hand it a value, then drop the future unpolled.
    {
        let mut fut = pin!(rx.recv_async());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        let sender = std::thread::spawn(move || {
            tx.send(42).unwrap();
            tx
        });
        let tx = sender.join().unwrap();
        drop(tx);
    }
    // The value went back to the channel.
    assert_eq!(rx.recv(), Some(42));
    assert_eq!(rx.recv(), None);
}

/// Receives handed values 1 then 2 (from one sender) give them back in either order: the
/// channel still delivers 1 first. The second give-back used to go in front of the first.
#[test]
fn values_given_back_by_dropped_recv_futures_keep_their_send_order() {
    for second_first in [false, true] {
        let (tx, rx) = bounded::<u32>(0);
        let mut cx = Context::from_waker(Waker::noop());
        let mut parked = [Box::pin(rx.recv_async()), Box::pin(rx.recv_async())];
        for future in &mut parked {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
        // Each is handed to the oldest parked receive.
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let [first, second] = parked;
        if second_first {
            drop(second);
            drop(first);
        } else {
            drop(first);
            drop(second);
        }
        assert_eq!([rx.try_recv(), rx.try_recv()], [Ok(1), Ok(2)]);
    }
}

#[test]
fn dropped_send_future_sends_nothing() {
    let (tx, rx) = bounded::<u32>(0);
    {
        let mut fut = pin!(tx.send_async(1));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
    }
    assert!(rx.try_recv().is_err());
    drop(tx);
    assert_eq!(rx.recv(), None);
}

#[test]
fn recv_future_sees_close() {
    let rt = tokio_multi();
    let (tx, rx) = bounded::<u32>(1);
    rt.block_on(async move {
        let waiter = tokio::spawn(async move { rx.recv_async().await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        tx.close();
        assert_eq!(waiter.await.unwrap(), None);
    });
}

#[test]
fn send_future_gets_value_back_on_close() {
    let rt = tokio_multi();
    let (tx, rx) = bounded::<u32>(0);
    rt.block_on(async move {
        let waiter = tokio::spawn(async move { tx.send_async(8).await });
        tokio::time::sleep(Duration::from_millis(5)).await;
        rx.close();
        assert_eq!(waiter.await.unwrap().unwrap_err().into_inner(), 8);
    });
}

#[test]
fn recv_future_on_a_timer_channel_wakes_at_the_deadline() {
    let rt = tokio_multi();
    rt.block_on(async {
        let timeout = fibra_channels::close_after(Duration::from_millis(5));
        assert_eq!(timeout.recv_async().await, None);
        let ticks = fibra_channels::tick(Duration::from_millis(1));
        assert!(ticks.recv_async().await.is_some());
    });
    // Outside any tokio runtime.
    let timeout = fibra_channels::close_after(Duration::from_millis(5));
    assert_eq!(futures::executor::block_on(timeout.recv_async()), None);
}

/// Fibers, plain threads and tokio tasks send and receive on the same channels; a thread
/// closes one of them. Every value arrives exactly once.
#[test]
fn fibers_threads_and_tokio_tasks_mix() {
    const PER: u64 = 2000;
    for cap in [0, 1, 64] {
        let (tx, rx) = bounded::<u64>(cap);
        let sum = Arc::new(AtomicU64::new(0));
        let count = Arc::new(AtomicU64::new(0));
        let tokio_rt = tokio_multi();
        let fibra_rt = fibra_runtime::Runtime::builder()
            .workers(2)
            .build()
            .unwrap();

        // A tokio task receives.
        let tokio_receiver = {
            let (rx, sum, count) = (rx.clone(), sum.clone(), count.clone());
            tokio_rt.spawn(async move {
                while let Some(v) = rx.recv_async().await {
                    sum.fetch_add(v, Ordering::Relaxed);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // A thread receives.
        let thread_receiver = {
            let (rx, sum, count) = (rx.clone(), sum.clone(), count.clone());
            std::thread::spawn(move || {
                for v in rx.iter() {
                    sum.fetch_add(v, Ordering::Relaxed);
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // A tokio task and a thread send.
        let tokio_sender = {
            let tx = tx.clone();
            tokio_rt.spawn(async move {
                for i in 0..PER {
                    tx.send_async(i).await.unwrap();
                }
            })
        };
        let thread_sender = {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..PER {
                    tx.send(PER + i).unwrap();
                }
            })
        };
        // Fibers send and receive. Every sender owns a writer and drops it when done; the
        // last one to finish closes the channel, which ends every receiver.
        let fibra_tx = tx.clone();
        drop(tx);
        fibra_rt.block_on(|| {
            fibra_runtime::scope(|s| {
                s.spawn(move || {
                    for i in 0..PER {
                        fibra_tx.send(2 * PER + i).unwrap();
                    }
                });
                s.spawn(|| {
                    for v in rx.iter() {
                        sum.fetch_add(v, Ordering::Relaxed);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                });
            });
        });
        thread_sender.join().unwrap();
        tokio_rt.block_on(tokio_sender).unwrap();
        thread_receiver.join().unwrap();
        tokio_rt.block_on(tokio_receiver).unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 3 * PER, "cap {cap}");
        assert_eq!(
            sum.load(Ordering::Relaxed),
            (0..3 * PER).sum::<u64>(),
            "cap {cap}"
        );
    }
}

#[test]
fn a_thread_closes_while_fibers_and_tasks_wait() {
    let (tx, rx) = bounded::<u8>(0);
    let tokio_rt = tokio_multi();
    let task = {
        let rx = rx.clone();
        tokio_rt.spawn(async move { rx.recv_async().await })
    };
    let closer = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            tx.close();
        })
    };
    let fiber_result = fibra_runtime::run(move || rx.recv());
    closer.join().unwrap();
    assert_eq!(fiber_result, None);
    assert_eq!(tokio_rt.block_on(task).unwrap(), None);
    drop(tx);
}

/// Sleeps until a tick of `period` made at `made` is due.
fn until_due(made: std::time::Instant, period: Duration) {
    std::thread::sleep(
        (made + period + Duration::from_millis(20))
            .saturating_duration_since(std::time::Instant::now()),
    );
}

#[test]
fn a_recv_future_whose_timer_panics_leaves_no_registration_behind() {
    let period = Duration::from_millis(500);
    let made = std::time::Instant::now();
    let rx = fibra_channels::tick(period);
    // Timers off: the future registers, then its timer panics.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(rx.recv_async())
    }));
    assert!(polled.is_err(), "a timer without a time driver panics");
    until_due(made, period);
    // A registration left behind would have taken the tick into the freed future.
    assert!(rx.try_recv().is_ok());
}

#[test]
fn a_recv_future_polled_after_its_runtime_shut_down_gives_the_tick_back_when_dropped() {
    let period = Duration::from_millis(500);
    let made = std::time::Instant::now();
    let rx = fibra_channels::tick(period);
    let mut future = Box::pin(rx.recv_async());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let first = rt.block_on(futures::future::poll_fn(|cx| {
        std::task::Poll::Ready(future.as_mut().poll(cx))
    }));
    assert!(first.is_pending());
    drop(rt);
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }));
    assert!(again.is_err(), "its timer's runtime is gone");
    until_due(made, period);
    // Still registered, the future may have taken the tick; dropping it gives the tick back.
    let early = rx.try_recv();
    drop(future);
    assert!(early.or_else(|_| rx.try_recv()).is_ok());
}
