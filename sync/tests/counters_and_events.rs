//! The count-and-announce primitives: CountDownLatch, WaitGroup, Event, EventCount and
//! Sequencer.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{CountDownLatch, Event, EventCount, Sequencer, WaitGroup};
use fibra_testing::{let_others_run, on, on_each_worker_count, poll_once, until_parked};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

#[test]
fn latch_releases_all_waiters_at_zero_and_saturates() {
    on_each_worker_count(|_| {
        let latch = CountDownLatch::new(3);
        let passed = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    latch.wait();
                    assert_eq!(latch.count(), 0);
                    passed.fetch_add(1, Ordering::SeqCst);
                });
            }
            fibra_runtime::yield_now();
            assert_eq!(passed.load(Ordering::SeqCst), 0);
            latch.count_down();
            latch.count_down_n(5); // past zero: saturates
            latch.count_down();
        });
        assert_eq!(passed.load(Ordering::SeqCst), 6);
        assert_eq!(latch.count(), 0);
    });
}

#[test]
fn latch_timeout_and_future() {
    let latch = CountDownLatch::new(2);
    assert!(latch.wait_timeout(Duration::from_millis(2)).is_err());
    let mut future = latch.wait_async();
    assert!(poll_once(&mut future).is_pending());
    latch.count_down();
    assert!(poll_once(&mut future).is_pending());
    latch.count_down();
    assert!(poll_once(&mut future).is_ready());
    assert!(latch.wait_timeout(Duration::from_secs(60)).is_ok());
    assert_eq!(format!("{latch:?}"), "CountDownLatch { count: 0, .. }");
}

#[test]
#[should_panic(expected = "CountDownLatch::new(0)")]
fn latch_of_zero_panics() {
    let _ = CountDownLatch::new(0);
}

#[test]
fn wait_group_waits_for_every_done_and_is_reusable() {
    on_each_worker_count(|_| {
        let wg = WaitGroup::new();
        let finished = AtomicUsize::new(0);
        for round in 1..=3 {
            fibra_runtime::scope(|s| {
                wg.add(10);
                for _ in 0..10 {
                    s.spawn(|| {
                        fibra_runtime::yield_now();
                        finished.fetch_add(1, Ordering::SeqCst);
                        wg.done();
                    });
                }
                wg.wait();
                assert_eq!(finished.load(Ordering::SeqCst), 10 * round);
                assert_eq!(wg.count(), 0);
            });
        }
    });
}

#[test]
fn wait_group_timeout_and_future() {
    let wg = WaitGroup::new();
    assert!(
        wg.wait_timeout(Duration::from_millis(1)).is_ok(),
        "zero: ready"
    );
    wg.add(1);
    assert!(wg.wait_timeout(Duration::from_millis(2)).is_err());
    let mut future = wg.wait_async();
    assert!(poll_once(&mut future).is_pending());
    wg.done();
    assert!(poll_once(&mut future).is_ready());
}

/// `done` at zero releases every waiter present, even one that has not run when an `add`
/// raises the counter again.
#[test]
fn wait_group_zero_releases_present_waiters_even_if_add_follows_at_once() {
    on(1, || {
        let wg = WaitGroup::new();
        wg.add(1);
        fibra_runtime::scope(|s| {
            // Bounded, so that a waiter that parks anew fails the test instead of hanging it.
            let waiter = s.spawn(|| wg.wait_timeout(Duration::from_secs(2)));
            until_parked(waiter.fiber());
            let mut future = wg.wait_async();
            assert!(poll_once(&mut future).is_pending());
            wg.done();
            wg.add(1);
            let future_done = poll_once(&mut future).is_ready();
            assert_eq!(
                (waiter.join().unwrap(), future_done),
                (Ok(()), true),
                "(the blocking wait, the future): both waited anew after the add"
            );
        });
        assert_eq!(wg.count(), 1);
    });
}

#[test]
#[should_panic(expected = "negative WaitGroup counter")]
fn wait_group_done_below_zero_panics() {
    let wg = WaitGroup::new();
    wg.add(1);
    wg.done();
    wg.done();
}

#[test]
#[should_panic(expected = "overflows the counter")]
fn wait_group_overflow_panics() {
    let wg = WaitGroup::new();
    wg.add(usize::MAX);
    wg.add(1);
}

#[test]
fn event_set_releases_present_and_future_waiters_until_reset() {
    on_each_worker_count(|_| {
        let event = Event::new();
        let passed = AtomicUsize::new(0);
        fibra_runtime::scope(|s| {
            for _ in 0..5 {
                s.spawn(|| {
                    event.wait();
                    passed.fetch_add(1, Ordering::SeqCst);
                });
            }
            fibra_runtime::yield_now();
            assert_eq!(passed.load(Ordering::SeqCst), 0);
            event.set();
        });
        assert_eq!(passed.load(Ordering::SeqCst), 5);
        event.wait(); // still set
        event.reset();
        assert!(!event.is_set());
        assert!(event.wait_timeout(Duration::from_millis(2)).is_err());
    });
}

#[test]
fn event_future_and_timeout() {
    on(1, || {
        let event = Arc::new(Event::new());
        let waiter = {
            let event = event.clone();
            fibra_runtime::spawn_local(move || event.wait_timeout(Duration::from_secs(60)))
        };
        let_others_run();
        let mut future = event.wait_async();
        assert!(poll_once(&mut future).is_pending());
        event.set();
        assert!(poll_once(&mut future).is_ready());
        assert_eq!(waiter.join().unwrap(), Ok(()));
    });
}

/// `set` releases every waiter present, even one that has not run when a `reset` follows.
#[test]
fn event_set_releases_present_waiters_even_if_reset_follows_at_once() {
    on(1, || {
        let event = Event::new();
        fibra_runtime::scope(|s| {
            // Bounded, so that a waiter that parks anew fails the test instead of hanging it.
            let waiter = s.spawn(|| event.wait_timeout(Duration::from_secs(2)));
            until_parked(waiter.fiber());
            let mut future = event.wait_async();
            assert!(poll_once(&mut future).is_pending());
            event.set();
            event.reset();
            let future_done = poll_once(&mut future).is_ready();
            assert_eq!(
                (waiter.join().unwrap(), future_done),
                (Ok(()), true),
                "(the blocking wait, the future): both waited anew after the reset"
            );
        });
        assert!(!event.is_set());
    });
}

#[test]
fn event_count_wakes_exactly_the_waiters_whose_value_is_reached() {
    on(1, || {
        let ec = Arc::new(EventCount::new());
        let woke = Arc::new(StdMutex::new(Vec::new()));
        let waiters: Vec<_> = [3, 1, 2, 1]
            .into_iter()
            .map(|value| {
                let (ec, woke) = (ec.clone(), woke.clone());
                let fiber = fibra_runtime::spawn_local(move || {
                    ec.await_value(value);
                    woke.lock().unwrap().push(value);
                });
                let_others_run();
                fiber
            })
            .collect();
        for (advance, expected) in [(1, vec![1, 1]), (2, vec![1, 1, 2]), (3, vec![1, 1, 2, 3])] {
            assert_eq!(ec.advance(), advance);
            let_others_run();
            assert_eq!(*woke.lock().unwrap(), expected);
        }
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(ec.read(), 3);
    });
}

#[test]
fn event_count_timeout_and_future() {
    let ec = EventCount::new();
    ec.await_value(0);
    assert!(ec.await_value_timeout(1, Duration::from_millis(2)).is_err());
    let mut future = ec.await_value_async(2);
    assert!(poll_once(&mut future).is_pending());
    ec.advance();
    assert!(poll_once(&mut future).is_pending());
    ec.advance();
    assert!(poll_once(&mut future).is_ready());
}

#[test]
fn sequencer_and_event_count_order_a_critical_section_by_ticket() {
    on_each_worker_count(|_| {
        let (turn, tickets) = (EventCount::new(), Sequencer::new());
        let order = StdMutex::new(Vec::new());
        fibra_runtime::scope(|s| {
            for _ in 0..20 {
                s.spawn(|| {
                    for _ in 0..10 {
                        let ticket = tickets.ticket();
                        turn.await_value(ticket);
                        order.lock().unwrap().push(ticket);
                        turn.advance();
                    }
                });
            }
        });
        assert_eq!(order.into_inner().unwrap(), (0..200).collect::<Vec<_>>());
        assert_eq!(turn.read(), 200);
    });
}
