//! One test of a test binary run alone in a child copy of that binary, for tests that must die
//! from a signal, exit the process, or look at the whole address space; the parent checks the
//! child from outside.

use std::env;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const ROLE: &str = "FIBRA_TEST_CHILD";

/// Whether this process is the child started by [`run_child`] for `test`, which then does the
/// part checked from outside. A child writes no core file: children exist to crash.
///
/// ```
/// assert!(!fibra_testing::in_child("some::test"));
/// ```
pub fn in_child(test: &str) -> bool {
    env::var(ROLE).is_ok_and(|role| role == test) && is_child()
}

/// Whether this process is a child started by [`run_child`], for whichever test (it runs only
/// that one). Also turns core files off, as [`in_child`] does.
///
/// ```
/// assert!(!fibra_testing::is_child());
/// ```
pub fn is_child() -> bool {
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

/// Runs the test at path `test` (as the test harness names it, e.g. `stack::tests::overflow`)
/// alone in a child copy of this test binary, with `vars` added to its environment.
pub fn run_child(test: &str, vars: &[(&str, &str)]) -> Output {
    child_command(test, vars)
        .output()
        .expect("spawning the test binary")
}

/// As [`run_child`], but returns the running child with its stdin, stdout and stderr piped,
/// for a test that talks to it (waits for a line it prints, sends it a signal, closes its
/// stdin to let it finish).
pub fn spawn_child(test: &str, vars: &[(&str, &str)]) -> Child {
    child_command(test, vars)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning the test binary")
}

/// As [`run_child`], for a child whose regression is a hang: panics, killing the child, if it
/// has not ended within `limit` (a hang guard far above what the child needs, never a timing
/// assertion). Use it where the child cannot bound itself: a thread of its own waiting with a
/// timeout would keep fibra's global deadlock check silent, for example.
///
/// ```no_run
/// # use std::time::Duration;
/// let output = fibra_testing::run_child_within("deadlock::reported", &[], Duration::from_secs(60));
/// fibra_testing::assert_passed(&output);
/// ```
pub fn run_child_within(test: &str, vars: &[(&str, &str)], limit: Duration) -> Output {
    let child = spawn_child(test, vars);
    let pid = child.id();
    let (done, output) = mpsc::channel();
    thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(limit) {
        Ok(output) => output.expect("waiting for the child"),
        Err(_) => {
            // SAFETY: `kill` has no memory preconditions; `pid` is our child's, not yet reaped
            // (its waiter has not returned), so it names no other process.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("the child hung: it did not end within {limit:?}");
        }
    }
}

fn child_command(test: &str, vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env::current_exe().expect("test binary path"));
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, test)
        .envs(vars.iter().copied());
    command
}

/// Asserts that the child ran its one test and it passed.
pub fn assert_passed(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Asserts that the child was killed by `signal` and returns its stderr.
pub fn assert_killed_by(output: &Output, signal: libc::c_int) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.signal(),
        Some(signal),
        "child status {:?}, stderr:\n{stderr}",
        output.status
    );
    stderr
}

/// Asserts that the child ended as fibra's global deadlock check under `Deadlock::Panic` ends
/// a program (the main fiber unwound, exit status 101) and reported "all fibers are asleep"
/// exactly once; returns its stderr, which holds the report's dump.
pub fn assert_all_asleep_reported(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    assert_eq!(
        stderr
            .matches("fibra: all fibers are asleep - deadlock!")
            .count(),
        1,
        "{stderr}"
    );
    stderr
}
