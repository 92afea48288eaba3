//! How panics are reported: a panic in a fiber names the fiber and its id (the runtime's panic
//! hook, which hands every other panic to the hook before it, and can be turned off), and a
//! detached fiber's panic reaches stderr without a `tracing` subscriber. Each runs in a child
//! process, since a panic hook belongs to the whole process.

use fibra_runtime::{Builder, Runtime};
use fibra_testing::{in_child, run_child};
use std::panic;

/// The child's stdout and stderr, once it has passed.
fn output_of(test: &str, vars: &[(&str, &str)]) -> (String, String) {
    let output = run_child(test, vars);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// The word after `key` in what the child printed (the harness's own words share its lines).
fn printed<'a>(stdout: &'a str, key: &str) -> &'a str {
    let mut words = stdout.split_whitespace();
    words
        .find(|&word| word == key)
        .and_then(|_| words.next())
        .unwrap_or_else(|| panic!("no {key} in:\n{stdout}"))
}

#[test]
fn a_panic_in_a_fiber_is_reported_with_the_fibers_name_and_id() {
    const TEST: &str = "a_panic_in_a_fiber_is_reported_with_the_fibers_name_and_id";
    if in_child(TEST) {
        Runtime::builder().workers(2).build().unwrap().block_on(|| {
            let parser = Builder::new()
                .name("parser")
                .spawn(|| {
                    println!("LINE {}", line!() + 1);
                    panic!("bad token at {}", 3)
                })
                .unwrap();
            println!("PARSER {}", parser.fiber().id());
            assert!(parser.join().unwrap_err().is_panic());
            println!("MAIN {}", fibra_runtime::current().id());
            let line = line!() + 1;
            let caught = panic::catch_unwind(|| panic!("in main"));
            println!("MAIN_LINE {line}");
            assert!(caught.is_err());
        });
        return;
    }
    let (stdout, stderr) = output_of(
        TEST,
        &[("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "0")],
    );
    let at = |line: &str| format!("{}:{line}:", file!());
    let parser = format!(
        "fiber 'parser' (id {}) panicked at {}",
        printed(&stdout, "PARSER"),
        at(printed(&stdout, "LINE"))
    );
    assert!(stderr.contains(&parser), "no {parser:?} in:\n{stderr}");
    assert!(stderr.contains(":\nbad token at 3\n"), "stderr:\n{stderr}");
    let main = format!(
        "fiber 'main' (id {}) panicked at {}",
        printed(&stdout, "MAIN"),
        at(printed(&stdout, "MAIN_LINE"))
    );
    assert!(stderr.contains(&main), "no {main:?} in:\n{stderr}");
    assert!(!stderr.contains("thread '"), "stderr:\n{stderr}");
    // As std's hook: the backtrace hint once.
    assert_eq!(
        stderr.matches("RUST_BACKTRACE=1").count(),
        1,
        "stderr:\n{stderr}"
    );
}

#[test]
fn panics_outside_fibers_go_to_the_hook_set_before_the_runtime() {
    const TEST: &str = "panics_outside_fibers_go_to_the_hook_set_before_the_runtime";
    if in_child(TEST) {
        panic::set_hook(Box::new(|info| {
            let message = info.payload().downcast_ref::<&str>().copied();
            eprintln!("earlier hook: {}", message.unwrap_or("?"));
        }));
        let runtime = Runtime::builder().workers(1).build().unwrap();
        let outside = std::thread::spawn(|| panic!("on a plain thread"));
        assert!(outside.join().is_err());
        runtime.block_on(|| {
            let fiber = fibra_runtime::spawn(|| panic!("in a fiber"));
            assert!(fiber.join().is_err());
        });
        return;
    }
    let (_, stderr) = output_of(TEST, &[]);
    assert!(
        stderr.contains("earlier hook: on a plain thread"),
        "stderr:\n{stderr}"
    );
    assert!(
        !stderr.contains("earlier hook: in a fiber"),
        "stderr:\n{stderr}"
    );
    assert!(stderr.contains(") panicked at "), "stderr:\n{stderr}");
}

#[test]
fn without_the_panic_hook_a_fibers_panic_is_reported_by_the_previous_hook() {
    const TEST: &str = "without_the_panic_hook_a_fibers_panic_is_reported_by_the_previous_hook";
    if in_child(TEST) {
        let runtime = Runtime::builder()
            .workers(1)
            .panic_hook(false)
            .build()
            .unwrap();
        runtime.block_on(|| {
            let fiber = fibra_runtime::spawn(|| panic!("std reports this"));
            assert!(fiber.join().is_err());
        });
        return;
    }
    let (_, stderr) = output_of(TEST, &[]);
    assert!(stderr.contains("thread '"), "stderr:\n{stderr}");
    assert!(stderr.contains("std reports this"), "stderr:\n{stderr}");
    assert!(!stderr.contains("fiber '"), "stderr:\n{stderr}");
}

#[test]
fn a_detached_fibers_panic_reaches_stderr_without_a_tracing_subscriber() {
    const TEST: &str = "a_detached_fibers_panic_reaches_stderr_without_a_tracing_subscriber";
    if in_child(TEST) {
        Runtime::builder().workers(2).build().unwrap().block_on(|| {
            println!("LINE {}", line!() + 1);
            fibra_runtime::detach(|| panic!("nobody joins me"));
        });
        return;
    }
    let (stdout, stderr) = output_of(TEST, &[]);
    let spawned_at = format!("{}:{}:", file!(), printed(&stdout, "LINE"));
    let report = stderr
        .lines()
        .find(|line| line.starts_with("fibra: detached fiber '<unnamed>' (id "))
        .unwrap_or_else(|| panic!("no report in:\n{stderr}"));
    assert!(
        report.contains(&format!("spawned at {spawned_at}")),
        "{report}"
    );
    assert!(
        report.ends_with(": fiber panicked: nobody joins me (the panic is dropped)"),
        "{report}"
    );
}
