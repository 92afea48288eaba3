//! Sending: order per sender, sends to oneself and to ended processes, the plain receives.

mod common;

use common::program;
use fibra_process::{self as process, Inbox, Signal};
use fibra_testing::WORKER_COUNTS;
use std::time::Duration;

#[test]
fn messages_from_one_sender_arrive_in_send_order_with_many_senders() {
    const SENDERS: u32 = 8;
    const EACH: u32 = 2000;
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<(u32, u32)>| {
            for sender in 0..SENDERS {
                let to = inbox.pid();
                process::spawn(move |_: Inbox<()>| {
                    for n in 0..EACH {
                        to.send((sender, n));
                    }
                });
            }
            let mut next = vec![0; SENDERS as usize];
            for _ in 0..SENDERS * EACH {
                let (sender, n) = inbox.recv().into_msg().unwrap();
                assert_eq!(n, next[sender as usize], "sender {sender} out of order");
                next[sender as usize] += 1;
            }
            assert!(next.iter().all(|&n| n == EACH));
            assert!(inbox.try_recv().is_none(), "a message was duplicated");
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_send_to_oneself_is_an_ordinary_message() {
    let status = program(1, |inbox: Inbox<&'static str>| {
        let me = inbox.pid();
        me.send("a");
        me.send("b");
        assert_eq!(inbox.recv().into_msg(), Some("a"));
        assert_eq!(inbox.recv().into_msg(), Some("b"));
    });
    assert_eq!(status, 0);
}

#[test]
fn a_send_to_an_ended_process_is_dropped() {
    let status = program(2, |inbox: Inbox<()>| {
        let (gone, _) = process::spawn_monitor(|_: Inbox<String>| {});
        assert!(matches!(inbox.recv(), Signal::Down { .. }));
        assert!(!process::is_alive(&gone));
        gone.send("lost".to_owned()); // no effect, no panic
    });
    assert_eq!(status, 0);
}

#[test]
fn try_recv_and_recv_timeout_return_none_on_an_empty_mailbox() {
    let status = program(1, |inbox: Inbox<u8>| {
        assert!(inbox.try_recv().is_none());
        assert!(inbox.recv_timeout(Duration::from_millis(2)).is_none());
        inbox.pid().send(9);
        assert_eq!(
            inbox
                .recv_timeout(Duration::from_secs(5))
                .unwrap()
                .into_msg(),
            Some(9)
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_waiting_receiver_is_woken_by_a_send_from_another_worker() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<u64>| {
            let me = inbox.pid();
            let echo = process::spawn(move |inbox: Inbox<u64>| {
                while let Signal::Msg(n) = inbox.recv() {
                    me.send(n + 1);
                    if n >= 999 {
                        break;
                    }
                }
            });
            let mut n = 0;
            while n < 1000 {
                echo.send(n);
                n = inbox.recv().into_msg().unwrap();
            }
            assert_eq!(n, 1000);
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
#[should_panic(expected = "called outside a process")]
fn process_functions_outside_a_process_panic_saying_so() {
    common::runtime(1).block_on(process::self_id);
}

#[test]
fn a_plain_thread_can_send_to_a_process() {
    let status = program(2, |inbox: Inbox<u32>| {
        let me = inbox.pid();
        let thread = std::thread::spawn(move || {
            for n in 0..100 {
                me.send(n);
            }
        });
        for n in 0..100 {
            assert_eq!(inbox.recv().into_msg(), Some(n));
        }
        thread.join().unwrap();
    });
    assert_eq!(status, 0);
}
