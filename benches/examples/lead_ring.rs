use fibra::process::{self, Inbox, Pid, Signal};
use std::time::Instant;
fn main() {
    let workers: usize = std::env::var("W")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let laps: u64 = std::env::var("LAPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let rt = fibra::Runtime::builder().workers(workers).build().unwrap();
    rt.block_on(move || {
        process::run(move |inbox: Inbox<u64>| {
            let mut next: Pid<u64> = inbox.pid();
            for _ in 0..999 {
                let to = next.clone();
                next = process::spawn(move |inbox: Inbox<u64>| loop {
                    if let Signal::Msg(h) = inbox.recv() {
                        to.send(h + 1);
                    }
                });
            }
            let start = Instant::now();
            let mut hops = 0;
            for _ in 0..laps {
                next.send(hops);
                hops = inbox.recv().into_msg().unwrap();
            }
            let ns = start.elapsed().as_nanos() as f64 / (laps * 1000) as f64;
            eprintln!("{ns:.0} ns/hop");
            for w in fibra::Handle::current().metrics().workers {
                eprintln!("{w:?}");
            }
            eprintln!("loads {:?}", fibra::Handle::current().worker_loads());
        });
    });
}
