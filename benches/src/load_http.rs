//! `load_http`: HTTP load generators against the embedded fibra hello server of this process,
//! 100 keep-alive connections for 10 s (3 s with `--quick`).
//!
//! Variant `rps`: wall nanoseconds per request (the inverse of requests per second), so lower
//! is better like every metric here. Variant `client_cpu`: CPU nanoseconds (user + system) the
//! load generator spent per request, from `getrusage(RUSAGE_CHILDREN)` around each run. Systems:
//! `fibra` (the `fibra_load` library in a child copy of this binary, 2 workers), `oha`, `wrk`
//! (2 threads) and `hey`, each a child process; a peer that is not installed prints a skip line
//! on stderr. Variant `vus` (fibra only): 10 000 VUs (2 000 with `--quick`) each holding a
//! keep-alive connection and sending one request per second; resident bytes per VU of the
//! child.
//!
//! Install the peers with `bash benches/install-peers.sh`.
//!
//! ## Measured
//!
//! `--quick`, 2026-12-05, the shared 2-core machine at a load average near 1.4, oha 1.16 built
//! with `cargo install`, wrk and hey from Debian; fibra ÷ peer, ns per request (lower is
//! better): `rps` 0.793 oha, 1.084 wrk, 0.283 hey (fibra 116 000 req/s, oha 92 000, wrk
//! 107 000–130 000); `client_cpu` 0.651 oha, 1.185 wrk, 0.194 hey (about 9 300 CPU ns per
//! request for fibra-load, 7 500–9 000 for wrk, 14 000 for oha). A profile of the fibra client
//! puts half its samples in the kernel's TCP paths; of the rest, the driver thread's turn and
//! the cross-thread wake of each readiness event are what wrk, which polls epoll on its own
//! threads, does not pay.
//!
//! 2026-12-06, the same machine at a load average of 6–8.6 (other builds running), `--quick`
//! alternating the build before and after two client changes (the load crate reads the clock 4
//! times per request instead of 9; `send_prepared(.., false)` no longer copies the response
//! headers, and a response head is parsed into uninitialized header slots with only the
//! values framing needs decoded). `client_cpu` ÷ wrk: 1.208 and 1.452 before, 1.187 and 1.468
//! after; ÷ oha: 0.681 and 0.742 before, 0.686 and 0.858 after; `rps` ÷ wrk 1.18–1.93 and ÷ oha
//! 0.77–1.08 in all four runs — at that load the ratios move more between runs than the change
//! moves them. Measured directly (the client job under `/usr/bin/time` against a separate
//! `http_hello` server, 5 alternating rounds of 3 s, medians): CPU per request 13 330 ns
//! before, 11 990 ns after (−10%; user time 5 760 → 4 990 ns), wrk 9 620 ns (ratio 1.39 →
//! 1.25). Under callgrind the client's marginal user-space instructions per request went
//! from 6 690 to 5 860 (−12%). Per request the client makes one `sendto` and about 1.2
//! `recvfrom`, fewer system calls than wrk (one `write`, one `read`, two `epoll_ctl`), and
//! its kernel time per request is at or below wrk's; the gap is user time (about 5 000 ns
//! against wrk's 1 400), spread over the scheduler's fiber switches, the reactor wait of the
//! responses not yet there when their VU runs again (with its timed park: five clock reads),
//! the driver thread, httparse (about 560 instructions per response) and three histogram
//! records. Tried and dropped: retrying a read that found nothing up to three times after a
//! yield before waiting for the reactor — `recvfrom` went to 2.8 per request and CPU per
//! request up by about 10%, as the server had not answered yet on most retries. One client
//! worker instead of two: CPU per request at wrk's (8 600–9 300 ns against 8 200–8 900) but
//! about 25% fewer requests per second, so the bench keeps two.

use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use fibra_load::{Load, Scenario};

use crate::child;
use crate::cpu::children_cpu;
use crate::report::{self, Case, Metric, Outcome};
use crate::rss::resident_bytes;

/// The first word of this bench's child jobs.
pub const JOB: &str = "load_http";
/// Connections (VUs) of the throughput variants.
const CONNECTIONS: u64 = 100;
/// Rounds per system.
const ROUNDS: usize = 3;
/// Workers of the hello server's runtime and of fibra-load.
const WORKERS: usize = 2;

/// One measured run of a load generator.
struct Run {
    requests: f64,
    wall: Duration,
    cpu: Duration,
}

/// Runs the variants and prints their JSON lines.
pub fn run(quick: bool) {
    let seconds = if quick { 3 } else { 10 };
    let server_runtime = fibra::Runtime::builder()
        .workers(WORKERS)
        .build()
        .and_then(|r| r.into_background())
        .expect("the hello server's runtime");
    let listener = fibra::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let server = fibra::net::http::HelloServer::serve(&server_runtime.handle(), listener);
    let url = format!("http://{}/", server.local_addr());
    let systems: Vec<&'static str> = ["fibra", "oha", "wrk", "hey"]
        .into_iter()
        .filter(|&s| s == "fibra" || installed(s))
        .collect();
    let mut runs: Vec<Vec<Run>> = systems.iter().map(|_| Vec::new()).collect();
    for round in 1..=ROUNDS {
        for (system, runs) in systems.iter().zip(&mut runs) {
            let run = generate(system, &url, seconds);
            eprintln!(
                "{JOB} round {round}/{ROUNDS} {system}: {:.0} req/s, {:.0} cpu ns/req",
                run.requests / run.wall.as_secs_f64(),
                run.cpu.as_nanos() as f64 / run.requests
            );
            runs.push(run);
        }
    }
    let per_request = |pick: fn(&Run) -> Duration| -> Vec<Outcome> {
        systems
            .iter()
            .zip(&runs)
            .map(|(system, runs)| {
                let values: Vec<f64> = runs
                    .iter()
                    .map(|r| pick(r).as_nanos() as f64 / r.requests)
                    .collect();
                Outcome {
                    system,
                    value: report::median(&values),
                    runs: values.len(),
                }
            })
            .collect()
    };
    for (variant, pick) in [
        ("rps", (|r: &Run| r.wall) as fn(&Run) -> Duration),
        ("client_cpu", |r: &Run| r.cpu),
    ] {
        let case = Case {
            bench: JOB,
            variant,
            metric: Metric::NsPerOp,
        };
        for line in report::lines(&case, &per_request(pick)) {
            println!("{line}");
        }
    }
    let vus = if quick { 2_000 } else { 10_000 };
    let values: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let out = child::run(&format!("{JOB} vus {url} {vus} {}", seconds.max(5)));
            out.parse()
                .unwrap_or_else(|_| panic!("child printed `{out}`"))
        })
        .collect();
    let case = Case {
        bench: JOB,
        variant: "vus",
        metric: Metric::BytesPerTask,
    };
    let fibra = Outcome {
        system: "fibra",
        value: report::median(&values),
        runs: values.len(),
    };
    for line in report::lines(&case, &[fibra]) {
        println!("{line}");
    }
    server.stop();
    server_runtime.shut_down();
}

fn installed(peer: &str) -> bool {
    let found = Command::new(peer)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!("{JOB}: skipping {peer}: not installed (bash benches/install-peers.sh)");
    }
    found
}

/// Loads `url` with `system` for `seconds` from a child process.
fn generate(system: &str, url: &str, seconds: u64) -> Run {
    let (c, d) = (CONNECTIONS.to_string(), format!("{seconds}s"));
    let before = children_cpu();
    let (requests, wall) = if system == "fibra" {
        closed_loop(url, CONNECTIONS, seconds)
    } else {
        let args: Vec<&str> = match system {
            "oha" => vec![
                "--no-tui",
                "--output-format",
                "json",
                "-c",
                &c,
                "-z",
                &d,
                url,
            ],
            "wrk" => vec!["-t", "2", "-c", &c, "-d", &d, url],
            _ => vec!["-c", &c, "-z", &d, url],
        };
        let output = Command::new(system)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {system}: {e}"));
        assert!(
            output.status.success(),
            "{system} failed: {}",
            output.status
        );
        let text = String::from_utf8_lossy(&output.stdout);
        let rps = requests_per_second(system, &text)
            .unwrap_or_else(|| panic!("no requests/sec in the output of {system}:\n{text}"));
        (rps * seconds as f64, Duration::from_secs(seconds))
    };
    let cpu = children_cpu().saturating_sub(before);
    Run {
        requests,
        wall,
        cpu,
    }
}

/// fibra-load in a child copy of this binary: `vus` keep-alive connections (one VU each,
/// 2 workers) send `GET url` in a closed loop for `seconds`, every response checked
/// for errors; returns the requests completed and the wall time they took.
pub fn closed_loop(url: &str, vus: u64, seconds: u64) -> (f64, Duration) {
    let out = child::run(&format!("{JOB} rps {url} {vus} {seconds}"));
    let (requests, secs) = out.split_once(' ').expect("`requests seconds`");
    (
        requests.parse().expect("a request count"),
        Duration::from_secs_f64(secs.parse().expect("seconds")),
    )
}

/// The requests per second a peer printed: oha's JSON `requestsPerSec`, wrk's and hey's
/// `Requests/sec:` line.
fn requests_per_second(system: &str, text: &str) -> Option<f64> {
    if system == "oha" {
        let at = text.find("\"requestsPerSec\":")? + "\"requestsPerSec\":".len();
        let number: String = text[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == '-')
            .collect();
        return number.parse().ok();
    }
    let line = text.lines().find(|l| l.contains("Requests/sec:"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

/// The child side: `load_http rps URL VUS SECONDS` prints `requests seconds`;
/// `load_http vus URL VUS SECONDS` prints resident bytes per VU.
pub fn run_child(job: &str) -> ExitCode {
    let parsed = match job.split_whitespace().collect::<Vec<_>>()[..] {
        [JOB, kind, url, vus, seconds] => vus
            .parse::<u64>()
            .ok()
            .zip(seconds.parse::<u64>().ok())
            .map(|(vus, seconds)| (kind, url.to_string(), vus, seconds)),
        _ => None,
    };
    let Some((kind, url, vus, seconds)) = parsed else {
        eprintln!("fibra-compare: bad child job `{job}`");
        return ExitCode::from(2);
    };
    let duration = Duration::from_secs(seconds);
    match kind {
        "rps" => {
            let request = fibra_load::Request::get(url.parse().expect("URL")).prepare(true);
            let scenario = Scenario::new("get").step("get", move |vu| {
                vu.send_prepared(&request, false)?;
                Ok(())
            });
            let report = Load::new(scenario)
                .vus(vus)
                .duration(duration)
                .workers(WORKERS)
                .run();
            assert_eq!(report.stats.failed(), 0, "fibra-load saw errors");
            println!("{} {}", report.stats.requests, report.duration_s);
        }
        "vus" => {
            let baseline = resident_bytes();
            let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let seen = peak.clone();
            let request = fibra_load::Request::get(url.parse().expect("URL")).prepare(true);
            let scenario = Scenario::new("idle").step("get", move |vu| {
                vu.send_prepared(&request, false)?;
                vu.sleep(Duration::from_secs(1));
                Ok(())
            });
            let report = Load::new(scenario)
                .vus(vus)
                .duration(duration)
                .timeout(Duration::from_secs(30))
                .workers(WORKERS)
                .on_progress(move |p| {
                    if p.vus == vus {
                        seen.fetch_max(resident_bytes(), std::sync::atomic::Ordering::Relaxed);
                    }
                })
                .run();
            assert_eq!(report.stats.failed(), 0, "fibra-load saw errors");
            let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
            println!("{:.1}", peak.saturating_sub(baseline) as f64 / vus as f64);
        }
        _ => {
            eprintln!("fibra-compare: bad child job `{job}`");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_outputs_parse() {
        let wrk =
            "Running 1s test\n  Latency   1.00ms\nRequests/sec:  12345.67\nTransfer/sec: 1MB\n";
        assert_eq!(requests_per_second("wrk", wrk), Some(12345.67));
        let hey = "Summary:\n  Total:\t1.0 secs\n  Requests/sec:\t9876.5432\n";
        assert_eq!(requests_per_second("hey", hey), Some(9876.5432));
        let oha = r#"{"summary":{"successRate":1.0,"requestsPerSec":4321.5,"total":1.0}}"#;
        assert_eq!(requests_per_second("oha", oha), Some(4321.5));
        assert_eq!(requests_per_second("wrk", "nothing"), None);
    }
}
