//! The `cancelled(token)` arm and the `send_from(w, slot)` arm of `select!`.

use fibra_channels::{bounded, TryRecvError};
use fibra_runtime::CancelToken;
use fibra_select::{select, select_biased};
use fibra_testing::{on_each_worker_count, until_parked};
use std::time::Duration;

#[test]
fn a_token_cancelled_before_the_select_wins_at_once() {
    let (_tx, rx) = bounded::<u8>(1);
    let token = CancelToken::new();
    token.cancel();
    let won = select! {
        recv(rx) -> _ => "recv",
        cancelled(token) => "cancelled",
    };
    assert_eq!(won, "cancelled");
}

#[test]
fn a_ready_channel_beats_an_uncancelled_token_and_a_false_guard_disables_the_arm() {
    let (tx, rx) = bounded(1);
    let token = CancelToken::new();
    tx.send(5).unwrap();
    let won = select! {
        recv(rx) -> v => v,
        cancelled(token) => None,
    };
    assert_eq!(won, Some(5));
    token.cancel();
    let won = select! {
        cancelled(token) if false => "cancelled",
        default => "default",
    };
    assert_eq!(won, "default");
}

/// The select parks on the channel and the token; cancelling from another fiber (on any
/// worker) or from a plain thread wakes it through the cancel arm, and the receive arm then
/// takes nothing: a value sent afterwards is still in the channel.
#[test]
fn cancelling_while_the_select_waits_wakes_it_and_the_receive_takes_nothing() {
    on_each_worker_count(|_| {
        for from_thread in [false, true] {
            let (tx, rx) = bounded::<u32>(1);
            let token = CancelToken::new();
            fibra_runtime::scope(|s| {
                let waiting = s.spawn(|| {
                    select! {
                        recv(rx) -> v => Err(v),
                        cancelled(token) => Ok(()),
                    }
                });
                until_parked(waiting.fiber());
                if from_thread {
                    let token = token.clone();
                    std::thread::spawn(move || token.cancel()).join().unwrap();
                } else {
                    token.cancel();
                }
                assert_eq!(waiting.join().unwrap(), Ok(()));
            });
            tx.send(9).unwrap();
            assert_eq!(rx.try_recv(), Ok(9));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
    });
}

/// A cancel racing a send: exactly one arm wins every time, and a value the select did not
/// take stays in the channel. The token's waker outlives many of these selects (it fires after
/// the select returned through the receive); it must find them gone, not touch their stacks.
#[test]
fn a_cancel_racing_a_send_picks_exactly_one_arm_and_loses_no_value() {
    on_each_worker_count(|_| {
        let (mut cancelled, mut received) = (0, 0);
        for round in 0..300u32 {
            let (tx, rx) = bounded::<u32>(1);
            let token = CancelToken::new();
            let won = fibra_runtime::scope(|s| {
                let canceller = s.spawn(|| token.cancel());
                let sender = s.spawn(|| tx.send(round).unwrap());
                let won = select! {
                    recv(rx) -> v => v,
                    cancelled(token) => None,
                };
                canceller.join().unwrap();
                sender.join().unwrap();
                won
            });
            match won {
                Some(v) => {
                    assert_eq!(v, round);
                    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
                    received += 1;
                }
                None => {
                    assert_eq!(rx.try_recv(), Ok(round), "the value was not taken");
                    cancelled += 1;
                }
            }
        }
        assert_eq!(cancelled + received, 300);
    });
}

#[test]
fn a_cancel_arm_works_on_plain_threads() {
    let (_tx, rx) = bounded::<u8>(1);
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            token.cancel();
        })
    };
    let won = select! {
        recv(rx) -> _ => false,
        cancelled(token) => true,
    };
    assert!(won);
    canceller.join().unwrap();
}

#[test]
fn a_losing_send_from_keeps_its_value_and_a_winning_one_empties_the_slot() {
    let (tx, rx) = bounded(1);
    let (other_tx, other_rx) = bounded(1);
    tx.send(String::from("full")).unwrap();
    other_tx.send(1).unwrap();
    let mut slot = Some(String::from("kept"));
    let won = select! {
        send_from(tx, slot) -> _ => "send",
        recv(other_rx) -> _ => "recv",
    };
    assert_eq!(won, "recv");
    assert_eq!(
        slot.as_deref(),
        Some("kept"),
        "the losing arm gave its value back"
    );

    assert_eq!(rx.recv().as_deref(), Some("full"));
    let (tx, rx) = bounded(1);
    let won = select_biased! {
        send_from(tx, slot) -> res => res.map_err(|e| e.0),
        default => Err(String::from("default")),
    };
    assert_eq!(won, Ok(()));
    assert_eq!(slot, None);
    assert_eq!(rx.recv().as_deref(), Some("kept"));
}

#[test]
fn a_send_from_slot_place_is_evaluated_once() {
    let (tx, rx) = bounded(1);
    let (other_tx, other_rx) = bounded(1);
    let mut slots = [Some(1), Some(2)];
    let evaluated = std::cell::Cell::new(0);
    let next = || {
        evaluated.set(evaluated.get() + 1);
        evaluated.get() - 1
    };
    tx.send(0).unwrap();
    other_tx.send(()).unwrap();
    let won = select! {
        send_from(tx, slots[next()]) -> _ => "send",
        recv(other_rx) -> _ => "recv",
    };
    assert_eq!((won, evaluated.get()), ("recv", 1));
    assert_eq!(
        slots,
        [Some(1), Some(2)],
        "the value went back where it came from"
    );

    assert_eq!(rx.recv(), Some(0));
    let sent = select! {
        send_from(tx, slots[next()]) -> res => res.is_ok(),
    };
    assert_eq!((sent, evaluated.get()), (true, 2));
    assert_eq!(slots, [Some(1), None]);
    assert_eq!(rx.recv(), Some(2));
}

#[test]
fn an_empty_slot_disables_the_arm_and_a_closed_channel_returns_the_value_in_the_error() {
    let (tx, rx) = bounded::<u32>(1);
    let mut slot = None;
    let won = select! {
        send_from(tx, slot) -> _ => "send",
        default => "default",
    };
    assert_eq!(won, "default");
    drop(rx);
    slot = Some(4);
    let res = select! {
        send_from(tx, slot) -> res => res,
    };
    assert_eq!(res.map_err(|e| e.0), Err(4));
    assert_eq!(slot, None);
}

/// A parked `send_from` that loses to another arm keeps its value; one a receiver takes while
/// it is parked delivers exactly once. Under 1, 2 and 4 workers, in both orders of which side
/// becomes ready.
#[test]
fn a_parked_send_from_delivers_once_or_keeps_its_value() {
    on_each_worker_count(|_| {
        for receiver_first in [true, false] {
            let (tx, rx) = bounded::<u32>(0);
            let (wake_tx, wake_rx) = bounded::<()>(1);
            let (won, slot) = fibra_runtime::scope(|s| {
                let selecting = s.spawn(|| {
                    let mut slot = Some(7);
                    let won = select! {
                        send_from(tx, slot) -> res => { res.unwrap(); "send" }
                        recv(wake_rx) -> _ => "recv",
                    };
                    (won, slot)
                });
                until_parked(selecting.fiber());
                if receiver_first {
                    assert_eq!(rx.recv(), Some(7));
                } else {
                    wake_tx.send(()).unwrap();
                }
                selecting.join().unwrap()
            });
            if receiver_first {
                assert_eq!((won, slot), ("send", None));
            } else {
                assert_eq!((won, slot), ("recv", Some(7)));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            }
        }
    });
}
