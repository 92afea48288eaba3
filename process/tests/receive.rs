//! Selective receive and `after`, through `receive`, `receive_timeout` and `receive!`.

mod common;

use common::program;
use fibra_process::{self as process, receive, Inbox, Signal};
use fibra_testing::WORKER_COUNTS;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn drain<M: Send + 'static>(inbox: &Inbox<M>) -> Vec<M> {
    std::iter::from_fn(|| inbox.try_recv().and_then(Signal::into_msg)).collect()
}

#[test]
fn a_receive_takes_the_oldest_match_and_leaves_the_rest_in_order() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in [1, 2, 3, 4, 5, 6] {
            me.send(n);
        }
        let taken = inbox.receive(|s| matches!(s, Signal::Msg(n) if n % 3 == 0));
        assert_eq!(taken.into_msg(), Some(3));
        // The next receive starts again at the oldest.
        let taken = inbox.receive(|s| matches!(s, Signal::Msg(n) if *n > 1));
        assert_eq!(taken.into_msg(), Some(2));
        assert_eq!(drain(&inbox), [1, 4, 5, 6]);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_scan_finds_a_match_wherever_the_queue_wraps_around() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        // Messages taken from the front and more sent behind them move where the queue's
        // storage wraps around, across every position of a small queue.
        for taken in 0..16 {
            let mut left: Vec<u32> = (0..8).collect();
            for n in &left {
                me.send(*n);
            }
            for n in 0..taken.min(7) {
                assert_eq!(inbox.recv().into_msg(), Some(n));
                left.remove(0);
            }
            for n in 8..8 + taken {
                me.send(n);
                left.push(n);
            }
            let newest = *left.last().unwrap();
            let found = inbox.receive(|s| matches!(s, Signal::Msg(n) if *n == newest));
            assert_eq!(found.into_msg(), Some(newest));
            left.pop();
            assert_eq!(drain(&inbox), left, "after taking {taken}");
        }
    });
    assert_eq!(status, 0);
}

#[test]
fn receive_macro_arms_are_tried_in_written_order_per_message() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in [7, 10, 20] {
            me.send(n);
        }
        // The oldest message that matches any arm wins, whatever arm order says.
        let got = receive! { inbox,
            Signal::Msg(n) if n >= 20 => ("big", n),
            Signal::Msg(n) if n >= 10 => ("medium", n),
        };
        assert_eq!(got, ("medium", 10));
        let got = receive! { inbox,
            Signal::Msg(n) if n >= 20 => ("big", n),
            Signal::Msg(n) => ("any", n),
        };
        assert_eq!(got, ("any", 7));
        assert_eq!(drain(&inbox), [20]);
    });
    assert_eq!(status, 0);
}

#[test]
fn receive_macro_bodies_use_the_callers_control_flow_and_bind_by_value() {
    let status = program(1, |inbox: Inbox<String>| {
        let me = inbox.pid();
        for word in ["skip", "keep", "stop", "after"] {
            me.send(word.to_owned());
        }
        let mut kept = Vec::new();
        loop {
            receive! { inbox,
                Signal::Msg(word) if word == "skip" => continue,
                Signal::Msg(word) if word == "stop" => break,
                Signal::Msg(word) => { kept.push(word); }
            }
        }
        assert_eq!(kept, ["keep"]);
        assert_eq!(drain(&inbox), ["after"]);
    });
    assert_eq!(status, 0);
}

#[test]
fn after_zero_runs_once_every_message_was_examined_and_leaves_them() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in [1, 2, 3] {
            me.send(n);
        }
        let examined = AtomicUsize::new(0);
        let got = receive! { inbox,
            Signal::Msg(n) if { examined.fetch_add(1, Ordering::SeqCst); n > 100 } => Some(n),
            after Duration::ZERO => None,
        };
        assert_eq!(got, None);
        assert_eq!(
            examined.load(Ordering::SeqCst),
            3,
            "every message was examined"
        );
        assert_eq!(drain(&inbox), [1, 2, 3]);
        // A match among them is taken without waiting.
        me.send(500);
        let got = receive! { inbox,
            Signal::Msg(n) if n > 100 => Some(n),
            after Duration::ZERO => None,
        };
        assert_eq!(got, Some(500));
    });
    assert_eq!(status, 0);
}

#[test]
fn after_is_not_restarted_by_arrivals_that_match_nothing() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<u32>| {
            let stop = Arc::new(AtomicBool::new(false));
            let sent = Arc::new(AtomicUsize::new(0));
            let me = inbox.pid();
            let (s, n) = (stop.clone(), sent.clone());
            // Sends non-matching messages for far longer than the timeout: a timer restarted
            // by each arrival would not expire until the sender stops.
            process::spawn(move |_: Inbox<()>| {
                for _ in 0..2000 {
                    if s.load(Ordering::SeqCst) {
                        return;
                    }
                    me.send(0);
                    n.fetch_add(1, Ordering::SeqCst);
                    fibra_runtime::sleep(Duration::from_millis(5));
                }
            });
            let got = receive! { inbox,
                Signal::Msg(n) if n > 0 => Some(n),
                after Duration::from_millis(60) => None,
            };
            stop.store(true, Ordering::SeqCst);
            assert_eq!(got, None);
            assert!(
                sent.load(Ordering::SeqCst) < 2000,
                "the timeout fired while arrivals kept coming"
            );
            assert!(drain(&inbox).iter().all(|&n| n == 0));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_message_that_arrives_before_expiry_is_taken() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<u32>| {
            let me = inbox.pid();
            process::spawn(move |_: Inbox<()>| {
                me.send(0); // matches nothing
                fibra_runtime::sleep(Duration::from_millis(2));
                me.send(42);
            });
            let got = receive! { inbox,
                Signal::Msg(n) if n > 0 => n,
                after Duration::from_secs(30) => panic!("timed out"),
            };
            assert_eq!(got, 42);
            assert_eq!(inbox.recv().into_msg(), Some(0));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn receive_timeout_returns_none_and_keeps_the_mailbox() {
    let status = program(1, |inbox: Inbox<u32>| {
        inbox.pid().send(1);
        let got = inbox.receive_timeout(Duration::from_millis(3), |s| matches!(s, Signal::Msg(2)));
        assert!(got.is_none());
        assert_eq!(drain(&inbox), [1]);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_receive_with_only_after_sleeps_and_leaves_the_mailbox() {
    let status = program(1, |inbox: Inbox<u32>| {
        inbox.pid().send(5);
        let done = receive! { inbox, after Duration::from_millis(3) => "slept" };
        assert_eq!(done, "slept");
        assert_eq!(drain(&inbox), [5]);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_receive_cancelled_while_waiting_keeps_the_messages_it_skipped() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        me.send(1);
        me.send(2);
        let outcome = fibra_runtime::timeout(Duration::from_millis(3), || {
            inbox.receive(|s| matches!(s, Signal::Msg(3)))
        });
        assert!(outcome.is_err());
        me.send(3);
        assert_eq!(drain(&inbox), [1, 2, 3]);
    });
    assert_eq!(status, 0);
}

#[test]
fn messages_racing_short_timeouts_are_each_received_exactly_once() {
    const PAIRS: u64 = 200;
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<u64>| {
            let main = inbox.pid();
            for pair in 0..PAIRS {
                let main = main.clone();
                let receiver = process::spawn(move |inbox: Inbox<u64>| {
                    // Timeouts of 1–2 ms compete with the sender's message.
                    let wait = Duration::from_micros((pair % 2 + 1) * 1000);
                    loop {
                        let got = receive! { inbox,
                            Signal::Msg(n) => Some(n),
                            after wait => None,
                        };
                        if let Some(n) = got {
                            main.send(n);
                            break;
                        }
                    }
                });
                process::spawn(move |_: Inbox<()>| {
                    fibra_runtime::sleep(Duration::from_micros(pair % 5 * 500));
                    receiver.send(pair);
                });
            }
            let mut got: Vec<u64> = (0..PAIRS)
                .map(|_| inbox.recv().into_msg().unwrap())
                .collect();
            got.sort_unstable();
            assert_eq!(got, (0..PAIRS).collect::<Vec<_>>());
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

/// Selective receives taking from the middle, then from the back, then in order: each takes
/// exactly its match and the rest keep their order, however many have been taken around them.
#[test]
fn interleaved_selective_receives_keep_the_order_of_what_they_leave() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in 1..=100 {
            me.send(n);
        }
        for even in (2..=100).rev().step_by(2) {
            let taken = inbox.receive(|s| matches!(s, Signal::Msg(n) if *n == even));
            assert_eq!(taken.into_msg(), Some(even));
        }
        me.send(101);
        let multiple_of_five = inbox.receive(|s| matches!(s, Signal::Msg(n) if n % 5 == 0));
        assert_eq!(multiple_of_five.into_msg(), Some(5));
        let rest = drain(&inbox);
        let expected: Vec<u32> = (1..=101).filter(|n| n % 2 == 1 && *n != 5).collect();
        assert_eq!(rest, expected);
    });
    assert_eq!(status, 0);
}

/// A predicate only looks at the signals: one that panics loses none of them, and the mailbox
/// stays usable and in order.
#[test]
fn a_panicking_predicate_loses_no_signal() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in 1..=4 {
            me.send(n);
        }
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inbox.receive(|s| {
                assert!(!matches!(s, Signal::Msg(2)), "no twos");
                false
            })
        }));
        assert!(panicked.is_err());
        let three = inbox.receive(|s| matches!(s, Signal::Msg(3)));
        assert_eq!(three.into_msg(), Some(3));
        assert_eq!(drain(&inbox), [1, 2, 4]);
    });
    assert_eq!(status, 0);
}

/// The same for a signal that arrives alone and is offered to the receive before it is queued:
/// it stays in the mailbox, counted, so lost signals cannot use up a mailbox limit.
#[test]
fn a_panicking_predicate_loses_no_lone_arrival() {
    /// The mailbox limit: each round below would leak a slot if the signal were lost.
    const LIMIT: usize = 4;
    let status = program(1, |main: Inbox<Vec<u32>>| {
        let report = main.pid();
        let (_, monitor) = process::Builder::new()
            .mailbox_limit(LIMIT)
            .spawn_monitor(move |inbox: Inbox<u32>| {
                let me = inbox.pid();
                for n in 0..2 * LIMIT as u32 {
                    me.send(n);
                    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        inbox.receive(|s| panic!("not {s:?}"))
                    }));
                    assert!(panicked.is_err());
                    assert_eq!(inbox.try_recv().and_then(Signal::into_msg), Some(n));
                }
                // Lone arrivals that match nothing stay, in order, behind each other.
                for n in 10..13 {
                    me.send(n);
                    let none = receive! { inbox,
                        Signal::Msg(n) if n > 100 => Some(n),
                        after Duration::ZERO => None,
                    };
                    assert_eq!(none, None);
                }
                report.send(drain(&inbox));
            })
            .unwrap();
        assert_eq!(main.recv().into_msg(), Some(vec![10, 11, 12]));
        match main.recv() {
            Signal::Down { mref, reason, .. } => {
                assert_eq!(mref, monitor);
                assert!(reason.is_normal(), "{reason:?}");
            }
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(status, 0);
}

/// An inbox lent to a second fiber on its worker (it is not `Send`, but `spawn_local` takes
/// it) cannot be received from by both at once: the second receive panics, saying so, and the
/// first goes on.
#[test]
fn a_receive_while_another_fiber_receives_from_the_same_inbox_panics_saying_so() {
    let status = program(1, |inbox: Inbox<u32>| {
        let inbox = std::rc::Rc::new(inbox);
        let first = receive_in_lent_fiber(&inbox);
        fibra_runtime::yield_now();
        let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inbox.try_recv()))
            .expect_err("a second receive at once panics");
        let message = second.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("spawn_local"), "{message}");
        inbox.pid().send(7);
        assert_eq!(first.join().unwrap(), Some(7));
    });
    assert_eq!(status, 0);
}

/// Lends `inbox` to a new fiber on this worker (an `Inbox` is not `Send`, but `spawn_local`
/// takes it), which receives one message from it.
fn receive_in_lent_fiber(
    inbox: &std::rc::Rc<Inbox<u32>>,
) -> fibra_runtime::JoinHandle<Option<u32>> {
    let lent = inbox.clone();
    fibra_runtime::spawn_local(move || lent.recv().into_msg())
}

/// Sends `n` to `to` from a new process once `waiter` has parked: the send must wake it.
fn send_once_parked(waiter: fibra_runtime::Fiber, to: process::Pid<u32>, n: u32) {
    process::spawn(move |_: Inbox<()>| {
        fibra_testing::until_parked(&waiter);
        to.send(n);
    });
}

/// An inbox lent to a fiber that is the first to wait on it, then received from by its
/// process: the process's wait is woken by the next send, not the lent fiber's (finished).
#[test]
fn a_receive_after_a_lent_fiber_waited_first_is_woken() {
    let status = fibra_testing::bounded(Duration::from_secs(60), || {
        program(1, |inbox: Inbox<u32>| {
            let inbox = std::rc::Rc::new(inbox);
            let first = receive_in_lent_fiber(&inbox);
            fibra_testing::until_parked(first.fiber());
            inbox.pid().send(1);
            assert_eq!(first.join().unwrap(), Some(1));
            send_once_parked(fibra_runtime::current(), inbox.pid(), 2);
            assert_eq!(inbox.recv().into_msg(), Some(2));
        })
    });
    assert_eq!(status, 0);
}

/// The other order: the process waits first, then lends its inbox to a fiber that waits on
/// it; the next send wakes that fiber.
#[test]
fn a_lent_fiber_waiting_after_its_process_waited_is_woken() {
    let status = fibra_testing::bounded(Duration::from_secs(60), || {
        program(1, |inbox: Inbox<u32>| {
            send_once_parked(fibra_runtime::current(), inbox.pid(), 1);
            assert_eq!(inbox.recv().into_msg(), Some(1));
            let inbox = std::rc::Rc::new(inbox);
            let second = receive_in_lent_fiber(&inbox);
            fibra_testing::until_parked(second.fiber());
            inbox.pid().send(2);
            assert_eq!(second.join().unwrap(), Some(2));
        })
    });
    assert_eq!(status, 0);
}

/// A `receive!` guard that panics loses none of the queued signals: the one it tested stays
/// in its place, and the panic reaches the caller.
#[test]
fn a_panicking_receive_guard_loses_no_signal() {
    let status = program(1, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        for n in 1..=3 {
            me.send(n);
        }
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            receive! { inbox,
                Signal::Msg(n) if n > 2 => n,
                Signal::Msg(n) if { assert_ne!(n, 2, "no twos"); false } => n,
                after Duration::ZERO => 0,
            }
        }));
        let payload = panicked.expect_err("the guard's panic reaches the caller");
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(message.contains("no twos"), "{message}");
        assert_eq!(drain(&inbox), [1, 2, 3]);
    });
    assert_eq!(status, 0);
}

/// The same for lone arrivals, offered before they are queued: each stays in the mailbox,
/// counted, so guards that panic cannot use up a mailbox limit.
#[test]
fn a_panicking_receive_guard_loses_no_lone_arrival() {
    const LIMIT: usize = 2;
    let status = program(1, |main: Inbox<()>| {
        let (_, monitor) = process::Builder::new()
            .mailbox_limit(LIMIT)
            .spawn_monitor(|inbox: Inbox<u32>| {
                let me = inbox.pid();
                for n in 0..2 * LIMIT as u32 {
                    me.send(n);
                    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        receive! { inbox,
                            Signal::Msg(_) if panic!("guard") => (),
                            after Duration::ZERO => (),
                        }
                    }));
                    assert!(panicked.is_err());
                    assert_eq!(inbox.try_recv().and_then(Signal::into_msg), Some(n));
                }
            })
            .unwrap();
        match main.recv() {
            Signal::Down { mref, reason, .. } => {
                assert_eq!(mref, monitor);
                assert!(reason.is_normal(), "{reason:?}");
            }
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(status, 0);
}
