//! What the runtime reports on stderr for bad configuration, and a spawn refused because no
//! stack can be had. Each runs in a child process so its environment and process-wide stack
//! budget stay its own.

use fibra_testing::{in_child, on, run_child};

fn stderr_of(test: &str, vars: &[(&str, &str)]) -> String {
    let output = run_child(test, vars);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "child failed:\n{stderr}");
    stderr
}

/// The lines fibra reports on the stderr of child test `test`, run with `vars`.
fn reports_of(test: &str, vars: &[(&str, &str)]) -> Vec<String> {
    stderr_of(test, vars)
        .lines()
        .filter(|l| l.starts_with("fibra:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_bad_worker_count_in_the_environment_is_reported_in_one_line_and_ignored() {
    const TEST: &str = "a_bad_worker_count_in_the_environment_is_reported_in_one_line_and_ignored";
    if in_child(TEST) {
        let runtime = fibra_runtime::Runtime::builder().build().unwrap();
        let parallelism = std::thread::available_parallelism().unwrap().get();
        assert_eq!(runtime.handle().workers(), parallelism.min(1024));
        runtime.block_on(|| ());
        return;
    }
    let stderr = stderr_of(TEST, &[("FIBRA_WORKERS", "lots")]);
    let reports: Vec<&str> = stderr.lines().filter(|l| l.starts_with("fibra:")).collect();
    assert_eq!(reports.len(), 1, "stderr:\n{stderr}");
    assert!(
        reports[0].contains("FIBRA_WORKERS=\"lots\""),
        "{}",
        reports[0]
    );
    assert!(
        reports[0].contains("available parallelism"),
        "{}",
        reports[0]
    );
}

#[test]
fn workers_zero_from_the_builder_or_the_environment_means_the_default_and_is_reported_alike() {
    const TEST: &str =
        "workers_zero_from_the_builder_or_the_environment_means_the_default_and_is_reported_alike";
    let parallelism = std::thread::available_parallelism()
        .unwrap()
        .get()
        .min(1024);
    if in_child(TEST) {
        let builder = fibra_runtime::Runtime::builder();
        let builder = match std::env::var("ZERO_FROM").unwrap().as_str() {
            "builder" => builder.workers(0),
            _ => builder,
        };
        let runtime = builder.build().unwrap();
        assert_eq!(runtime.handle().workers(), parallelism);
        runtime.block_on(|| ());
        return;
    }
    let using = format!("not a valid value; using {parallelism} (available parallelism)");
    assert_eq!(
        reports_of(TEST, &[("ZERO_FROM", "builder")]),
        [format!("fibra: ignoring workers(0): {using}")]
    );
    assert_eq!(
        reports_of(TEST, &[("ZERO_FROM", "env"), ("FIBRA_WORKERS", "0")]),
        [format!("fibra: ignoring FIBRA_WORKERS=\"0\": {using}")]
    );
}

#[test]
fn blocking_threads_zero_from_the_builder_is_reported_like_the_environments() {
    const TEST: &str = "blocking_threads_zero_from_the_builder_is_reported_like_the_environments";
    if in_child(TEST) {
        let builder = fibra_runtime::Runtime::builder();
        let builder = match std::env::var("ZERO_FROM").unwrap().as_str() {
            "builder" => builder.blocking_threads(0),
            _ => builder,
        };
        let runtime = builder.build().unwrap();
        assert_eq!(runtime.block_on(|| fibra_runtime::blocking(|| 6 * 7)), 42);
        return;
    }
    assert_eq!(
        reports_of(TEST, &[("ZERO_FROM", "builder")]),
        ["fibra: ignoring blocking_threads(0): not a valid value; using 64"]
    );
    assert_eq!(
        reports_of(
            TEST,
            &[("ZERO_FROM", "env"), ("FIBRA_BLOCKING_THREADS", "0")]
        ),
        ["fibra: ignoring FIBRA_BLOCKING_THREADS=\"0\": not a valid value; using 64"]
    );
}

#[test]
fn a_bad_stack_size_in_the_environment_falls_back_to_one_mib() {
    const TEST: &str = "a_bad_stack_size_in_the_environment_falls_back_to_one_mib";
    if in_child(TEST) {
        on(1, || fibra_runtime::spawn(|| ()).join().unwrap());
        return;
    }
    let stderr = stderr_of(TEST, &[("FIBRA_STACK_SIZE", "huge")]);
    assert!(
        stderr.contains("fibra: ignoring FIBRA_STACK_SIZE=\"huge\": not a valid value; using 1MiB"),
        "stderr:\n{stderr}"
    );
}

/// With `mprotect` guards (the fallback before Linux 6.13, forced here) every stack costs two
/// memory mappings; past `vm.max_map_count` a spawn must fail in the spawner with advice.
#[test]
fn a_spawn_past_the_map_count_fails_in_the_spawner_with_advice() {
    const TEST: &str = "a_spawn_past_the_map_count_fails_in_the_spawner_with_advice";
    let limit: usize = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(usize::MAX);
    if limit > 1_000_000 {
        println!("skipped: vm.max_map_count={limit} is too high to exhaust in a test");
        return;
    }
    if in_child(TEST) {
        let runtime = fibra_runtime::Runtime::builder()
            .workers(1)
            .stack_size(16 * 1024)
            .build()
            .unwrap();
        runtime.block_on(|| {
            let parked = std::sync::Mutex::new(Vec::new());
            let go = std::sync::atomic::AtomicBool::new(false);
            let refused = fibra_runtime::scope(|s| {
                let refused = loop {
                    let spawned = fibra_runtime::Builder::new().spawn_scoped(s, || {
                        parked.lock().unwrap().push(fibra_runtime::current());
                        while !go.load(std::sync::atomic::Ordering::SeqCst) {
                            fibra_runtime::park();
                        }
                    });
                    match spawned {
                        Ok(_) => fibra_runtime::yield_now(),
                        Err(error) => break error,
                    }
                };
                // The panicking form says the same, in the spawner.
                let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    s.spawn(|| ());
                }))
                .unwrap_err();
                let message = panic.downcast_ref::<String>().unwrap().clone();
                assert!(message.contains("vm.max_map_count"), "{message}");
                go.store(true, std::sync::atomic::Ordering::SeqCst);
                for fiber in parked.lock().unwrap().drain(..) {
                    fiber.unpark();
                }
                refused
            });
            println!("REFUSED: {refused}");
        });
        return;
    }
    let output = run_child(TEST, &[("FIBRA_STACK_GUARD", "mprotect")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
    let refused = stdout
        .lines()
        .find_map(|line| Some(&line[line.find("REFUSED: ")? + "REFUSED: ".len()..]))
        .unwrap_or_else(|| panic!("no refusal reported:\n{stdout}\n{stderr}"));
    assert!(
        refused.contains(&format!("vm.max_map_count={limit}")),
        "{refused}"
    );
    assert!(refused.contains("sysctl -w vm.max_map_count="), "{refused}");
}

#[test]
fn a_fiber_records_its_spawn_location_and_name() {
    on(1, || {
        let before = line!();
        let handle = fibra_runtime::Builder::new()
            .name("located")
            .spawn(|| ())
            .unwrap();
        let after = line!();
        let described = format!("{:?}", handle.fiber());
        assert!(described.contains("\"located\""), "{described}");
        let at = described
            .split_once(&format!("spawned_at: {}:", file!()))
            .map(|(_, rest)| rest)
            .unwrap_or_else(|| panic!("no spawn location in {described}"));
        let line: u32 = at.split(':').next().unwrap().parse().unwrap();
        assert!(before < line && line < after, "{described}");
        handle.join().unwrap();
    });
}
