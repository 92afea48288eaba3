//! Child-process mode: a measurement that must not share a process with the others (resident
//! memory) runs in a fresh copy of this binary, named by a job string in an environment variable.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
    run_binary(&this_binary(), job)
}

/// [`run`], in the build of this binary at `exe`.
pub fn run_binary(exe: &Path, job: &str) -> String {
    let mut child = command(exe, job)
        .stdin(Stdio::null())
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

/// Starts `job` in a child copy of this binary with piped stdin and stdout, for a job that
/// talks with its parent while it runs; its stderr goes to ours.
pub fn spawn(job: &str) -> Child {
    command(&this_binary(), job)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start the child process")
}

fn this_binary() -> PathBuf {
    std::env::current_exe().expect("path of the running binary")
}

/// The command that runs `job` in the build of this binary at `exe`, its stdout piped to us.
fn command(exe: &Path, job: &str) -> Command {
    let mut command = Command::new(exe);
    command
        .env(JOB_VAR, job)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}
