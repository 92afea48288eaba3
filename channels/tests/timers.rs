//! Timer channels: `close_after`, `close_at`, `tick`.

use fibra_channels::{close_after, close_at, tick, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

#[test]
fn close_after_closes_never_early() {
    for in_fiber in [false, true] {
        let check = || {
            let start = Instant::now();
            let timer = close_after(Duration::from_millis(5));
            assert_eq!(timer.try_recv(), Err(TryRecvError::Empty));
            assert_eq!(timer.recv(), None);
            assert!(start.elapsed() >= Duration::from_millis(5));
            assert!(timer.is_closed());
            assert_eq!(timer.try_recv(), Err(TryRecvError::Closed));
        };
        if in_fiber {
            fibra_runtime::run(check);
        } else {
            check();
        }
    }
}

#[test]
fn close_at_in_the_past_is_closed_at_once() {
    let timer = close_at(Instant::now());
    assert!(timer.is_closed());
    assert_eq!(timer.recv(), None);
}

#[test]
fn a_shorter_recv_timeout_times_out_first() {
    let timer = close_after(Duration::from_secs(3600));
    assert_eq!(
        timer.recv_timeout(Duration::from_millis(2)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(!timer.is_closed());
}

#[test]
fn closing_a_timer_early_wakes_its_waiters() {
    let timer = close_after(Duration::from_secs(3600));
    let closer = {
        let timer = timer.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            timer.close()
        })
    };
    let got = fibra_runtime::run(|| {
        fibra_runtime::scope(|s| {
            let a = s.spawn(|| timer.recv());
            let b = s.spawn(|| timer.recv());
            (a.join().unwrap(), b.join().unwrap())
        })
    });
    assert_eq!(got, (None, None));
    assert!(closer.join().unwrap());
}

#[test]
fn huge_durations_never_close() {
    let timer = close_after(Duration::MAX);
    assert!(!timer.is_closed());
    assert_eq!(
        timer.recv_timeout(Duration::from_millis(1)),
        Err(RecvTimeoutError::Timeout)
    );
}

#[test]
fn tick_delivers_increasing_ticks_a_period_apart() {
    fibra_runtime::run(|| {
        let period = Duration::from_millis(2);
        let start = Instant::now();
        let ticks = tick(period);
        let mut last = start;
        for _ in 0..5 {
            let t = ticks.recv().unwrap();
            assert!(t >= last + period, "ticks are a period apart");
            assert!(Instant::now() >= t, "a tick is never delivered early");
            last = t;
        }
        assert!(ticks.close());
        assert_eq!(ticks.recv(), None);
    });
}

#[test]
fn a_slow_receiver_gets_one_tick_not_a_burst() {
    let period = Duration::from_millis(1);
    let ticks = tick(period);
    std::thread::sleep(Duration::from_millis(20));
    assert!(ticks.len() <= 1);
    let before = Instant::now();
    let first = ticks.recv().unwrap();
    assert!(
        first + period > before,
        "the latest due tick is delivered, not the oldest"
    );
    let second = ticks.recv().unwrap();
    assert!(second >= first + period);
}

/// A tick buffered for a receiver that came much later used to stay, and the later ticks
/// were dropped: the receiver got the oldest. Every sleep only bounds time from below, so
/// the bound asserted holds however late the receive runs.
#[test]
fn a_buffered_tick_is_replaced_by_the_latest_due_one() {
    let period = Duration::from_millis(5);
    let ticks = tick(period);
    std::thread::sleep(period * 2);
    assert_eq!(ticks.len(), 1, "this look buffers a due tick");
    std::thread::sleep(period * 4);
    let before = Instant::now();
    let got = ticks.recv().unwrap();
    assert!(
        got + period > before,
        "the tick delivered is the latest due one, less than a period before the receive"
    );
}

#[test]
#[should_panic(expected = "tick: the period must be non-zero")]
fn tick_zero_panics() {
    let _ = tick(Duration::ZERO);
}

#[test]
fn timer_readers_clone_and_share_one_deadline() {
    let timer = close_after(Duration::from_millis(3));
    let other = timer.clone();
    assert!(timer.same_channel(&other));
    assert_eq!(other.recv(), None);
    assert!(timer.is_closed());
}
