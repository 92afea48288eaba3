//! A fiber blocked in a select shows in the dump a select wait at the line of its `select!`
//! (or of its `Select::select` call), on its first arm's channel.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra::chan::bounded;
use fibra::wait::WaitKind;
use fibra_testing::{on_each_worker_count, parked_wait};

#[test]
fn a_fiber_blocked_in_select_shows_select_at_the_line_of_the_macro() {
    on_each_worker_count(|_| {
        let (tx_a, rx_a) = bounded::<u32>(1);
        let (tx_b, rx_b) = bounded::<u32>(1);
        let rx_a2 = rx_a.clone();
        let line = line!() + 2;
        let selecting = fibra::spawn(move || {
            fibra::select! {
                recv(rx_a) -> v => v,
                recv(rx_b) -> v => v.map(|v| v * 10),
            }
        });
        let wait = parked_wait(selecting.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Select, line));
        assert!(wait.site.starts_with(file!()), "{}", wait.site);
        let on_a = fibra::spawn(move || rx_a2.recv());
        assert_eq!(
            parked_wait(on_a.fiber()).object,
            wait.object,
            "the object is the first arm's channel"
        );
        tx_b.send(4).unwrap();
        assert_eq!(selecting.join().unwrap(), Some(40));
        tx_a.send(1).unwrap();
        assert_eq!(on_a.join().unwrap(), Some(1));
    });
}

#[test]
fn biased_and_dynamic_selects_show_their_lines_too() {
    on_each_worker_count(|_| {
        let (tx, rx) = bounded::<u32>(1);
        let (_tx_b, rx_b) = bounded::<u32>(1);
        let (_tx_c, rx_c) = bounded::<u32>(1);
        let rx2 = rx.clone();
        let line = line!() + 2;
        let biased = fibra::spawn(move || {
            fibra::select_biased! {
                recv(rx2) -> v => v,
                recv(rx_b) -> _ => None,
            }
        });
        let wait = parked_wait(biased.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Select, line));
        tx.send(1).unwrap();
        assert_eq!(biased.join().unwrap(), Some(1));

        let line = line!() + 4;
        let dynamic = fibra::spawn(move || {
            let mut select = fibra::Select::new();
            select.recv(&rx, |v| v).recv(&rx_c, |_| None);
            select.select()
        });
        let wait = parked_wait(dynamic.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Select, line));
        tx.send(2).unwrap();
        assert_eq!(dynamic.join().unwrap(), Some(2));
    });
}
