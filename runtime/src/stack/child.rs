//! Test support: runs one test of this binary alone in a child process, for tests that must die
//! from a signal, or that look at the whole address space and so must not share it with other
//! tests mapping memory in parallel.

use std::env;
use std::hint::black_box;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

const ROLE: &str = "FIBRA_STACK_TEST_CHILD";

/// Whether this process is a child started by [`run`]. In the child it also disables core
/// dumps: children exist to crash, and a core file per run is only waste.
pub(super) fn in_child() -> bool {
    let child = env::var_os(ROLE).is_some();
    if child {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `none` is a valid rlimit; lowering our own core limit has no other effect.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
    }
    child
}

/// Runs test `name` of `module` (pass `module_path!()`) alone in a child process.
pub(super) fn run(module: &str, name: &str) -> Output {
    let (_crate, path) = module
        .split_once("::")
        .expect("module_path! names the crate");
    Command::new(env::current_exe().expect("test binary path"))
        .args([&format!("{path}::{name}"), "--exact", "--nocapture"])
        .env(ROLE, "1")
        .output()
        .expect("spawning the test binary")
}

/// Asserts that the child ran its test and the test passed.
pub(super) fn assert_passed(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Asserts that the child was killed by `signal` and returns its stderr.
pub(super) fn assert_killed_by(output: &Output, signal: libc::c_int) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.signal(),
        Some(signal),
        "child status {:?}, stderr:\n{stderr}",
        output.status
    );
    stderr
}

/// Recurses until the stack runs out: a 1 KiB frame that the optimiser can neither drop nor
/// turn into a loop.
#[inline(never)]
pub(super) fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth as u8; 1024]);
    if black_box(depth) == u64::MAX {
        return 0;
    }
    recurse(depth + 1) + u64::from(frame[0])
}
