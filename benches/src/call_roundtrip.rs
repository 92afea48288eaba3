//! `call_roundtrip`: requests with a typed reply to a server process, 1 000 000 (100 000 with
//! `--quick`); ns per call.
//!
//! Variant `2w`: the main fibra process calls a server process with `fibra::process::call`
//! (a one-shot reply handle and a monitor on the server for each call) on a 2-worker runtime,
//! vs a tokio task calling a ractor actor with `call!` (an `RpcReplyPort`) on a 2-worker tokio
//! multi-thread runtime (system `ractor`), and an Erlang/OTP process calling a `gen_server`
//! with `gen_server:call` on two schedulers (system `erlang`). Call `i` is answered with `i`;
//! the answers' sum is checked.
//!
//! Measured (`--quick`, alternated runs of two binaries on the shared 2-core machine at load
//! averages 9–14, so single figures swing by 2×; the ratios within a run are steadier).
//! Before, each call armed a timer on the driver's wheel for its timeout: 0.69×–0.94× ractor,
//! 0.37×–0.41× erlang (four runs; fibra 1.9–3.2 µs). With a timed park's deadline armed only
//! if the wait outlasts its worker's next look (the reply comes first): 0.49×–0.69× ractor
//! (0.494, 0.518, 0.548, 0.689), 0.29×–0.38× erlang. With `call` also yielding before it
//! parks: 0.485× and 0.489× ractor, 0.23× and 0.26× erlang, in the two runs alternated with
//! the previous binary (0.494× and 0.689× there). A scratch build without any timer measured
//! 441 ns (0.75× ractor) on a quieter machine. Later, at a load average near 3, the binaries
//! before and after both changes alternated twice: before 1874 and 3175 ns (1.16× and 1.92×
//! ractor, 0.60× and 0.98× erlang), after 731 and 706 ns (0.441× and 0.445× ractor, 0.226× and
//! 0.227× erlang).
//!
//! Measured on 2026-12-05 in two full `fibra-compare` runs of the seven process benches, one
//! after the other, on the shared 2-core machine at load averages 2.7–4.5 (OTP 25; each figure
//! the median of a run's rounds, the two runs' figures given in order): fibra 728 and 755 ns
//! per call, ractor 1 955 and 2 031 ns, erlang 3 302 and 3 314 ns: 0.372× and 0.372× ractor,
//! 0.220× and 0.228× erlang.
//!
//! Like `proc_pingpong`, rounds fell into a slow mode (0.9–3 µs a call) when an idle worker
//! stole the server process before the caller parked, putting the two on different workers.
//! With a lone fiber left to its spawner's worker for a few microseconds (the runtime's steal
//! grace), two alternated full runs of the binaries before and after (2026-12-07, load average
//! near 2): fibra's rounds 1 053, 946, 2 588, 952, 366 and 963, 3 060, 565, 941, 917 ns before
//! (0.660× and 0.716× ractor), 479, 534, 482, 2 857, 562 and 597, 539, 435, 450, 415 ns after
//! (0.344× and 0.334× ractor).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra::process::{self, Inbox, Reason, ReplyTo, Signal};
use ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::erlang::compare_with_ractor_and_erlang;
use crate::proc_spawn::WORKERS;
use crate::rounds::{time_each, time_round_trips};
use crate::runtimes;

const JOB: &str = "call_roundtrip";
const ROUNDS: usize = 5;
/// The calls' timeout, OTP's default for `gen_server:call`; no call comes near it.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the bench and prints its JSON lines.
pub fn run(quick: bool) {
    let calls: u64 = if quick { 100_000 } else { 1_000_000 };
    compare_with_ractor_and_erlang(JOB, ROUNDS, calls, || fibra(calls), || ractor_calls(calls));
}

fn fibra(calls: u64) -> Duration {
    let elapsed = Arc::new(Mutex::new(Duration::ZERO));
    let out = elapsed.clone();
    let status = runtimes::fibra(WORKERS).block_on(move || {
        process::run(move |_: Inbox<()>| {
            let server = process::spawn(|inbox: Inbox<(u64, ReplyTo<u64>)>| loop {
                if let Signal::Msg((i, reply)) = inbox.recv() {
                    reply.reply(i);
                }
            });
            let spent = time_each(calls, |i| {
                process::call(&server, |reply| (i, reply), TIMEOUT).expect("the server answers")
            });
            *out.lock().unwrap() = spent;
            process::exit(&server, Reason::Kill);
        })
    });
    assert_eq!(status, 0);
    let elapsed = *elapsed.lock().unwrap();
    elapsed
}

/// A ractor actor that answers every call with the number it was given.
struct Server;

impl Actor for Server {
    type Msg = (u64, RpcReplyPort<u64>);
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Self::Msg>, (): ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Self::Msg>,
        (i, reply): Self::Msg,
        (): &mut (),
    ) -> Result<(), ActorProcessingErr> {
        reply.send(i)?;
        Ok(())
    }
}

/// ractor: `calls` calls of a [`Server`] with `call!`, after one untimed call.
async fn ractor_calls(calls: u64) -> Duration {
    let (server, _) = Actor::spawn(None, Server, ())
        .await
        .expect("spawn the server");
    let spent = time_round_trips(calls, |i| {
        let server = server.clone();
        async move { call!(server, |reply| (i, reply)).expect("the server answers") }
    })
    .await;
    server.kill();
    spent
}
