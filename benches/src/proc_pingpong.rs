//! `proc_pingpong`: round trips between two processes, 1 000 000 (100 000 with `--quick`); ns
//! per round trip.
//!
//! Variant `2w`: the main fibra process sends `(from, i)` to an echoing process and waits for
//! `i` back, on a 2-worker runtime, vs two ractor actors doing the same on a 2-worker tokio
//! multi-thread runtime (system `ractor`) and the same two Erlang/OTP processes on two
//! schedulers (system `erlang`). Every round trip checks the value it gets back.
//!
//! Was bimodal: when the echo process is started by the other worker (an idle worker takes it
//! before its spawner parks), every round trip crosses workers, at about three times the cost
//! of a cross-worker round trip of channels. An idle worker now leaves a lone fiber to its
//! spawner's worker for a few microseconds (the runtime's steal grace); in two alternated full
//! runs and two `--quick` pairs of the binaries before and after (2026-12-07, load average near
//! 2), 3 of the 20 rounds before took 958–1 015 ns (the others 222–494), none of the 20 after
//! (245–390 ns). One difference: a receive parks at once, where a
//! channel operation first retries a few times, yielding (the patience policy), and a reply
//! that comes during those retries spares a park and a cross-thread wake. Not profiled further
//! (the shared machine ran at load averages 9–14). Tried (alternated runs): the full policy in every receive, 0.22×/0.26×
//! → 0.18×/0.20× ractor, but `proc_ring` 1w 2.5×–2.9× → 3.2×–3.5× tokio and 2w 2.0×–3.4× →
//! 3.1×–4.4× ractor (the ring's waiting processes spin on every hop); retrying only while
//! nothing else could run on the worker, 0.27×/0.27× → 0.23×/0.25× ractor, within the noise,
//! and `proc_ring` 1w 3.6×/4.3× → 4.7×/4.8× tokio. Neither was kept.
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 577 and 606 ns
//! per round trip, ractor 2 463 and 2 585 ns, erlang 1 189 and 1 134 ns: 0.234× and 0.234×
//! ractor, 0.485× and 0.534× erlang.
//!
//! With the mailbox's cheaper send and receive (the owner's waker kept, a waiting flag under a
//! spin lock: see `proc_ring`), five alternated runs of the binaries before and after at load
//! averages 6–10: 0.506×, 0.531×, 0.493×, 0.524× and 0.541× erlang before, 0.378×, 0.333×,
//! 0.344×, 0.380× and 0.377× after; 0.230×–0.265× ractor before, 0.157×–0.181× after.
//!
//! With the receive's fast path of 2026-12-06 (a lone arrival kept beside the mailbox's lock and
//! taken without passing through the inbox's queue: see `proc_ring`), four alternated `--quick`
//! pairs of the binaries before and after at load averages 5–12: 0.437×, 0.560×, 0.549× and
//! 0.425× erlang before, 0.363×, 0.476×, 0.373× and 0.515× after; 0.186×–0.269× ractor before,
//! 0.165×–0.245× after.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Reason, Signal};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use crate::erlang::compare_with_ractor_and_erlang;
use crate::proc_spawn::WORKERS;
use crate::runtimes;

const JOB: &str = "proc_pingpong";
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let trips: u64 = if quick { 100_000 } else { 1_000_000 };
    compare_with_ractor_and_erlang(
        JOB,
        ROUNDS,
        trips,
        || fibra(trips),
        || ractor_pingpong(trips),
    );
}

fn fibra(trips: u64) -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let status = runtimes::fibra(WORKERS).block_on(move || {
        process::run(move |inbox: Inbox<u64>| {
            let echo = process::spawn(|inbox: Inbox<(Pid<u64>, u64)>| loop {
                if let Signal::Msg((from, i)) = inbox.recv() {
                    from.send(i);
                }
            });
            let me = inbox.pid();
            let start = Instant::now();
            for i in 0..trips {
                echo.send((me.clone(), i));
                assert_eq!(inbox.recv().into_msg(), Some(i));
            }
            *out.lock().unwrap() = start.elapsed();
            process::exit(&echo, Reason::Kill);
        })
    });
    assert_eq!(status, 0);
    let elapsed = *elapsed.lock().unwrap();
    elapsed
}

/// A ractor actor that sends every `(from, i)` it receives back to `from` as `i`.
struct Echo;

impl Actor for Echo {
    type Msg = (ActorRef<Ping>, u64);
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Self::Msg>, (): ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Self::Msg>,
        (from, i): (ActorRef<Ping>, u64),
        (): &mut (),
    ) -> Result<(), ActorProcessingErr> {
        from.send_message(Ping::Back(i))?;
        Ok(())
    }
}

/// What the ractor pinger receives.
enum Ping {
    /// Start the round trips.
    Start,
    /// The echo of round trip `i`.
    Back(u64),
}

/// The ractor actor that does the round trips with an [`Echo`] (the role of fibra's main
/// process) and reports when they are done.
struct Pinger;

struct Trips {
    echo: ActorRef<(ActorRef<Ping>, u64)>,
    /// The round trips to do.
    trips: u64,
    /// The round trip under way (`trips` once all are done).
    sent: u64,
    done: Option<oneshot::Sender<()>>,
}

impl Actor for Pinger {
    type Msg = Ping;
    type State = Trips;
    type Arguments = Trips;

    async fn pre_start(
        &self,
        _: ActorRef<Ping>,
        trips: Trips,
    ) -> Result<Trips, ActorProcessingErr> {
        Ok(trips)
    }

    async fn handle(
        &self,
        me: ActorRef<Ping>,
        ping: Ping,
        trips: &mut Trips,
    ) -> Result<(), ActorProcessingErr> {
        if let Ping::Back(i) = ping {
            assert_eq!(i, trips.sent, "the echo of the last round trip");
            trips.sent += 1;
        }
        if trips.sent == trips.trips {
            let _ = trips.done.take().expect("the trips end once").send(());
        } else {
            trips.echo.send_message((me, trips.sent))?;
        }
        Ok(())
    }
}

/// ractor: `trips` round trips between a [`Pinger`] and an [`Echo`].
async fn ractor_pingpong(trips: u64) -> Duration {
    let (echo, _) = Actor::spawn(None, Echo, ()).await.expect("spawn the echo");
    let (done, ended) = oneshot::channel();
    let state = Trips {
        echo: echo.clone(),
        trips,
        sent: 0,
        done: Some(done),
    };
    let (pinger, _) = Actor::spawn(None, Pinger, state)
        .await
        .expect("spawn the pinger");
    let start = Instant::now();
    pinger.send_message(Ping::Start).expect("the pinger is up");
    ended.await.expect("the pinger reports");
    let elapsed = start.elapsed();
    pinger.kill();
    echo.kill();
    elapsed
}
