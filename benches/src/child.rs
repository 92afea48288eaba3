//! Child-process mode: a measurement that must not share a process with the others (resident
//! memory, a second build of this binary) runs in a fresh copy of this binary (or of another
//! build of it), named by a job string in an environment variable.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that carries the job to a child.
const JOB_VAR: &str = "FIBRA_COMPARE_CHILD";
/// How long a child may run before it is killed and the bench fails.
const DEADLINE: Duration = Duration::from_secs(300);
/// How often the parent checks whether the child has exited.
const POLL: Duration = Duration::from_millis(20);

/// The job this process was started for, if it is a child.
pub fn requested() -> Option<String> {
    std::env::var(JOB_VAR).ok()
}

/// Runs `job` in a child copy of this binary and returns what it printed on stdout, trimmed.
/// The child's stderr goes to ours. A child that fails, or runs past `DEADLINE` (it is then
/// killed), is a panic here.
pub fn run(job: &str) -> String {
    let exe = std::env::current_exe().expect("path of the running binary");
    run_binary(&exe, job)
}

/// [`run`], in the build of this binary at `exe`.
pub fn run_binary(exe: &Path, job: &str) -> String {
    let mut child = Command::new(exe)
        .env(JOB_VAR, job)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the child process");
    let started = Instant::now();
    // The child prints one short line, far below a pipe's capacity, so polling cannot deadlock.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("child `{job}` ran past {DEADLINE:?} and was killed");
        }
        std::thread::sleep(POLL);
    };
    assert!(status.success(), "child `{job}` failed: {status}");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .expect("child output is UTF-8");
    out.trim().to_string()
}
