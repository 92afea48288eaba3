//! The library: scenarios of named steps run by VUs that are fibers, against the embedded
//! fibra hello server, under 1, 2 and 4 workers.

use std::time::Duration;

use fibra_load::{Load, Model, Request, Scenario, StepError};

fn runtime(workers: usize) -> fibra::Runtime {
    fibra::Runtime::builder().workers(workers).build().unwrap()
}

fn browse(url: String) -> Scenario {
    let post = Request::new("POST", url.parse().unwrap()).body("ping");
    Scenario::new("browse")
        .step("home", move |vu| {
            let response = vu.get(&url)?;
            vu.check("home is 200", response.status == 200);
            vu.check(
                "says hello",
                response.body == fibra::net::http::HELLO.as_bytes(),
            );
            Ok(())
        })
        .step("think", |vu| {
            vu.sleep(Duration::from_millis(1));
            Ok(())
        })
        .step("post", move |vu| {
            let response = vu.send(&post)?;
            if response.status != 200 {
                return Err(StepError::new(format!("status {}", response.status)));
            }
            Ok(())
        })
}

#[test]
fn closed_scenarios_count_steps_checks_and_requests_exactly() {
    for workers in [1, 2, 4] {
        runtime(workers).block_on(|| {
            let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
            let url = format!("http://{}/", server.local_addr());
            let report = Load::new(browse(url)).vus(5).iterations(23).run();
            assert_eq!(server.requests(), 46, "{workers} workers");
            assert_eq!(report.stats.iterations, 23);
            assert_eq!(report.stats.requests, 46);
            let steps: Vec<(&str, u64, u64)> = report
                .stats
                .steps
                .iter()
                .map(|s| (s.name.as_str(), s.count, s.errors))
                .collect();
            assert_eq!(steps, [("home", 23, 0), ("think", 23, 0), ("post", 23, 0)]);
            assert_eq!(report.stats.checks["home is 200"].pass, 23);
            assert_eq!(report.stats.checks["says hello"].fail, 0);
            assert!(
                report.stats.connections <= 5,
                "keep-alive: one connection per VU"
            );
            assert!(report.any_succeeded());
        });
    }
}

#[test]
fn open_scenarios_start_exactly_n_iterations() {
    for workers in [1, 2, 4] {
        runtime(workers).block_on(|| {
            let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
            let url = format!("http://{}/", server.local_addr());
            let scenario = Scenario::new("get").step("get", move |vu| {
                vu.get(&url)?;
                Ok(())
            });
            let report = Load::new(scenario).vus(3).rate(1000.0).iterations(50).run();
            assert_eq!(server.requests(), 50, "{workers} workers");
            assert_eq!(report.stats.requests, 50);
            assert_eq!(report.model, Model::Open);
        });
    }
}

#[test]
fn a_run_outside_a_runtime_starts_its_own_and_no_keepalive_opens_one_connection_each() {
    let background = fibra::Runtime::new().unwrap().into_background().unwrap();
    let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = fibra::net::http::HelloServer::serve(&background.handle(), listener);
    let url = format!("http://{}/", server.local_addr());
    let scenario = Scenario::new("get").step("get", move |vu| {
        vu.get(&url)?;
        Ok(())
    });
    let report = Load::new(scenario)
        .vus(2)
        .iterations(12)
        .keep_alive(false)
        .workers(2)
        .run();
    assert_eq!(report.stats.requests, 12);
    assert_eq!(report.stats.connections, 12);
    assert_eq!(server.requests(), 12);
    server.stop();
    background.shut_down();
}

#[test]
fn raw_tcp_connections_are_available_to_steps() {
    runtime(2).block_on(|| {
        let server = fibra::net::http::hello_server("127.0.0.1:0").unwrap();
        let port = server.local_addr().port();
        let scenario = Scenario::new("raw").step("raw", move |vu| {
            use std::io::{Read, Write};
            let mut conn = vu.connect("127.0.0.1", port)?;
            conn.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
            let mut reply = String::new();
            conn.read_to_string(&mut reply)?;
            vu.check("raw reply", reply.starts_with("HTTP/1.1 200"));
            Ok(())
        });
        let report = Load::new(scenario).vus(2).iterations(4).run();
        assert_eq!(report.stats.checks["raw reply"].pass, 4);
        assert_eq!(
            report.stats.requests, 0,
            "raw traffic is not counted as requests"
        );
    });
}

/// A step that sends a line to `port` over raw TCP and reads it back.
fn echo_step(
    port: u16,
) -> impl FnMut(&mut fibra_load::Vu) -> Result<(), StepError> + Clone + Send + Sync + 'static {
    move |vu| {
        use std::io::{BufRead, BufReader, Write};
        let conn = vu.connect("127.0.0.1", port)?;
        (&conn).write_all(b"ping\n")?;
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line)?;
        vu.check("echoed", line == "ping\n");
        Ok(())
    }
}

/// A fiber that echoes every connection to the returned listener's port.
fn echo_server() -> u16 {
    let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(fibra::spawn(move || {
        for conn in listener.incoming() {
            let conn = conn.unwrap();
            drop(fibra::spawn(move || std::io::copy(&mut &conn, &mut &conn)));
        }
    }));
    port
}

#[test]
fn a_run_without_requests_shows_its_steps_in_the_summary() {
    runtime(2).block_on(|| {
        let scenario = Scenario::new("raw").step("echo", echo_step(echo_server()));
        let report = Load::new(scenario).vus(2).iterations(4).run();
        assert_eq!(report.stats.requests, 0);
        let summary = report.summary();
        assert!(summary.contains("\nSteps:\n"), "{summary}");
        assert!(summary.contains("  echo "), "{summary}");
    });
}

#[test]
fn thresholds_of_a_run_without_requests_measure_its_steps() {
    runtime(2).block_on(|| {
        let scenario = Scenario::new("raw")
            .step("echo", echo_step(echo_server()))
            .step("refused", |_| Err(StepError::new("always")));
        let mut report = Load::new(scenario).vus(2).iterations(4).run();
        assert_eq!(report.stats.requests, 0);
        let thresholds: Vec<fibra_load::Threshold> = ["errors<1%", "p99<1h", "rps>0"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        assert!(!report.check(&thresholds));
        let results: Vec<(&str, bool, &str)> = report
            .thresholds
            .iter()
            .map(|t| (t.threshold.as_str(), t.passed, t.unit.as_str()))
            .collect();
        assert_eq!(
            results,
            [
                ("errors<1%", false, "%"),
                ("p99<1h", true, "ms"),
                ("rps>0", true, "steps/s")
            ]
        );
        // Four of the eight step runs failed; every step run was timed.
        assert_eq!(report.thresholds[0].actual, Some(50.0));
        assert!(report.thresholds[1].actual > Some(0.0));
    });
}

/// A run stopped before it began measured nothing: no threshold is met, each is reported as
/// not measured.
#[test]
fn thresholds_over_a_run_that_measured_nothing_fail() {
    let stop = fibra::CancelToken::new();
    stop.cancel();
    let scenario = Scenario::new("none").step("get", |vu| {
        vu.get("http://127.0.0.1:1/")?;
        Ok(())
    });
    let mut report = Load::new(scenario).stop_on(stop).run();
    assert_eq!(report.stats.requests, 0);
    let thresholds: Vec<fibra_load::Threshold> = ["p99<1h", "mean<1h", "errors<100%", "rps<1e9"]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert!(!report.check(&thresholds));
    let results: Vec<(bool, Option<f64>)> = report
        .thresholds
        .iter()
        .map(|t| (t.passed, t.actual))
        .collect();
    assert_eq!(results, [(false, None); 4]);
    let summary = report.summary();
    assert!(
        summary.contains("✗ errors<100%      (not measured)"),
        "{summary}"
    );
}

/// A server that answers the TLS handshake one byte every 20 ms: every read is well within
/// the request timeout, the handshake as a whole is not, and the request times out.
#[test]
fn the_request_timeout_bounds_a_trickling_tls_handshake() {
    use std::io::{Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut hello = [0; 4096];
        let _ = conn.read(&mut hello);
        // The header of a 16 KiB handshake record, then its body a byte at a time, for 2 s
        // at most (until the client hangs up).
        conn.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]).unwrap();
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(20));
            if conn.write_all(&[0]).is_err() {
                break;
            }
        }
    });
    let scenario = Scenario::new("tls").step("get", move |vu| {
        vu.get(&url)?;
        Ok(())
    });
    let report = Load::new(scenario)
        .vus(1)
        .iterations(1)
        .timeout(Duration::from_millis(200))
        .workers(1)
        .run();
    let errors: Vec<_> = report.stats.errors.into_iter().collect();
    assert_eq!(errors, [(fibra_load::ErrorKind::Timeout, 1)]);
    server.join().unwrap();
}
