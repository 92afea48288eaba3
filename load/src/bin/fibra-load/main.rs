//! `fibra-load`: the command line of the fibra load-test harness.

mod args;
mod interrupt;
mod limits;
mod live;

use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use fibra::net::http::HelloServer;
use fibra::CancelToken;
use fibra_load::http::Prepared;
use fibra_load::{Load, Report, Request, Scenario, Stages, Url, Verify};

use args::{Cli, Command, DemoArgs, LoadArgs, MergeArgs, OutputArgs, RunArgs};
use interrupt::Interrupts;
use live::Live;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Demo(demo)) => run_demo(demo),
        Some(Command::Merge(merge)) => run_merge(merge),
        None => run_url(cli.run),
    }
}

/// Bad input found after parsing: clap's error format and exit status 2.
fn bad_input(message: impl std::fmt::Display) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, message)
        .exit()
}

fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path)
        .unwrap_or_else(|e| bad_input(format!("cannot read {}: {e}", path.display())))
}

/// The requests one run sends, and how to pick the next.
struct Target {
    label: String,
    requests: Vec<Prepared>,
    random: bool,
    tls: Option<Arc<rustls::ClientConfig>>,
}

fn run_url(args: RunArgs) -> ExitCode {
    let keep_alive = !args.load.no_keepalive;
    let body = match (&args.body, &args.body_file) {
        (Some(body), _) => body.as_bytes().to_vec(),
        (None, Some(path)) => read_file(path),
        (None, None) => Vec::new(),
    };
    let tls = match (&args.cacert, args.insecure) {
        (_, true) => Some(Verify::Insecure),
        (Some(_), false) => Some(Verify::Roots),
        (None, false) => None,
    }
    .map(|verify| {
        let pem = args.cacert.as_deref().map(read_file);
        fibra_load::tls_config(pem.as_deref(), verify).unwrap_or_else(|e| bad_input(e))
    });
    let target = if let Some(path) = &args.urls_file {
        let text = String::from_utf8(read_file(path))
            .unwrap_or_else(|_| bad_input(format!("{} is not UTF-8", path.display())));
        let requests = parse_urls_file(&text, &args, keep_alive)
            .unwrap_or_else(|e| bad_input(format!("{}: {e}", path.display())));
        Target {
            label: path.display().to_string(),
            requests,
            random: args.urls_random,
            tls,
        }
    } else if let Some(url) = &args.url {
        Target {
            label: url.to_string(),
            requests: vec![request(&args, url.clone(), body).prepare(keep_alive)],
            random: false,
            tls,
        }
    } else {
        Cli::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "a URL, --urls-file, or a subcommand (demo, merge) is required",
            )
            .exit()
    };
    execute(
        &args.load,
        &args.output,
        1,
        Box::new(move || Ok((target, None))),
    )
}

fn request(args: &RunArgs, url: Url, body: Vec<u8>) -> Request {
    let mut request = Request::new(&args.method, url).body(body);
    for (name, value) in &args.headers {
        request = request.header(name, value);
    }
    request
}

/// Lines `METHOD URL [BODY-FILE]`; blank lines and `#` comments are skipped.
fn parse_urls_file(text: &str, args: &RunArgs, keep_alive: bool) -> Result<Vec<Prepared>, String> {
    let mut requests = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (method, url, body) = match fields[..] {
            [method, url] => (method, url, Vec::new()),
            [method, url, body] => (method, url, read_file(Path::new(body))),
            _ => {
                return Err(format!(
                    "line {}: expected METHOD URL [BODY-FILE]",
                    number + 1
                ))
            }
        };
        if !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(format!("line {}: invalid method `{method}`", number + 1));
        }
        let url: Url = url
            .parse()
            .map_err(|e| format!("line {}: {e}", number + 1))?;
        let mut request = Request::new(method, url).body(body);
        for (name, value) in &args.headers {
            request = request.header(name, value);
        }
        requests.push(request.prepare(keep_alive));
    }
    if requests.is_empty() {
        return Err("no requests in the file".into());
    }
    Ok(requests)
}

fn run_demo(demo: DemoArgs) -> ExitCode {
    let mut load = demo.load;
    if load.duration.is_none() && load.requests.is_none() && load.stages.is_none() {
        load.duration = Some(Duration::from_secs(5));
    }
    let keep_alive = !load.no_keepalive;
    execute(
        &load,
        &demo.output,
        2,
        Box::new(move || {
            let server = fibra::net::http::hello_server("127.0.0.1:0")?;
            let url: Url = format!("http://{}/", server.local_addr())
                .parse()
                .expect("a socket address makes a URL");
            println!("fibra-load demo: serving {url} from an embedded fibra HTTP server");
            let target = Target {
                label: url.to_string(),
                requests: vec![Request::get(url).prepare(keep_alive)],
                random: false,
                tls: None,
            };
            Ok((target, Some(server)))
        }),
    )
}

fn run_merge(merge: MergeArgs) -> ExitCode {
    let reports: Vec<Report> = merge
        .reports
        .iter()
        .map(|path| {
            let text = String::from_utf8(read_file(path))
                .unwrap_or_else(|_| bad_input(format!("{} is not UTF-8", path.display())));
            Report::from_json(&text)
                .unwrap_or_else(|e| bad_input(format!("{}: {e}", path.display())))
        })
        .collect();
    let mut report = Report::merge(&reports).unwrap_or_else(|e| bad_input(e));
    let missing = report.missing_shards();
    if !missing.is_empty() {
        let missing: Vec<String> = missing.iter().map(|s| s.to_string()).collect();
        eprintln!(
            "fibra-load: warning: the merged report lacks shard {}",
            missing.join(", ")
        );
    }
    let passed = report.check(&merge.thresholds);
    print!("{}", report.summary());
    let written = write_outputs(&report, &merge.output);
    if passed {
        written
    } else {
        ExitCode::from(99)
    }
}

fn write_outputs(report: &Report, output: &OutputArgs) -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    let mut write = |path: &Path, text: String| {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("fibra-load: cannot write {}: {e}", path.display());
            status = ExitCode::FAILURE;
        }
    };
    if let Some(path) = &output.json {
        write(path, report.to_json());
    }
    if let Some(path) = &output.html {
        write(path, report.html());
    }
    status
}

/// The scenario of a command-line run: one step sending the target's requests in turn.
fn scenario(target: Target) -> Scenario {
    let requests = Arc::new(target.requests);
    let next = Arc::new(AtomicU64::new(0));
    let mut seed = 0u64;
    Scenario::new(target.label).step("request", move |vu| {
        let i = if target.random {
            if seed == 0 {
                seed = 0x9E37_79B9_7F4A_7C15 ^ (vu.index() as u64 + 1);
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        } else {
            next.fetch_add(1, Ordering::Relaxed)
        };
        let request = &requests[(i % requests.len() as u64) as usize];
        vu.send_prepared(request, false)?;
        Ok(())
    })
}

/// Makes the target inside the runtime (the demo starts its server there too).
type Setup = Box<dyn FnOnce() -> io::Result<(Target, Option<HelloServer>)> + Send>;

/// What this process runs: the arguments, divided for its shard.
struct Plan {
    vus: u64,
    requests: Option<u64>,
    rate: Option<f64>,
    stages: Option<Stages>,
    duration: Option<Duration>,
    timeout: Duration,
    keep_alive: bool,
}

impl Plan {
    /// `files_per_vu`: 2 when the server runs in this process too (the demo).
    fn new(args: &LoadArgs, files_per_vu: u64) -> Plan {
        let mut plan = Plan {
            vus: args.vus.unwrap_or(50),
            requests: args.requests,
            rate: args.rate,
            stages: args.stages.clone(),
            duration: args.duration,
            timeout: args.timeout,
            keep_alive: !args.no_keepalive,
        };
        if let Some(shard) = args.shard {
            plan.vus = shard.split(plan.vus);
            plan.requests = plan.requests.map(|n| shard.split(n));
            // With stages the stages are the rate, and --rate only picks the open model.
            if plan.stages.is_none() {
                plan.rate = plan.rate.map(|r| shard.split_f64(r));
            }
            plan.stages = plan.stages.map(|s| s.for_shard(shard));
        }
        // The closed model follows its stages with one VU per unit of their target.
        if let (None, Some(stages)) = (plan.rate, &plan.stages) {
            let wanted = stages.vus();
            match args.vus {
                None => plan.vus = wanted.max(1),
                Some(_) if plan.vus < wanted => {
                    let shard = args
                        .shard
                        .map_or(String::new(), |s| format!(" on shard {s}"));
                    bad_input(format!(
                        "the stages reach {wanted} VUs{shard} but -c gives {}: \
                         raise -c or leave it out",
                        plan.vus
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some(shard) = args.shard {
            let idle = plan.stages.as_ref().is_some_and(|s| s.peak() == 0.0);
            if plan.vus == 0 || plan.requests == Some(0) || plan.rate == Some(0.0) || idle {
                bad_input(format!(
                    "shard {shard} gets nothing to do: use at least {} VUs, requests, \
                     starts per second and stage targets",
                    shard.count
                ));
            }
        }
        let fit = limits::vus_that_fit(files_per_vu);
        if plan.vus > fit {
            bad_input(format!(
                "{} VUs need {} open files but the open-file limit allows {fit} VUs: \
                 use -c {fit} or raise the hard limit (ulimit -Hn)",
                plan.vus,
                plan.vus * files_per_vu
            ));
        }
        plan
    }

    /// How long the run is planned to take (none when only -n bounds it).
    fn length(&self) -> Option<Duration> {
        match (&self.stages, self.duration, self.requests) {
            (Some(stages), _, _) => Some(stages.total()),
            (None, Some(d), _) => Some(d),
            (None, None, Some(_)) => None,
            (None, None, None) => Some(Duration::from_secs(10)),
        }
    }

    fn load(self, target: Target) -> Load {
        let label = target.label.clone();
        let tls = target.tls.clone();
        let mut load = Load::new(scenario(target))
            .target(label)
            .vus(self.vus)
            .timeout(self.timeout)
            .keep_alive(self.keep_alive);
        if let Some(config) = tls {
            load = load.tls(config);
        }
        if let Some(d) = self.duration {
            load = load.duration(d);
        }
        if let Some(n) = self.requests {
            load = load.iterations(n);
        }
        if let Some(r) = self.rate {
            load = load.rate(r);
        }
        if let Some(s) = self.stages {
            load = load.stages(s);
        }
        load
    }
}

/// Runs `load` with the live display and Ctrl-C: the first stops the run (the report is still
/// made), a second one exits at once. Once the run has ended, Ctrl-C does what it did before.
fn interactive(load: Load, mut live: Live) -> Report {
    let _interrupts = Interrupts::install();
    let stop = CancelToken::new();
    let token = stop.clone();
    load.stop_on(stop)
        .on_progress(move |progress| {
            let interrupts = Interrupts::count();
            if interrupts > 1 {
                std::process::exit(130);
            }
            if interrupts == 1 && !token.is_cancelled() {
                eprintln!(
                    "fibra-load: interrupted; finishing the requests in flight \
                     (Ctrl-C again to quit)"
                );
                token.cancel();
            }
            live.update(progress);
        })
        .run()
}

/// Runs the load the arguments describe, prints the summary, writes the reports and returns
/// the exit status: 99 for a failed threshold, 1 when nothing succeeded, else 0.
fn execute(args: &LoadArgs, output: &OutputArgs, files_per_vu: u64, setup: Setup) -> ExitCode {
    let plan = Plan::new(args, files_per_vu);
    let (quiet, length, requests) = (args.quiet, plan.length(), plan.requests);
    let mut builder = fibra::Runtime::builder();
    if let Some(workers) = args.workers {
        builder = builder.workers(workers as usize);
    }
    let runtime = match builder.build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fibra-load: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(move || -> io::Result<Report> {
        let (target, server) = setup()?;
        // The display belongs to the runtime's fibers.
        let live = Live::new(quiet, length, requests);
        let report = interactive(plan.load(target), live);
        drop(server);
        Ok(report)
    });
    let mut report = match result {
        Ok(report) => report,
        Err(e) => {
            eprintln!("fibra-load: {e}");
            return ExitCode::FAILURE;
        }
    };
    report.shards = args.shard.into_iter().collect();
    let passed = report.check(&args.thresholds);
    print!("{}", report.summary());
    let written = write_outputs(&report, output);
    if !passed {
        ExitCode::from(99)
    } else if !report.any_succeeded() {
        ExitCode::FAILURE
    } else {
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Ctrl-C during a run stops it; once the run has ended, Ctrl-C ends the process again.
    #[test]
    fn ctrl_c_stops_a_run_and_ends_the_process_after_it() {
        const TEST: &str = "tests::ctrl_c_stops_a_run_and_ends_the_process_after_it";
        if !fibra_testing::in_child(TEST) {
            let output = fibra_testing::run_child(TEST, &[]);
            let stderr = fibra_testing::assert_killed_by(&output, libc::SIGINT);
            assert!(stderr.contains("fibra-load: interrupted"), "{stderr}");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(stdout.contains("the run was interrupted"), "{stdout}");
            return;
        }
        let scenario = Scenario::new("ctrl-c").step("ctrl-c", |vu| {
            if vu.iteration() == 0 {
                // SAFETY: raise only sends a signal to this thread.
                unsafe { libc::raise(libc::SIGINT) };
            }
            vu.sleep(Duration::from_millis(1));
            Ok(())
        });
        let load = Load::new(scenario).duration(Duration::from_secs(600));
        let report = fibra::run(move || interactive(load, Live::new(true, None, None)));
        assert!(report.interrupted);
        println!("the run was interrupted");
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGINT) };
        panic!("a SIGINT after the run did not end the process");
    }

    /// SIGINT's disposition now.
    fn sigint_disposition() -> libc::sighandler_t {
        // SAFETY: all-zero is a valid sigaction, for the disposition to be written into.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null `act` only asks; `now` is valid for writes.
        let rc = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut now) };
        assert_eq!(rc, 0);
        now.sa_sigaction
    }

    /// A process that ignores SIGINT (started in the background without job control) goes on
    /// ignoring it during a run and after it: the run installed its counting handler over the
    /// ignore.
    #[test]
    fn an_ignored_ctrl_c_stays_ignored_during_and_after_a_run() {
        const TEST: &str = "tests::an_ignored_ctrl_c_stays_ignored_during_and_after_a_run";
        if !fibra_testing::in_child(TEST) {
            let output = fibra_testing::run_child(TEST, &[]);
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "{output:?}");
            assert!(stdout.contains("still ignored"), "{stdout}");
            return;
        }
        // SAFETY: SIG_IGN is a valid disposition; nothing else in this child handles SIGINT.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let scenario = Scenario::new("ctrl-c").step("ctrl-c", |_| {
            assert_eq!(sigint_disposition(), libc::SIG_IGN, "during the run");
            Ok(())
        });
        let load = Load::new(scenario).iterations(20);
        // A step's failed assertion ends the run with its panic.
        fibra::run(move || drop(interactive(load, Live::new(true, None, None))));
        // SAFETY: as above.
        unsafe { libc::raise(libc::SIGINT) };
        println!("still ignored");
    }
}
