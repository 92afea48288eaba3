//! A fiber blocked in a channel operation shows in the dump what it waits on (a receive or a
//! send, on which channel) and the line of its call.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra::chan::bounded;
use fibra::wait::WaitKind;
use fibra_testing::{on_each_worker_count, parked_wait};
use std::time::Duration;

#[test]
fn a_fiber_blocked_in_recv_shows_recv_at_the_line_of_its_call() {
    on_each_worker_count(|_| {
        let (tx, rx) = bounded::<u32>(1);
        let (line, receiver) = (line!(), fibra::spawn(move || rx.recv()));
        let wait = parked_wait(receiver.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Recv, line));
        assert!(wait.site.starts_with(file!()), "{}", wait.site);
        assert!(!wait.timed);
        assert_eq!(wait.owner, None);
        let text = fibra::dump().to_string();
        let id = receiver.fiber().id().as_u64();
        assert!(
            text.contains(&format!("fiber {id} [parked on channel recv")),
            "{text}"
        );
        tx.send(7).unwrap();
        assert_eq!(receiver.join().unwrap(), Some(7));
        assert!(fibra::dump().fiber(id).is_none());
    });
}

#[test]
fn timed_receives_and_blocking_iterators_show_their_lines_too() {
    on_each_worker_count(|_| {
        let (tx, rx) = bounded::<u32>(1);
        let rx2 = rx.clone();
        let recv = move || rx2.recv_timeout(Duration::from_secs(3600));
        let (line, timed) = (line!() - 1, fibra::spawn(recv));
        let wait = parked_wait(timed.fiber());
        assert_eq!(
            (wait.kind, wait.line, wait.timed),
            (WaitKind::Recv, line, true)
        );
        tx.send(1).unwrap();
        assert_eq!(timed.join().unwrap(), Ok(1));

        let for_line = line!() + 3;
        let iterating = fibra::spawn(move || {
            let mut sum = 0;
            for v in rx.iter() {
                sum += v;
            }
            sum
        });
        let wait = parked_wait(iterating.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Recv, for_line));
        tx.send(2).unwrap();
        drop(tx);
        assert_eq!(iterating.join().unwrap(), 2);
    });
}

#[test]
fn a_fiber_blocked_sending_on_a_full_channel_shows_send_at_the_line_of_its_call() {
    on_each_worker_count(|_| {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let (line, sender) = (line!(), fibra::spawn(move || tx.send(2)));
        let wait = parked_wait(sender.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Send, line));
        assert!(wait.site.starts_with(file!()), "{}", wait.site);
        assert_eq!(rx.recv(), Some(1));
        assert_eq!(sender.join().unwrap(), Ok(()));
        assert_eq!(rx.recv(), Some(2));
    });
}

#[test]
fn the_object_of_a_channel_wait_is_its_channel() {
    on_each_worker_count(|_| {
        let (tx_a, rx_a) = bounded::<u32>(1);
        let (tx_b, rx_b) = bounded::<u32>(1);
        let rx_a2 = rx_a.clone();
        let on_a = fibra::spawn(move || rx_a.recv());
        let again_on_a = fibra::spawn(move || rx_a2.recv());
        let on_b = fibra::spawn(move || rx_b.recv());
        let objects = [&on_a, &again_on_a, &on_b].map(|h| parked_wait(h.fiber()).object);
        assert_eq!(objects[0], objects[1], "two receives on one channel");
        assert_ne!(objects[0], objects[2], "receives on two channels");
        tx_a.send(1).unwrap();
        tx_a.send(2).unwrap();
        tx_b.send(3).unwrap();
        let mut got = [on_a.join().unwrap(), again_on_a.join().unwrap()];
        got.sort();
        assert_eq!(got, [Some(1), Some(2)]);
        assert_eq!(on_b.join().unwrap(), Some(3));
    });
}
