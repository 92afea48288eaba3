//! The `fibra-load` command line against loopback servers: exact counts, models, exit codes,
//! reports.

mod server;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fibra_load::Report;
use server::{Behaviour, Server};

fn fibra_load(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fibra-load"))
        .args(args)
        .args(["--workers", "2"])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibra-load-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn report(path: &PathBuf) -> Report {
    Report::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn run_json(name: &str, args: &[&str]) -> (Output, Report) {
    let json = temp(name);
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let output = fibra_load(&all);
    assert!(
        json.exists(),
        "no report: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, report(&json))
}

#[test]
fn closed_model_sends_exactly_n_requests() {
    for (vus, n) in [("4", 37u64), ("10", 3)] {
        let server = Server::start(Behaviour::default());
        let (output, report) = run_json(
            &format!("closed-{n}.json"),
            &[&server.url(), "-c", vus, "-n", &n.to_string()],
        );
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(server.requests(), n, "server-side count");
        assert_eq!(report.stats.requests, n);
        assert_eq!(report.stats.status[&200], n);
        let summary = String::from_utf8(output.stdout).unwrap();
        assert!(
            summary.contains(&format!("Requests:     {n}\n")),
            "{summary}"
        );
        assert!(
            summary.contains(&format!("[200] {n} responses")),
            "{summary}"
        );
    }
}

#[test]
fn open_model_sends_exactly_n_requests() {
    let server = Server::start(Behaviour::default());
    let (output, report) = run_json(
        "open-n.json",
        &[&server.url(), "--rate", "400", "-n", "41", "-c", "4"],
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(server.requests(), 41);
    assert_eq!(report.stats.requests, 41);
    assert_eq!(report.model, fibra_load::Model::Open);
    assert!(report.vus_max <= 4);
}

#[test]
fn open_model_starts_follow_the_schedule() {
    let server = Server::start(Behaviour::default());
    let (_, report) = run_json(
        "open-rate.json",
        &[&server.url(), "--rate", "20", "-d", "3s"],
    );
    let starts: Vec<u64> = report.stats.series.iter().map(|s| s.starts).collect();
    assert_eq!(starts.iter().sum::<u64>(), 60, "{starts:?}");
    for (second, n) in starts.iter().take(3).enumerate() {
        assert!((19..=21).contains(n), "second {second}: {starts:?}");
    }
    assert_eq!(server.requests(), 60);
}

#[test]
fn open_model_shows_a_stall_that_the_closed_model_hides() {
    let stall = Behaviour {
        stall: Some((50, Duration::from_secs(1))),
        ..Behaviour::default()
    };
    let server = Server::start(stall);
    let (_, closed) = run_json("co-closed.json", &[&server.url(), "-c", "1", "-n", "300"]);
    let server = Server::start(stall);
    let (_, open) = run_json(
        "co-open.json",
        &[&server.url(), "-c", "1", "--rate", "150", "-n", "300"],
    );
    let p99 = |r: &Report| r.stats.latency.quantile(0.99);
    // Closed: one request of 300 took the stall, the rest are fast, so p99 is fast.
    assert!(
        closed.stats.latency.max() >= Duration::from_millis(990),
        "{closed:?}"
    );
    assert!(
        p99(&closed) < Duration::from_millis(500),
        "closed p99 {:?}",
        p99(&closed)
    );
    // Open: the ~150 starts due during the stall waited for it, measured from their schedule.
    assert!(
        p99(&open) >= Duration::from_millis(900),
        "open p99 {:?}",
        p99(&open)
    );
    assert!(open.late_starts > 0);
}

/// A stall that outlasts an open-model run: the starts due while it holds the only VU are
/// counted as missed and enter the latency histogram, so none disappears from the report.
#[test]
fn starts_missed_at_the_end_of_an_open_run_are_counted() {
    let server = Server::start(Behaviour {
        stall: Some((20, Duration::from_millis(1500))),
        ..Behaviour::default()
    });
    let (output, report) = run_json(
        "missed.json",
        &[&server.url(), "-c", "1", "--rate", "100", "-d", "1s"],
    );
    assert_eq!(output.status.code(), Some(0));
    // 100 starts were due (one every 10 ms for 1 s); each was made or missed.
    assert_eq!(report.stats.requests, server.requests());
    assert_eq!(report.stats.requests + report.missed_starts, 100);
    assert!(report.missed_starts > 0, "the VU was busy at the end");
    let responses: u64 = report.stats.status.values().sum();
    assert_eq!(
        report.stats.latency.count(),
        responses + report.missed_starts,
        "every missed start is in the histogram"
    );
    let summary = String::from_utf8(output.stdout).unwrap();
    let missed = format!("Missed:       {} ", report.missed_starts);
    assert!(summary.contains(&missed), "{summary}");
}

#[test]
fn thresholds_pass_with_0_and_fail_with_99() {
    let server = Server::start(Behaviour::default());
    let url = server.url();
    let pass = fibra_load(&[
        &url,
        "-n",
        "20",
        "--threshold",
        "p99<10s",
        "--threshold",
        "errors<1%",
    ]);
    assert_eq!(pass.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&pass.stdout).contains("✓ p99<10s"));
    let fail = fibra_load(&[
        &url,
        "-n",
        "20",
        "--threshold",
        "p99<10s",
        "--threshold",
        "rps>1e12",
    ]);
    assert_eq!(fail.status.code(), Some(99));
    assert!(String::from_utf8_lossy(&fail.stdout).contains("✗ rps>1e12"));
}

/// Every request timed out: no latency was measured, so a latency threshold fails as not
/// measured, in the run and in a merge of its report.
#[test]
fn a_latency_threshold_over_no_response_fails() {
    let server = Server::start(Behaviour {
        silent: true,
        ..Behaviour::default()
    });
    let (output, report) = run_json(
        "all-timed-out.json",
        &[
            &server.url(),
            "-c",
            "2",
            "-n",
            "4",
            "--timeout",
            "200ms",
            "--threshold",
            "p99<50ms",
        ],
    );
    assert_eq!(output.status.code(), Some(99));
    assert_eq!(report.stats.errors[&fibra_load::ErrorKind::Timeout], 4);
    assert_eq!(report.thresholds[0].actual, None);
    assert!(!report.thresholds[0].passed);
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(summary.contains("✗ p99<50ms"), "{summary}");
    assert!(summary.contains("(not measured)"), "{summary}");
    let merge = Command::new(env!("CARGO_BIN_EXE_fibra-load"))
        .args(["merge", temp("all-timed-out.json").to_str().unwrap()])
        .args(["--threshold", "p99<50ms"])
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(99));
    assert_eq!(server.requests(), 4);
}

/// p95 is a threshold metric, so it is reported with the other percentiles.
#[test]
fn p95_is_reported_with_the_other_percentiles() {
    let server = Server::start(Behaviour::default());
    let json = temp("p95.json");
    let output = fibra_load(&[
        &server.url(),
        "-n",
        "20",
        "--threshold",
        "p95<10s",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(summary.contains("\n  p95    "), "{summary}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let latency = &value["stats"]["latency"];
    assert!(latency["p95_ms"].as_f64().unwrap() > 0.0, "{latency}");
    let help = fibra_load(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("p50|p90|p95|p99"));
}

#[test]
fn bad_input_exits_with_2() {
    for args in [
        &["ftp://127.0.0.1/"][..],
        &["http://127.0.0.1:1/", "-d", "ten"],
        &["http://127.0.0.1:1/", "--threshold", "p99<"],
        &["http://127.0.0.1:1/", "--stages", "1s"],
        &["http://127.0.0.1:1/", "--shard", "2/2"],
        &["http://127.0.0.1:1/", "-c", "5", "--stages", "1s:10"],
        &["http://127.0.0.1:1/", "--stages", "1s:1", "--shard", "1/2"],
        &["http://127.0.0.1:1/", "-c", "0"],
        &["http://127.0.0.1:1/", "--rate", "-5"],
        &["http://127.0.0.1:1/", "-H", "no colon"],
        &["http://127.0.0.1:1/", "-H", "X(1): y"],
        &["http://127.0.0.1:1/", "-H", "X-A: 1\r\nX-B: 2"],
        &["http://127.0.0.1:1/", "-H", ": empty name"],
        &["http://127.0.0.1:1/", "-H", "Connection: close"],
        &["http://127.0.0.1:1/", "-H", "content-length: 3"],
        &["http://127.0.0.1:1/", "-H", "Transfer-Encoding: chunked"],
        &[],
    ] {
        let output = fibra_load(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(!output.stderr.is_empty());
    }
}

#[test]
fn an_unreachable_target_is_counted_and_exits_with_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let (output, report) = run_json("refused.json", &[&url, "-c", "2", "-n", "10"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(report.stats.errors[&fibra_load::ErrorKind::Refused], 10);
    assert!(String::from_utf8_lossy(&output.stdout).contains("refused       10"));
}

#[test]
fn chunked_responses_and_server_closes_are_handled() {
    let server = Server::start(Behaviour {
        chunked: true,
        close_after: Some(3),
        ..Behaviour::default()
    });
    let (output, report) = run_json("chunked.json", &[&server.url(), "-c", "1", "-n", "30"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(report.stats.status[&200], 30, "no request failed");
    assert!(report.stats.errors.is_empty());
    assert_eq!(server.requests(), 30);
    // Every connection served 3 requests before the server closed it.
    assert_eq!(report.stats.connections, 10);
}

#[test]
fn shards_merge_into_the_whole() {
    let server = Server::start(Behaviour::default());
    let url = server.url();
    let (_, a) = run_json(
        "shard0.json",
        &[&url, "-c", "3", "-n", "25", "--shard", "0/2"],
    );
    let (_, b) = run_json(
        "shard1.json",
        &[&url, "-c", "3", "-n", "25", "--shard", "1/2"],
    );
    assert_eq!((a.stats.requests, b.stats.requests), (13, 12));
    assert_eq!((a.vus, b.vus), (2, 1));
    let merged_json = temp("merged.json");
    let html = temp("merged.html");
    let output = Command::new(env!("CARGO_BIN_EXE_fibra-load"))
        .args([
            "merge",
            temp("shard0.json").to_str().unwrap(),
            temp("shard1.json").to_str().unwrap(),
        ])
        .args([
            "--json",
            merged_json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged = report(&merged_json);
    let gate = Command::new(env!("CARGO_BIN_EXE_fibra-load"))
        .args([
            "merge",
            temp("shard0.json").to_str().unwrap(),
            temp("shard1.json").to_str().unwrap(),
        ])
        .args(["--threshold", "rps>1e12"])
        .output()
        .unwrap();
    assert_eq!(gate.status.code(), Some(99));
    assert_eq!(merged.stats.requests, 25);
    assert_eq!(server.requests(), 25);
    let mut both = a.stats.latency.clone();
    both.merge(&b.stats.latency);
    assert_eq!(merged.stats.latency.count(), 25);
    for q in [0.5, 0.99] {
        assert_eq!(merged.stats.latency.quantile(q), both.quantile(q));
    }
    assert_eq!(merged.stats.latency.max(), both.max());
    assert_eq!(merged.shards.len(), 2);
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<svg"));
    assert!(html.contains(">25<"), "the request count is in the page");
}

/// A shard given twice, or shards of different counts, would be counted twice or divide the
/// load differently: merge refuses them (exit 2). An incomplete set merges with a warning.
#[test]
fn merge_refuses_a_repeated_shard_and_mixed_counts_and_warns_of_a_missing_one() {
    let server = Server::start(Behaviour::default());
    let url = server.url();
    let paths: Vec<String> = ["0/2", "0/3"]
        .iter()
        .map(|shard| {
            let name = format!("merge-check-{}.json", shard.replace('/', "-of-"));
            let (output, _) = run_json(&name, &[&url, "-c", "3", "-n", "6", "--shard", shard]);
            assert_eq!(output.status.code(), Some(0));
            temp(&name).to_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(server.requests(), 5, "3 for shard 0/2, 2 for shard 0/3");
    let merge = |files: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fibra-load"))
            .arg("merge")
            .args(files)
            .output()
            .unwrap()
    };
    for (files, why) in [
        (vec![&paths[0], &paths[0]], "shard 0/2 is given twice"),
        (vec![&paths[0], &paths[1]], "divide the load differently"),
    ] {
        let files: Vec<&str> = files.iter().map(|f| f.as_str()).collect();
        let output = merge(&files);
        assert_eq!(output.status.code(), Some(2), "{files:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(why), "{stderr}");
    }
    let alone = merge(&[&paths[0]]);
    assert_eq!(alone.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&alone.stderr);
    assert!(stderr.contains("lacks shard 1/2"), "{stderr}");
}

#[test]
fn closed_stages_reach_their_vu_counts() {
    let server = Server::start(Behaviour::default());
    let (_, report) = run_json(
        "stages.json",
        &[
            &server.url(),
            "-c",
            "10",
            "--stages",
            "300ms:4,700ms:4,200ms:0",
        ],
    );
    assert_eq!(report.vus_max, 4);
    assert!(report.stats.requests > 0);
}

/// Without -c the closed model runs as many VUs as its stages reach, even past the default
/// of 50.
#[test]
fn closed_stages_without_c_run_as_many_vus_as_they_reach() {
    let server = Server::start(Behaviour::default());
    let (output, report) = run_json(
        "stages-peak.json",
        &[&server.url(), "--stages", "300ms:60,600ms:60"],
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(report.vus, 60);
    assert_eq!(report.vus_max, 60);
}

#[test]
fn ctrl_c_still_writes_the_report() {
    let server = Server::start(Behaviour::default());
    let json = temp("interrupted.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibra-load"))
        .args([&server.url(), "-c", "2", "-d", "60s", "--workers", "2"])
        .args(["--json", json.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first live line (stderr is not a terminal) says the run is under way.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    assert!(line.contains("requests"), "{line}");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let report = report(&json);
    assert!(report.interrupted);
    assert!(report.duration() < Duration::from_secs(30));
    assert!(String::from_utf8_lossy(&output.stdout).contains("(interrupted)"));
}

#[test]
fn method_headers_and_body_are_sent() {
    let server = Server::start(Behaviour::default());
    let output = fibra_load(&[
        &server.url(),
        "-n",
        "2",
        "-c",
        "1",
        "-m",
        "put",
        "-H",
        "X-Test: yes",
        "-b",
        "payload",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let heads = server.heads();
    assert_eq!(heads.len(), 2);
    for head in heads {
        assert!(head.starts_with("PUT / HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("\r\nX-Test: yes\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Length: 7\r\n"), "{head}");
        assert!(head.ends_with("\r\n\r\npayload"), "{head}");
    }
}

/// A virtual host given with -H replaces the URL's Host header instead of adding a second.
#[test]
fn a_host_header_replaces_the_default_one() {
    let server = Server::start(Behaviour::default());
    let output = fibra_load(&[
        &server.url(),
        "-n",
        "1",
        "-c",
        "1",
        "-H",
        "Host: vhost.example",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let head = server.heads().pop().unwrap();
    let hosts: Vec<&str> = head
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
        .collect();
    assert_eq!(hosts, ["Host: vhost.example"], "{head}");
}

#[test]
fn a_urls_file_is_taken_round_robin() {
    let server = Server::start(Behaviour::default());
    let body = temp("body.txt");
    std::fs::write(&body, "from a file").unwrap();
    let urls = temp("urls.txt");
    std::fs::write(
        &urls,
        format!(
            "# a mix\nGET {0}a\n\nPOST {0}b {1}\n",
            server.url(),
            body.display()
        ),
    )
    .unwrap();
    let output = fibra_load(&["--urls-file", urls.to_str().unwrap(), "-c", "1", "-n", "6"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<String> = server
        .heads()
        .iter()
        .map(|h| h.lines().next().unwrap().to_string())
        .collect();
    assert_eq!(lines, ["GET /a HTTP/1.1", "POST /b HTTP/1.1"].repeat(3));
    assert!(server.heads()[1].ends_with("from a file"));
    let random = fibra_load(&[
        "--urls-file",
        urls.to_str().unwrap(),
        "--urls-random",
        "-n",
        "10",
    ]);
    assert_eq!(random.status.code(), Some(0));
    assert_eq!(server.requests(), 16);
    std::fs::write(&urls, "GET\n").unwrap();
    let bad = fibra_load(&["--urls-file", urls.to_str().unwrap(), "-n", "1"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn open_stages_ramp_the_rate() {
    let server = Server::start(Behaviour::default());
    // 0 -> 40/s over 1 s (20 starts), then 40/s for 1 s (40 starts).
    let (_, report) = run_json(
        "open-stages.json",
        &[&server.url(), "--rate", "1", "--stages", "1s:40,1s:40"],
    );
    assert_eq!(report.stats.requests, 60);
    assert_eq!(server.requests(), 60);
    let starts: Vec<u64> = report.stats.series.iter().map(|s| s.starts).collect();
    assert!((19..=21).contains(&starts[0]), "{starts:?}");
}

/// A staged open-model run splits its stages' rates over the shards (--rate only picks the
/// model): 0 -> 40 starts/s over 500 ms is 10 starts, 5 per shard.
#[test]
fn open_stages_are_split_over_shards() {
    let server = Server::start(Behaviour::default());
    let mut requests = Vec::new();
    for shard in ["0/2", "1/2"] {
        let (output, report) = run_json(
            "open-stages-shard.json",
            &[
                &server.url(),
                "--rate",
                "1",
                "--stages",
                "500ms:40",
                "--shard",
                shard,
            ],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{shard}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        requests.push(report.stats.requests);
    }
    assert_eq!(requests, [5, 5]);
    assert_eq!(server.requests(), 10);
}

#[test]
fn too_many_vus_for_the_open_file_limit_say_how_many_fit() {
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 100 && exec '{}' http://127.0.0.1:1/ -c 1000 -n 1",
            env!("CARGO_BIN_EXE_fibra-load")
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("allows 36 VUs"), "{stderr}");
}

#[test]
fn https_against_a_local_rustls_server() {
    let (server, pem) = Server::start_tls(Behaviour {
        close_after: Some(4),
        ..Behaviour::default()
    });
    let url = format!("https://{}/", server.addr);
    let ca = temp("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let (output, report) = run_json(
        "https.json",
        &[
            &url,
            "-c",
            "1",
            "-n",
            "12",
            "--cacert",
            ca.to_str().unwrap(),
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        report.stats.status[&200],
        12,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        report.stats.connections, 3,
        "kept alive, reconnected after each close"
    );
    let insecure = fibra_load(&[&url, "-n", "3", "--insecure"]);
    assert_eq!(insecure.status.code(), Some(0));
    // Without the CA the self-signed certificate is refused: counted, exit 1.
    let (untrusted, report) = run_json("https-untrusted.json", &[&url, "-c", "1", "-n", "2"]);
    assert_eq!(untrusted.status.code(), Some(1));
    assert_eq!(report.stats.errors[&fibra_load::ErrorKind::Other], 2);
    assert_eq!(server.requests(), 15);
}

#[test]
fn a_stalled_server_is_a_timeout_not_a_hang() {
    let server = Server::start(Behaviour {
        stall: Some((1, Duration::from_secs(2))),
        ..Behaviour::default()
    });
    let (output, report) = run_json(
        "timeout.json",
        &[&server.url(), "-c", "1", "-n", "3", "--timeout", "300ms"],
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(report.stats.errors[&fibra_load::ErrorKind::Timeout], 1);
    assert_eq!(report.stats.status[&200], 2);
    assert!(report.duration() < Duration::from_secs(2));
    let zero = fibra_load(&[&server.url(), "--timeout", "0s"]);
    assert_eq!(zero.status.code(), Some(2));
}

#[test]
fn quiet_shows_no_live_display() {
    let server = Server::start(Behaviour::default());
    let quiet = fibra_load(&[&server.url(), "-c", "2", "-d", "1200ms", "--quiet"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    let live = fibra_load(&[&server.url(), "-c", "2", "-d", "1200ms"]);
    let lines = String::from_utf8_lossy(&live.stderr).into_owned();
    assert!(lines.starts_with('[') && lines.contains("s] "), "{lines}");
    assert!(lines.contains(" req/s (mean "), "{lines}");
}

#[test]
fn demo_loads_its_embedded_server() {
    let (output, report) = run_json("demo.json", &["demo", "-c", "3", "-n", "40"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("fibra-load demo: serving http://127.0.0.1:"),
        "{stdout}"
    );
    assert_eq!(report.stats.status[&200], 40);
    assert!(report.target.starts_with("http://127.0.0.1:"));
    let url = fibra_load(&["demo", "http://127.0.0.1:1/"]);
    assert_eq!(url.status.code(), Some(2), "demo takes no URL");
}
