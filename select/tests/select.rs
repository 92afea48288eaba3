//! `select!`, `select_biased!` and `Select`: fairness, exactly-one-winner, closed channels,
//! guards, defaults, timers, and the panics.

use fibra_channels::{bounded, close_after, Reader, TryRecvError};
use fibra_select::{select, select_biased, Select};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Two arms that are always ready: over 100 000 selects each wins 45–55% (expected 50 000 ±
/// 158 sd; the bounds are 31 sd away, so this cannot flake).
#[test]
fn fair_select_splits_evenly_between_two_ready_arms() {
    let (tx_a, rx_a) = bounded(1);
    let (tx_b, rx_b) = bounded(1);
    tx_a.send(()).unwrap();
    tx_b.send(()).unwrap();
    let (mut a, mut b) = (0u32, 0u32);
    for _ in 0..100_000 {
        select! {
            recv(rx_a) -> msg => { msg.unwrap(); a += 1; tx_a.send(()).unwrap(); }
            recv(rx_b) -> msg => { msg.unwrap(); b += 1; tx_b.send(()).unwrap(); }
        }
    }
    assert_eq!(a + b, 100_000);
    assert!((45_000..=55_000).contains(&a), "a won {a}, b won {b}");
    assert!((45_000..=55_000).contains(&b), "a won {a}, b won {b}");
}

#[test]
fn fair_select_over_closed_channels_splits_evenly_too() {
    let (_, rx_a) = bounded::<u8>(1);
    let (_, rx_b) = bounded::<u8>(1);
    let (_, rx_c) = bounded::<u8>(1);
    let mut wins = [0u32; 3];
    for _ in 0..30_000 {
        let i = select! {
            recv(rx_a) -> _ => 0,
            recv(rx_b) -> _ => 1,
            recv(rx_c) -> _ => 2,
        };
        wins[i] += 1;
    }
    // Expected 10 000 each (sd 82): 9000 is 12 sd away.
    assert!(wins.iter().all(|&w| w > 9_000), "{wins:?}");
}

#[test]
fn biased_select_prefers_the_first_ready_arm() {
    let (tx_a, rx_a) = bounded(1);
    let (tx_b, rx_b) = bounded(1);
    tx_b.send(2).unwrap();
    for _ in 0..1000 {
        tx_a.send(1).unwrap();
        let got = select_biased! {
            recv(rx_a) -> msg => msg,
            recv(rx_b) -> msg => msg,
        };
        assert_eq!(got, Some(1));
    }
    assert_eq!(rx_b.try_recv(), Ok(2));
}

#[test]
fn some_arms_need_a_value_none_arms_need_closed_and_drained() {
    let (tx, rx) = bounded(2);
    tx.send(1).unwrap();
    tx.close();
    // A value is buffered: the `None` arm is not ready even though the channel is closed.
    let got = select! {
        recv(rx) -> None => "closed",
        recv(rx) -> Some(v) => { assert_eq!(v, 1); "value" }
    };
    assert_eq!(got, "value");
    let got = select! {
        recv(rx) -> None => "closed",
        recv(rx) -> Some(_) => "value",
    };
    assert_eq!(got, "closed");
    let got = select! {
        recv(rx) -> msg => msg,
    };
    assert_eq!(got, None);
}

#[test]
fn a_none_arm_takes_no_value() {
    let (tx, rx) = bounded(1);
    let ready = select! {
        recv(rx) -> None => false,
        default => true,
    };
    assert!(ready);
    tx.send(5).unwrap();
    let ready = select! {
        recv(rx) -> None => false,
        default => true,
    };
    assert!(ready);
    assert_eq!(rx.try_recv(), Ok(5));
}

#[test]
#[should_panic(expected = "select: all channels closed")]
fn every_channel_closed_without_a_closed_arm_panics() {
    let (_, rx_a) = bounded::<u8>(1);
    let (_, rx_b) = bounded::<u8>(0);
    select! {
        recv(rx_a) -> Some(_) => {}
        recv(rx_b) -> Some(_) => {}
    }
}

#[test]
#[should_panic(expected = "select: all channels closed")]
fn a_channel_closing_while_waiting_panics_without_a_closed_arm() {
    let (tx, rx) = bounded::<u8>(0);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        drop(tx);
    });
    select! {
        recv(rx) -> Some(_) => {}
    }
}

#[test]
#[should_panic(expected = "select: all arms disabled")]
fn all_guards_false_panics() {
    let (_tx, rx) = bounded::<u8>(1);
    let enabled = false;
    select! {
        recv(rx) if enabled -> _ => {}
    }
}

#[test]
#[should_panic(expected = "select: all arms disabled")]
fn an_empty_select_panics() {
    select! {}
}

#[test]
fn closed_channels_with_a_default_run_the_default() {
    let (_, rx) = bounded::<u8>(1);
    let got = select! {
        recv(rx) -> Some(_) => "value",
        default => "default",
    };
    assert_eq!(got, "default");
}

/// A select none of whose arms can complete (every guard false, or every channel closed and
/// no arm accepting that) used to run `default(timeout)` at once, so a loop around it spun;
/// it waits out its timeout, as Go's select with a timer arm does.
#[test]
fn default_timeout_waits_out_its_timeout_when_no_arm_can_complete() {
    fibra_testing::on(1, || {
        let (_, closed) = bounded::<u8>(1);
        let enabled = false;
        let token = fibra_runtime::CancelToken::new();
        let cancellable = || fibra_runtime::ScopeOptions::new().token(token.clone());
        let hour = Duration::from_secs(3600);
        fibra_runtime::scope(|s| {
            let waiting = [
                s.spawn(|| {
                    fibra_runtime::scope_with(cancellable(), |_| {
                        select! {
                            recv(closed) -> Some(_) => "value",
                            default(hour) => "default",
                        }
                    })
                }),
                s.spawn(|| {
                    fibra_runtime::scope_with(cancellable(), |_| {
                        select! {
                            recv(closed) if enabled -> _ => "value",
                            default(hour) => "default",
                        }
                    })
                }),
            ];
            // On the one worker, the unstarted fibers run first, until they park.
            fibra_runtime::yield_now();
            assert!(waiting.iter().all(|select| !select.is_finished()));
            token.cancel();
            for select in waiting {
                assert!(select.join().unwrap().is_err(), "cancelled while it waited");
            }
        });
        let start = Instant::now();
        let got = select! {
            recv(closed) -> Some(_) => "value",
            default(Duration::from_millis(5)) => "default",
        };
        assert_eq!(got, "default");
        assert!(start.elapsed() >= Duration::from_millis(5), "never early");
    });
}

#[test]
fn a_false_guard_disables_its_arm_and_skips_its_value() {
    let (tx, rx) = bounded(1);
    tx.send(1).unwrap();
    let (tx2, rx2) = bounded(1);
    let mut evaluated = false;
    let got = select! {
        recv(rx) if false -> _ => "disabled",
        send(tx2, { evaluated = true; 9 }) if 1 > 2 -> _ => "disabled send",
        default => "default",
    };
    assert_eq!(got, "default");
    assert!(!evaluated, "a disabled send arm's value is not evaluated");
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn default_runs_when_nothing_is_ready_and_timeout_waits() {
    let (_tx, rx) = bounded::<u8>(0);
    let got = select! {
        recv(rx) -> _ => 1,
        default => 0,
    };
    assert_eq!(got, 0);
    let start = Instant::now();
    let got = select! {
        recv(rx) -> _ => 1,
        default(Duration::from_millis(5)) => 0,
    };
    assert_eq!(got, 0);
    assert!(start.elapsed() >= Duration::from_millis(5), "never early");
}

#[test]
fn close_after_fires_inside_a_select() {
    for in_fiber in [false, true] {
        let run = || {
            let (_tx, rx) = bounded::<u8>(0);
            let start = Instant::now();
            let got = select! {
                recv(rx) -> Some(_) => "value",
                recv(close_after(Duration::from_millis(5))) -> None => "timeout",
            };
            assert_eq!(got, "timeout");
            assert!(start.elapsed() >= Duration::from_millis(5));
        };
        if in_fiber {
            fibra_runtime::run(run);
        } else {
            run();
        }
    }
}

#[test]
fn tick_drives_a_select_loop() {
    fibra_runtime::run(|| {
        let ticks = fibra_channels::tick(Duration::from_millis(1));
        let stop = close_after(Duration::from_millis(30));
        let mut n = 0;
        loop {
            select! {
                recv(ticks) -> Some(_) => n += 1,
                recv(stop) -> None => break,
            }
        }
        assert!(n >= 1);
    });
}

#[test]
fn a_losing_send_arm_leaves_the_channel_unchanged() {
    // Fair select over a ready receive and a ready send: whenever the receive wins, the send's
    // channel must be exactly as before.
    let (tx_in, rx_in) = bounded(1);
    let (tx_out, rx_out) = bounded(1);
    let (mut recv_wins, mut send_wins) = (0, 0);
    for i in 0..2000 {
        tx_in.send(i).unwrap();
        select! {
            recv(rx_in) -> msg => {
                assert_eq!(msg, Some(i));
                recv_wins += 1;
                assert!(rx_out.is_empty(), "a losing send delivered");
            }
            send(tx_out, i) -> res => {
                res.unwrap();
                send_wins += 1;
                assert_eq!(rx_out.try_recv(), Ok(i));
                assert_eq!(rx_in.try_recv(), Ok(i), "a losing receive took a value");
            }
        }
    }
    assert!(recv_wins > 0 && send_wins > 0);
}

#[test]
fn a_losing_send_on_a_rendezvous_channel_delivers_nothing() {
    fibra_runtime::run(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (tx_b, rx_b) = bounded::<u32>(0);
        fibra_runtime::scope(|s| {
            s.spawn(|| tx_b.send(5).unwrap());
            let got = select! {
                send(tx_a, 1) -> _ => None,
                recv(rx_b) -> msg => msg,
            };
            assert_eq!(got, Some(5));
            // Nobody can receive the 1: the losing send delivered nothing.
            assert_eq!(rx_a.try_recv(), Err(TryRecvError::Empty));
        });
    });
}

#[test]
fn send_arm_on_a_closed_channel_gets_its_value_back() {
    let (tx, rx) = bounded::<String>(0);
    drop(rx);
    let got = select! {
        send(tx, "v".to_string()) -> res => res.unwrap_err().into_inner(),
    };
    assert_eq!(got, "v");
}

#[test]
fn a_select_does_not_rendezvous_with_itself() {
    let (tx, rx) = bounded::<u8>(0);
    let got = select! {
        send(tx, 1) -> _ => "sent",
        recv(rx) -> _ => "received",
        default(Duration::from_millis(5)) => "nobody else",
    };
    assert_eq!(got, "nobody else");
}

#[test]
fn bodies_can_break_continue_and_return() {
    fn first_even(rx: &Reader<u32>) -> Option<u32> {
        loop {
            select! {
                recv(rx) -> Some(v) => {
                    if v % 2 == 1 {
                        continue;
                    }
                    return Some(v);
                }
                recv(rx) -> None => break,
            }
        }
        None
    }
    let (tx, rx) = bounded(8);
    for v in [1, 3, 4, 5] {
        tx.send(v).unwrap();
    }
    assert_eq!(first_even(&rx), Some(4));
    drop(tx);
    assert_eq!(rx.recv(), Some(5));
    assert_eq!(first_even(&rx), None);
}

#[test]
fn arms_accept_references_and_temporaries() {
    let (tx, rx) = bounded(1);
    let rx_ref = &rx;
    tx.send(1).unwrap();
    let got = select! { recv(rx_ref) -> msg => msg };
    assert_eq!(got, Some(1));
    let tx_ref = &&tx;
    select! { send(tx_ref, 2) -> res => res.unwrap() }
    assert_eq!(rx.recv(), Some(2));
    // The channel itself is not moved: still usable afterwards.
    drop(rx);
    assert!(tx.send(3).is_err());
}

/// Many producers on several channels, one selecting consumer in a fiber: every value is
/// received exactly once, under 1, 2 and 4 workers.
#[test]
fn select_in_fibers_loses_and_duplicates_nothing() {
    for workers in [1, 2, 4] {
        for cap in [0, 1, 16] {
            let rt = fibra_runtime::Runtime::builder()
                .workers(workers)
                .build()
                .unwrap();
            let got = rt.block_on(move || {
                let chans: Vec<_> = (0..3).map(|_| bounded::<u64>(cap)).collect();
                fibra_runtime::scope(|s| {
                    for (c, (tx, _)) in chans.iter().enumerate() {
                        for p in 0..2u64 {
                            let tx = tx.clone();
                            s.spawn(move || {
                                for i in 0..2000u64 {
                                    tx.send(((c as u64 * 2 + p) << 32) | i).unwrap();
                                }
                            });
                        }
                    }
                    let readers: Vec<Reader<u64>> = chans.iter().map(|(_, rx)| rx.clone()).collect();
                    drop(chans);
                    let mut got = Vec::new();
                    let mut open = [true; 3];
                    while open.iter().any(|&o| o) {
                        select! {
                            recv(readers[0]) if open[0] -> msg => match msg { Some(v) => got.push(v), None => open[0] = false },
                            recv(readers[1]) if open[1] -> msg => match msg { Some(v) => got.push(v), None => open[1] = false },
                            recv(readers[2]) if open[2] -> msg => match msg { Some(v) => got.push(v), None => open[2] = false },
                        }
                    }
                    got
                })
            });
            assert_eq!(got.len(), 6 * 2000, "workers {workers} cap {cap}");
            let unique: HashSet<u64> = got.iter().copied().collect();
            assert_eq!(
                unique.len(),
                got.len(),
                "duplicates, workers {workers} cap {cap}"
            );
            // Per producer, in order.
            for producer in 0..6u64 {
                let seq: Vec<u64> = got
                    .iter()
                    .filter(|&&v| v >> 32 == producer)
                    .map(|&v| v & 0xffff_ffff)
                    .collect();
                assert_eq!(seq, (0..2000).collect::<Vec<_>>());
            }
        }
    }
}

/// Two selecting consumers compete with plain receivers while producers send: exact counts.
#[test]
fn competing_selectors_and_receivers_keep_exact_counts() {
    let rt = fibra_runtime::Runtime::builder()
        .workers(2)
        .build()
        .unwrap();
    let total = rt.block_on(|| {
        let (tx_a, rx_a) = bounded::<u64>(0);
        let (tx_b, rx_b) = bounded::<u64>(0);
        fibra_runtime::scope(|s| {
            for tx in [tx_a, tx_b] {
                for _ in 0..2 {
                    let tx = tx.clone();
                    s.spawn(move || {
                        for i in 1..=1000u64 {
                            tx.send(i).unwrap();
                        }
                    });
                }
            }
            let consumers: Vec<_> = (0..4)
                .map(|k| {
                    let (rx_a, rx_b) = (rx_a.clone(), rx_b.clone());
                    s.spawn(move || {
                        let mut sum = 0u64;
                        if k % 2 == 0 {
                            let (mut a_open, mut b_open) = (true, true);
                            while a_open || b_open {
                                select! {
                                    recv(rx_a) if a_open -> msg => match msg { Some(v) => sum += v, None => a_open = false },
                                    recv(rx_b) if b_open -> msg => match msg { Some(v) => sum += v, None => b_open = false },
                                }
                            }
                        } else {
                            let rx = if k == 1 { rx_a } else { rx_b };
                            sum += rx.iter().sum::<u64>();
                        }
                        sum
                    })
                })
                .collect();
            drop((rx_a, rx_b));
            consumers.into_iter().map(|c| c.join().unwrap()).sum::<u64>()
        })
    });
    assert_eq!(total, 4 * (1000 * 1001 / 2));
}

/// Sums what `first` and `second` deliver until both are closed, with a biased select whose
/// arms stand in that order.
fn sum_biased(first: &Reader<u64>, second: &Reader<u64>) -> u64 {
    let (mut sum, mut open) = (0u64, [true; 2]);
    while open.iter().any(|&o| o) {
        select_biased! {
            recv(first) if open[0] -> msg => match msg { Some(v) => sum += v, None => open[0] = false },
            recv(second) if open[1] -> msg => match msg { Some(v) => sum += v, None => open[1] = false },
        }
    }
    sum
}

/// Two selects over the same channels, with their arms in opposite orders, block and retry
/// side by side: neither waits for good on what the other holds, and nothing is lost.
#[test]
fn selects_over_the_same_channels_in_opposite_orders_both_finish() {
    for workers in [1, 2, 4] {
        let rt = fibra_runtime::Runtime::builder()
            .workers(workers)
            .build()
            .unwrap();
        let total = rt.block_on(|| {
            let (tx_a, rx_a) = bounded::<u64>(1);
            let (tx_b, rx_b) = bounded::<u64>(1);
            fibra_runtime::scope(|s| {
                for tx in [tx_a, tx_b] {
                    s.spawn(move || {
                        for i in 1..=5000u64 {
                            tx.send(i).unwrap();
                        }
                    });
                }
                let forward = {
                    let (rx_a, rx_b) = (rx_a.clone(), rx_b.clone());
                    s.spawn(move || sum_biased(&rx_a, &rx_b))
                };
                let backward = s.spawn(move || sum_biased(&rx_b, &rx_a));
                forward.join().unwrap() + backward.join().unwrap()
            })
        });
        assert_eq!(total, 2 * (5000 * 5001 / 2), "workers {workers}");
    }
}

#[test]
fn select_works_on_plain_threads() {
    let (tx, rx) = bounded(0);
    let t = std::thread::spawn(move || {
        for i in 0..100 {
            tx.send(i).unwrap();
        }
    });
    let mut got = Vec::new();
    loop {
        select! {
            recv(rx) -> Some(v) => got.push(v),
            recv(rx) -> None => break,
        }
    }
    t.join().unwrap();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn dynamic_select_over_many_readers() {
    let chans: Vec<_> = (0..40).map(|_| bounded::<usize>(1)).collect();
    for (i, (tx, _)) in chans.iter().enumerate() {
        if i % 7 == 3 {
            tx.send(i).unwrap();
        }
    }
    let mut seen = Vec::new();
    for _ in 0..6 {
        let mut sel = Select::new();
        for (_, rx) in &chans {
            sel.recv_value(rx, |v| v);
        }
        seen.push(sel.select());
    }
    seen.sort();
    assert_eq!(seen, [3, 10, 17, 24, 31, 38]);
    let mut sel = Select::new();
    for (_, rx) in &chans {
        sel.recv_value(rx, |v| v);
    }
    assert!(sel.try_select().is_err());
}

#[test]
fn dynamic_select_send_closed_and_timeout() {
    let (tx, rx) = bounded::<u8>(0);
    let mut sel = Select::new();
    sel.send(&tx, 1, |res| res.is_ok());
    assert!(sel.select_timeout(Duration::from_millis(2)).is_err());
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "a timed-out send delivers nothing"
    );

    let timer = close_after(Duration::from_millis(2));
    let mut sel = Select::new();
    sel.recv_value(&rx, |_| "value")
        .recv_closed(&timer, || "timer");
    assert_eq!(sel.select(), "timer");

    drop(rx);
    let mut sel = Select::new();
    sel.send(&tx, 7, |res| res.unwrap_err().into_inner());
    assert_eq!(sel.select(), 7);
}

#[test]
#[should_panic(expected = "select: all channels closed")]
fn dynamic_select_with_only_value_arms_on_closed_channels_panics() {
    let (_, rx) = bounded::<u8>(1);
    let mut sel = Select::new();
    sel.recv_value(&rx, |v| v);
    sel.select();
}

#[test]
fn dynamic_select_is_fair_unless_biased() {
    let (_, rx_a) = bounded::<u8>(1);
    let (_, rx_b) = bounded::<u8>(1);
    let mut a = 0;
    for _ in 0..10_000 {
        let mut sel = Select::new();
        sel.recv(&rx_a, |_| true).recv(&rx_b, |_| false);
        a += u32::from(sel.select());
    }
    // Expected 5000 (sd 50): the bounds are 20 sd away.
    assert!((4000..=6000).contains(&a), "{a}");
    for _ in 0..100 {
        let mut sel = Select::new();
        sel.biased().recv(&rx_a, |_| true).recv(&rx_b, |_| false);
        assert!(sel.select());
    }
}

/// A select whose send arm a receive completed after the select's cancellation woke it, but
/// before it ran, used to unwind, though its value was delivered.
#[test]
fn a_send_arm_completed_after_its_cancellation_wins() {
    fibra_testing::on(1, || {
        let (tx, rx) = bounded::<u8>(0);
        let (other_tx, _other_rx) = bounded::<u8>(0);
        let token = fibra_runtime::CancelToken::new();
        fibra_runtime::scope(|s| {
            let selecting = s.spawn(|| {
                let mut won = None;
                let options = fibra_runtime::ScopeOptions::new().token(token.clone());
                // The scope reports its cancellation even when its body returned.
                let _ = fibra_runtime::scope_with(options, |_| {
                    won = Some(select! {
                        send(tx, 7) -> sent => sent.map(|()| "tx"),
                        send(other_tx, 8) -> sent => sent.map(|()| "other"),
                    });
                });
                won
            });
            // On the one worker, the unstarted selecting fiber runs first, until it parks
            // (sends on rendezvous channels register without retrying).
            fibra_runtime::yield_now();
            token.cancel();
            assert_eq!(rx.try_recv(), Ok(7), "the select's send arm was registered");
            assert_eq!(selecting.join().unwrap(), Some(Ok("tx")));
        });
    });
}

#[test]
fn a_waiting_select_is_a_cancellation_point() {
    fibra_runtime::run(|| {
        let (tx_a, rx_a) = bounded::<u8>(0);
        let (tx_b, rx_b) = bounded::<u8>(0);
        let options = fibra_runtime::ScopeOptions::new().timeout(Duration::from_millis(10));
        let outcome = fibra_runtime::scope_with(options, |_| {
            select! {
                recv(rx_a) -> _ => {}
                send(tx_b, 1) -> _ => {}
            }
        });
        assert!(outcome.is_err());
        // Nothing left registered on either channel.
        assert!(tx_a.try_send(1).is_err());
        assert_eq!(rx_b.try_recv(), Err(TryRecvError::Empty));
    });
}
