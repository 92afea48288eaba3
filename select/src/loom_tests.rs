//! loom model of `select!`'s winner: two senders ready at once on two rendezvous channels,
//! one select; exactly one value is taken, the other sender keeps its value.
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p fibra-select --release loom`

use fibra_channels::bounded;
use loom::thread;

#[test]
fn loom_select_macro_winner() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (tx_b, rx_b) = bounded::<u32>(0);
        let a = thread::spawn(move || tx_a.send(1));
        let b = thread::spawn(move || tx_b.send(2));
        let got = crate::select! {
            recv(rx_a) -> Some(v) => v,
            recv(rx_b) -> Some(v) => v,
        };
        rx_a.close();
        rx_b.close();
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        match got {
            1 => assert!(a.is_ok() && b.unwrap_err().into_inner() == 2),
            2 => assert!(b.is_ok() && a.unwrap_err().into_inner() == 1),
            other => panic!("unexpected {other}"),
        }
    });
}
