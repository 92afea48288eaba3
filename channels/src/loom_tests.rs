//! loom models of the handoff core: the direct handoff between a sender and a parked
//! receiver, the lock-free ring meeting a party that parks, the close race, and the winner's
//! claim when two channels are ready at once.
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p fibra-channels --release loom`

use crate::op::{self, Attempt, Operation, RecvOp, SendOp, Woken};
use crate::{bounded, TryRecvError};
use fibra_runtime::wait::Deadline;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// A rendezvous send and a receive meet; the value arrives exactly once whichever parks
/// first.
#[test]
fn loom_rendezvous_handoff() {
    model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let sender = thread::spawn(move || tx.send(7).is_ok());
        assert_eq!(rx.recv(), Some(7));
        assert!(sender.join().unwrap());
    });
}

/// A buffered channel with a parked sender: the receiver moves the parked value into the
/// buffer; both values arrive in order.
#[test]
fn loom_buffered_refill() {
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        two_values_arrive_in_order(tx, rx);
    });
}

/// A sender sends 1 then 2 and goes; the receiver gets both in order, then the end.
fn two_values_arrive_in_order(tx: crate::Writer<u32>, rx: crate::Reader<u32>) {
    let sender = thread::spawn(move || {
        tx.send(1).unwrap();
        tx.send(2).unwrap();
    });
    assert_eq!(rx.recv(), Some(1));
    assert_eq!(rx.recv(), Some(2));
    sender.join().unwrap();
    assert_eq!(rx.recv(), None);
}

/// A lock-free push races a receiver parking on the empty buffer: the receiver's second look
/// finds the value, or the pusher sees the parked receiver and hands the value over.
#[test]
fn loom_buffered_push_meets_parking_receiver() {
    model(|| {
        let (tx, rx) = bounded::<u32>(2);
        let sender = thread::spawn(move || tx.send(1).unwrap());
        assert_eq!(rx.recv(), Some(1));
        sender.join().unwrap();
    });
}

/// A value pushed just before the last writer closes the channel is still received, then the
/// end: close wakes a parked receiver to drain, not to give up.
#[test]
fn loom_close_after_push_still_drains() {
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let sender = thread::spawn(move || {
            tx.send(1).unwrap();
            drop(tx);
        });
        assert_eq!(rx.recv(), Some(1));
        assert_eq!(rx.recv(), None);
        sender.join().unwrap();
    });
}

/// An unbounded channel whose ring holds one value: the second send overflows while the
/// receiver drains and parks; the values arrive in order, none lost or doubled.
#[test]
fn loom_unbounded_overflow_keeps_order() {
    model(|| {
        let chan = std::sync::Arc::new(crate::core::chan::Chan::unbounded(1));
        let tx = crate::Writer::from_chan(chan.clone());
        let rx = crate::Reader::from_chan(chan);
        two_values_arrive_in_order(tx, rx);
    });
}

/// A send races a close on a rendezvous channel while a receiver waits: either the value is
/// delivered (the send succeeded) or it comes back to the sender — never both, never neither.
#[test]
fn loom_close_race() {
    model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let closer = {
            let rx = rx.clone();
            thread::spawn(move || {
                rx.close();
            })
        };
        let sender = thread::spawn(move || tx.send(5));
        let got = rx.recv();
        let sent = sender.join().unwrap();
        closer.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(got, Some(5)),
            Err(err) => {
                assert_eq!(err.into_inner(), 5);
                assert_eq!(got, None);
            }
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

/// Closing wakes a parked receiver and a parked sender (which gets its value back).
#[test]
fn loom_close_wakes_parked() {
    model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let (tx2, rx2) = bounded::<u32>(0);
        let receiver = thread::spawn(move || rx.recv());
        let sender = thread::spawn(move || tx2.send(3));
        tx.close();
        rx2.close();
        assert_eq!(receiver.join().unwrap(), None);
        assert_eq!(sender.join().unwrap().unwrap_err().into_inner(), 3);
    });
}

/// One waiter on two rendezvous channels, two senders ready at the same time: exactly one
/// claim wins; the loser's value stays with its sender (it gets it back on close).
#[test]
fn loom_select_winner() {
    model(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (tx_b, rx_b) = bounded::<u32>(0);
        let a = thread::spawn(move || tx_a.send(1));
        let b = thread::spawn(move || tx_b.send(2));
        let got = {
            let recv_a = RecvOp::new(&rx_a);
            let recv_b = RecvOp::new(&rx_b);
            loop {
                if recv_a.try_now() == Attempt::Completed {
                    break recv_a.into_value();
                }
                if recv_b.try_now() == Attempt::Completed {
                    break recv_b.into_value();
                }
                match op::wait(&[Some(&recv_a), Some(&recv_b)], Deadline::NEVER) {
                    Woken::Selected(0) => break recv_a.into_value(),
                    Woken::Selected(_) => break recv_b.into_value(),
                    Woken::Retry | Woken::TimedOut => {}
                }
            }
        };
        rx_a.close();
        rx_b.close();
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        match got {
            Some(1) => {
                assert!(a.is_ok());
                assert_eq!(b.unwrap_err().into_inner(), 2);
            }
            Some(2) => {
                assert!(b.is_ok());
                assert_eq!(a.unwrap_err().into_inner(), 1);
            }
            other => panic!("unexpected {other:?}"),
        }
    });
}

/// A waiter that both sends on one channel and receives on another: a receiver and a sender
/// arrive at once; exactly one of the two operations happens.
#[test]
fn loom_select_send_or_recv() {
    model(|| {
        let (tx_in, rx_in) = bounded::<u32>(0);
        let (tx_out, rx_out) = bounded::<u32>(0);
        let feeder = thread::spawn(move || tx_in.send(1));
        let taker = thread::spawn(move || rx_out.recv());
        let recv = RecvOp::new(&rx_in);
        let send = SendOp::new(&tx_out, 9);
        let won = loop {
            if recv.try_now() == Attempt::Completed {
                break 0;
            }
            if send.try_now() == Attempt::Completed {
                break 1;
            }
            match op::wait(&[Some(&recv), Some(&send)], Deadline::NEVER) {
                Woken::Selected(i) => break i,
                Woken::Retry | Woken::TimedOut => {}
            }
        };
        let (received, unsent) = (recv.into_value(), send.into_value());
        rx_in.close();
        tx_out.close();
        let fed = feeder.join().unwrap();
        let taken = taker.join().unwrap();
        if won == 0 {
            assert_eq!(received, Some(1));
            assert!(fed.is_ok());
            assert_eq!(unsent, Some(9));
            assert_eq!(taken, None);
        } else {
            assert_eq!(received, None);
            assert_eq!(fed.unwrap_err().into_inner(), 1);
            assert_eq!(unsent, None);
            assert_eq!(taken, Some(9));
        }
    });
}
