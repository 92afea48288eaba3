//! `proc_ring`: a token passed around a ring of 1 000 processes, 1 000 laps (100 with
//! `--quick`); ns per hop.
//!
//! Variant `1w`: fibra processes on a 1-worker runtime vs tokio tasks on a current-thread
//! runtime. Variant `2w`: fibra processes (`fibra::process`, one mailbox each) on a 2-worker runtime vs
//! tokio tasks with an unbounded `tokio::sync::mpsc` channel each (the actor shape of the
//! tokio-based actor libraries) on a 2-worker multi-thread runtime, a ring of ractor actors on
//! the same tokio runtime (system `ractor`: one of them, the lapper, sends the token out again
//! for each lap), and the same ring of Erlang/OTP processes on two schedulers (system `erlang`,
//! see [`crate::erlang`]). Every lap checks the hop count the token comes back with.
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): `1w` fibra 489 and 746
//! ns per hop, tokio 188 and 231 ns: 2.60× and 3.23× tokio. `2w` fibra 3 755 and 1 493 ns,
//! tokio 382 and 218 ns, ractor 1 273 and 846 ns, erlang 484 and 532 ns: 2.95× and 1.77×
//! ractor, 7.76× and 2.81× erlang, 9.8× and 6.9× tokio. fibra's `2w` rounds are bimodal, 724 to
//! 4 866 ns in the first run; erlang's stay within 474–503 ns.
//!
//! Why `2w` cost three times `1w`: started processes never move between workers, and the
//! placement of the 999 spawned in one burst dealt them out in runs of five, so one hop in five
//! crossed to the other worker (200 cross-thread wakes per lap, counted by the runtime's
//! metrics: `inbox_wakes`; no steals, almost no sleeps). Each costs about 4 µs on this busy
//! machine: the idle worker spins with `yield_now` and has to get a CPU back first. When the
//! spin had shrunk to nothing the worker slept through every wake (a futex wake per crossing,
//! the 4–10 µs per hop rounds), and never spun again, because a wake counted as "soon" only if
//! the thread was running again within the longest spin, which the OS's wake-up latency alone
//! exceeded. Changed: the placement band grows to an eighth of the loads (about 36 crossings
//! per lap), "soon" counts to the unpark, and the mailbox costs fewer atomics per hop (the
//! owner's waker kept, a waiting flag under a spin lock), which is most of `1w`'s gain.
//!
//! After those changes, six alternated runs of the binaries before and after (`proc_ring`,
//! each run's median of five rounds, load averages 6–8): `2w` fibra 1 388, 1 380, 1 247,
//! 1 308, 1 285 and 9 483 ns before, 701, 461, 538, 589, 642 and 1 970 ns after; erlang
//! 458–633 ns in both. Ratios after: 1.34×, 1.01×, 1.01×, 1.20×, 1.24× and 3.59× erlang
//! (before 2.18×–2.83×, and 15.1×), 0.73×–0.94× ractor and 2.53× in the slow run (before
//! 1.84×–1.94×, and 12.6×). `1w` fibra 390–582 ns before, 272–457 ns after: 1.57×–2.29×
//! tokio (before 2.15×–2.63×). Two more alternated pairs at load averages 7–10: `2w` 2.77× and
//! 2.81× erlang before, 1.11× and 1.27× after (0.73× and 0.92× ractor). Not reached: 0.5× erlang and ractor; what is left is the local
//! hop (a ring of two processes on one worker still costs about 200 ns a hop, most of it the
//! atomics of a send, a receive and a park, and the 1 000 stacks' cache misses add the rest)
//! and the remaining crossings.
//!
//! 2026-12-06, the hop profiled (callgrind, one worker): a ring of 2 cost 950 instructions a hop,
//! 420 of them in the receive (a look at the arrivals that found none still went through the batch
//! path, and the one message of a wake went from the senders' vector through the inbox's queue).
//! Now the first pending signal is kept beside the mailbox's lock, a lone arrival is offered to the
//! receive before it is queued, and an empty look returns at once: 725 instructions a hop (send and
//! push 92, receive 203, the park, switch and wake of the runtime the other 430). A ring of 1 000
//! costs about twice a small ring's hop on this machine (1 worker, load averages 5–8: 356–368 ns a
//! hop for 2 processes, 313–374 for 100, 651–654 for 1 000) with the same instructions: the cache
//! simulation (callgrind `--cache-sim=yes`) counts 0.03 first-level data misses a hop in a ring of
//! 2 and about 30 in a ring of 1 000, most of them on the stack of the fiber being resumed (its
//! receive's and its switch's frames: 7 and 4) and in the records it touches, all of which the last
//! level holds. On 2 workers the crossings still decide (2: 387 ns, 10: 1 761, 100: 1 092, 1 000:
//! 663 ns a hop). Three alternated `--quick` pairs of the binaries before and after (load averages
//! 8–10): `1w` 3.01×, 3.12× and 2.19× tokio before, 2.29×, 2.15× and 1.99× after; `2w` 1.78×, 1.15×
//! and 1.47× erlang before, 1.66×, 2.04× and 1.14× after, 1.49×, 0.87× and 1.17× ractor before,
//! 0.82×, 1.41× and 0.61× after (within the noise of the crossings). Two alternated full pairs
//! (load averages 6.5–7.5): `1w` fibra 656 and 626 ns a hop before, 477 and 752 ns after, 2.27×
//! and 2.39× tokio before, 2.01× and 2.24× after; `2w` fibra 1 202 and 1 313 ns before, 1 173 and
//! 1 517 ns after, erlang 768–941 ns: 1.57× and 1.42× erlang before, 1.48× and 1.61× after, 0.75×
//! and 0.71× ractor before, 1.00× and 0.85× after. Not reached: 0.5× erlang and ractor.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fibra::process::{self, Inbox, Pid, Signal};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use crate::erlang::compare_with_erlang;
use crate::report::{Case, Metric};
use crate::rounds::{compare_per_op, Contender};
use crate::runtimes;

/// Processes in the ring, the main one included.
const RING: u64 = 1000;
const WORKERS: usize = 2;
const ROUNDS: usize = 5;

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let laps = if quick { 100 } else { 1000 };
    compare_per_op(
        "proc_ring",
        "1w",
        laps * RING,
        ROUNDS,
        &[
            ("fibra", &|hops| fibra(1, hops)),
            ("tokio", &|hops| {
                runtimes::tokio_current().block_on(tokio_ring(hops))
            }),
        ],
    );
    let case = Case {
        bench: "proc_ring",
        variant: "2w",
        metric: Metric::NsPerOp,
    };
    let per_hop = |elapsed: Duration| elapsed.as_nanos() as f64 / (laps * RING) as f64;
    let contenders = vec![
        Contender::new("fibra", || per_hop(fibra(WORKERS, laps * RING))),
        Contender::new("tokio", || {
            per_hop(runtimes::tokio_multi(WORKERS).block_on(tokio_ring(laps * RING)))
        }),
        Contender::new("ractor", || {
            let runtime = runtimes::tokio_multi(WORKERS);
            per_hop(runtimes::tokio_on_worker(&runtime, ractor_ring(laps)))
        }),
    ];
    compare_with_erlang(&case, ROUNDS, contenders, &[RING, laps]);
}

/// fibra: the main process and `RING - 1` others, each forwarding the hop count plus one.
fn fibra(workers: usize, hops: u64) -> Duration {
    let laps = hops / RING;
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let status = runtimes::fibra(workers).block_on(move || {
        process::run(move |inbox: Inbox<u64>| {
            let mut next: Pid<u64> = inbox.pid();
            let mut members = Vec::new();
            for _ in 0..RING - 1 {
                let to = next.clone();
                next = process::spawn(move |inbox: Inbox<u64>| loop {
                    if let Signal::Msg(hops) = inbox.recv() {
                        to.send(hops + 1);
                    }
                });
                members.push(next.clone());
            }
            let start = Instant::now();
            let mut hops = 0;
            for _ in 0..laps {
                next.send(hops);
                hops = inbox.recv().into_msg().expect("the token");
            }
            *out.lock().unwrap() = start.elapsed();
            assert_eq!(hops, laps * (RING - 1));
        })
    });
    assert_eq!(status, 0);
    let elapsed = *elapsed.lock().unwrap();
    elapsed
}

/// tokio: `RING - 1` tasks and the timing task, each with an unbounded channel.
async fn tokio_ring(hops: u64) -> Duration {
    let laps = hops / RING;
    {
        let (main_tx, mut main_rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
        let mut next = main_tx;
        let mut members = Vec::new();
        for _ in 0..RING - 1 {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
            let to = next;
            members.push(tokio::spawn(async move {
                while let Some(hops) = rx.recv().await {
                    if to.send(hops + 1).is_err() {
                        break;
                    }
                }
            }));
            next = tx;
        }
        let start = Instant::now();
        let mut hops = 0;
        for _ in 0..laps {
            next.send(hops).expect("the ring is up");
            hops = main_rx.recv().await.expect("the token");
        }
        let elapsed = start.elapsed();
        assert_eq!(hops, laps * (RING - 1));
        drop(next);
        drop(main_rx);
        for member in members {
            member.abort();
        }
        elapsed
    }
}

/// What a ractor ring member receives.
enum Hop {
    /// The member to pass the token to (sent to the lapper once the ring is built).
    Next(ActorRef<Hop>),
    /// The token, carrying its hop count.
    Token(u64),
}

/// A ractor ring member that forwards the token to the next with the hop count plus one.
struct Forward;

impl Actor for Forward {
    type Msg = Hop;
    type State = ActorRef<Hop>;
    type Arguments = ActorRef<Hop>;

    async fn pre_start(
        &self,
        _: ActorRef<Hop>,
        next: ActorRef<Hop>,
    ) -> Result<ActorRef<Hop>, ActorProcessingErr> {
        Ok(next)
    }

    async fn handle(
        &self,
        _: ActorRef<Hop>,
        hop: Hop,
        next: &mut ActorRef<Hop>,
    ) -> Result<(), ActorProcessingErr> {
        if let Hop::Token(hops) = hop {
            next.send_message(Hop::Token(hops + 1))?;
        }
        Ok(())
    }
}

/// The ractor ring member that sends the token round again for every lap left (the role of
/// fibra's main process), then reports the final hop count.
struct Lapper;

struct Laps {
    first: Option<ActorRef<Hop>>,
    left: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Lapper {
    type Msg = Hop;
    type State = Laps;
    type Arguments = Laps;

    async fn pre_start(&self, _: ActorRef<Hop>, laps: Laps) -> Result<Laps, ActorProcessingErr> {
        Ok(laps)
    }

    async fn handle(
        &self,
        _: ActorRef<Hop>,
        hop: Hop,
        laps: &mut Laps,
    ) -> Result<(), ActorProcessingErr> {
        match hop {
            Hop::Next(first) => laps.first = Some(first),
            Hop::Token(hops) if laps.left == 0 => {
                let done = laps.done.take().expect("the ring ends once");
                let _ = done.send(hops);
            }
            Hop::Token(hops) => {
                laps.left -= 1;
                let first = laps.first.as_ref().expect("the ring is closed");
                first.send_message(Hop::Token(hops))?;
            }
        }
        Ok(())
    }
}

/// ractor: the lapper and `RING - 1` forwarders, `laps` laps.
async fn ractor_ring(laps: u64) -> Duration {
    let (done, ended) = oneshot::channel();
    let state = Laps {
        first: None,
        left: laps,
        done: Some(done),
    };
    let (lapper, _) = Actor::spawn(None, Lapper, state)
        .await
        .expect("spawn the lapper");
    let mut next = lapper.clone();
    let mut members = Vec::new();
    for _ in 0..RING - 1 {
        let (member, _) = Actor::spawn(None, Forward, next)
            .await
            .expect("spawn a ring member");
        members.push(member.clone());
        next = member;
    }
    lapper
        .send_message(Hop::Next(next))
        .expect("the lapper is up");
    let start = Instant::now();
    lapper
        .send_message(Hop::Token(0))
        .expect("the lapper is up");
    let hops = ended.await.expect("the lapper reports");
    let elapsed = start.elapsed();
    assert_eq!(hops, laps * (RING - 1));
    lapper.kill();
    for member in &members {
        member.kill();
    }
    elapsed
}
