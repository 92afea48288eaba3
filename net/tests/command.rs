//! Child processes: piped stdio through `cat`, exit codes, kill, timeouts, many concurrent
//! children without a thread each, reaping of dropped children, spawn errors.

use fibra_net::os::{Command, Stdio};
use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

#[test]
fn cat_echoes_a_megabyte_written_and_read_by_two_fibers() {
    const BYTES: usize = 1 << 20;
    for workers in [1, 2] {
        fibra_testing::on(workers, || {
            let mut child = Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            // More than a pipe holds: both sides must park on full and empty pipes.
            let writer = fibra_runtime::spawn(move || {
                let data: Vec<u8> = (0..BYTES).map(|i| (i % 251) as u8).collect();
                stdin.write_all(&data).unwrap();
            });
            let mut back = Vec::new();
            stdout.read_to_end(&mut back).unwrap();
            writer.join().unwrap();
            assert_eq!(back.len(), BYTES);
            assert!(back.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            assert_eq!(child.wait().unwrap().code(), Some(0));
        });
    }
}

#[test]
fn exit_codes_status_and_output() {
    fibra_runtime::run(|| {
        let status = Command::new("sh").args(["-c", "exit 7"]).status().unwrap();
        assert_eq!(status.code(), Some(7));
        let output = Command::new("sh")
            .arg("-c")
            .arg("printf \"$GREETING\"; printf err >&2; pwd")
            .env("GREETING", "hi ")
            .current_dir("/")
            .output()
            .unwrap();
        assert!(output.status.success());
        assert_eq!(output.stdout, b"hi /\n");
        assert_eq!(output.stderr, b"err");
        let child = Command::new("sh")
            .args(["-c", "printf out; printf err >&2; exit 2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            (output.stdout, output.stderr),
            (b"out".to_vec(), b"err".to_vec())
        );
    });
}

#[test]
fn kill_wait_timeout_and_try_wait() {
    for workers in [1, 2] {
        fibra_testing::on(workers, || {
            let mut child = Command::new("sleep").arg("60").spawn().unwrap();
            assert!(child.id() > 0);
            assert!(child.try_wait().unwrap().is_none());
            assert!(child
                .wait_timeout(Duration::from_millis(20))
                .unwrap()
                .is_none());
            child.kill().unwrap();
            let status = child
                .wait_timeout(Duration::from_secs(30))
                .unwrap()
                .unwrap();
            assert_eq!(status.signal(), Some(9));
            // Waiting again and killing an exited child are fine, as in std.
            assert_eq!(child.wait().unwrap(), status);
            assert_eq!(child.try_wait().unwrap(), Some(status));
            child.kill().unwrap();
        });
    }
}

#[test]
fn a_missing_program_is_not_found() {
    fibra_runtime::run(|| {
        let error = Command::new("/nonexistent/fibra-test-program")
            .spawn()
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        let error = Command::new("fibra-no-such-program-in-path")
            .status()
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    });
}

fn threads_of_this_process() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn a_thousand_children_are_waited_concurrently_without_a_thread_each() {
    const CHILDREN: usize = 1000;
    let (statuses, threads) = fibra_testing::on(2, || {
        let children: Vec<_> = (0..CHILDREN)
            .map(|i| {
                Command::new("sh")
                    .args(["-c", &format!("sleep 1; exit {}", i % 100)])
                    .spawn()
                    .unwrap()
            })
            .collect();
        fibra_runtime::scope(|s| {
            let waits: Vec<_> = children
                .into_iter()
                .map(|mut child| s.spawn(move || child.wait().unwrap().code()))
                .collect();
            fibra_runtime::sleep(Duration::from_millis(50));
            let threads = threads_of_this_process();
            let statuses: Vec<_> = waits.into_iter().map(|w| w.join().unwrap()).collect();
            (statuses, threads)
        })
    });
    let expected: Vec<_> = (0..CHILDREN).map(|i| Some((i % 100) as i32)).collect();
    assert_eq!(statuses, expected);
    assert!(
        threads < 64,
        "{threads} threads for {CHILDREN} waiting children"
    );
}

#[test]
fn a_dropped_child_is_reaped_in_the_background() {
    fibra_runtime::run(|| {
        let child = Command::new("true").spawn().unwrap();
        let proc_entry = format!("/proc/{}", child.id());
        drop(child);
        // Until it is reaped the exited child stays a zombie with a /proc entry; bounded at a
        // few seconds.
        let mut reaped = false;
        for _ in 0..200 {
            Command::new("true").status().unwrap();
            if !std::path::Path::new(&proc_entry).exists() {
                reaped = true;
                break;
            }
            fibra_runtime::sleep(Duration::from_millis(10));
        }
        assert!(reaped, "{proc_entry} is still there");
    });
}

/// Runs `f` on a plain thread after the runtime that spawned `child` has ended, so no driver
/// can poll tokio's futures for it.
fn after_the_runtime<T: Send + 'static>(
    spawn: impl FnOnce() -> fibra_net::os::Child + Send + 'static,
    f: impl FnOnce(fibra_net::os::Child) -> T + Send + 'static,
) -> T {
    let child = fibra_runtime::run(spawn);
    std::thread::spawn(move || f(child)).join().unwrap()
}

#[test]
fn a_child_is_waited_for_after_its_runtime_has_ended() {
    let status = after_the_runtime(
        || {
            Command::new("sh")
                .args(["-c", "sleep 0.2; exit 5"])
                .spawn()
                .unwrap()
        },
        |mut child| child.wait(),
    );
    assert_eq!(status.unwrap().code(), Some(5));
}

#[test]
fn try_wait_kill_and_wait_timeout_work_after_the_runtime_has_ended() {
    let (running, timed_out, status, again) = after_the_runtime(
        || Command::new("sleep").arg("60").spawn().unwrap(),
        |mut child| {
            let running = child.try_wait().unwrap().is_none();
            let timed_out = child
                .wait_timeout(Duration::from_millis(20))
                .unwrap()
                .is_none();
            child.kill().unwrap();
            let status = child.wait_timeout(Duration::from_secs(30)).unwrap();
            (running, timed_out, status, child.try_wait().unwrap())
        },
    );
    assert!(running && timed_out);
    assert_eq!(status.and_then(|status| status.signal()), Some(9));
    assert_eq!(again, status);
}

#[test]
fn wait_with_output_works_after_the_runtime_has_ended() {
    let output = after_the_runtime(
        || {
            Command::new("sh")
                .args(["-c", "sleep 0.2; printf out; printf err >&2; exit 1"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        },
        |child| child.wait_with_output().unwrap(),
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        (output.stdout, output.stderr),
        (b"out".to_vec(), b"err".to_vec())
    );
}

#[test]
fn a_child_of_an_ended_runtime_is_waited_for_in_another() {
    let mut child = fibra_runtime::run(|| {
        Command::new("sh")
            .args(["-c", "sleep 0.2; exit 6"])
            .spawn()
            .unwrap()
    });
    let status = fibra_runtime::run(move || child.wait().unwrap());
    assert_eq!(status.code(), Some(6));
}

/// Set in the copy of this test binary that `output_reads_stdin_from_dev_null_not_ours` runs.
const STDIN_CHILD: &str = "FIBRA_TEST_OUTPUT_STDIN_CHILD";

#[test]
fn output_reads_stdin_from_dev_null_not_ours() {
    if std::env::var_os(STDIN_CHILD).is_some() {
        let output = fibra_runtime::run(|| {
            Command::new("readlink")
                .arg("/proc/self/fd/0")
                .output()
                .unwrap()
        });
        assert_eq!(String::from_utf8_lossy(&output.stdout), "/dev/null\n");
        return;
    }
    // Under cargo test our stdin may be /dev/null already: rerun this test in a copy of the
    // test binary whose stdin is a pipe, which an inheriting child would see.
    let mut copy = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "output_reads_stdin_from_dev_null_not_ours",
            "--test-threads=1",
        ])
        .env(STDIN_CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = copy.stdin.take();
    let output = copy.wait_with_output().unwrap();
    drop(stdin);
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("1 passed"), "{report}");
}

#[test]
fn output_honours_an_explicit_stdout() {
    let ours = fibra_runtime::run(|| {
        Command::new("echo")
            .arg("x")
            .stdout(Stdio::null())
            .output()
            .unwrap()
    });
    assert!(ours.status.success());
    assert_eq!(ours.stdout, b"");
}

#[test]
fn output_leaves_the_command_as_it_was() {
    let (piped_after, stdin_after) = fibra_runtime::run(|| {
        let mut command = Command::new("true");
        command.output().unwrap();
        let mut child = command.spawn().unwrap();
        let piped = child.stdout.is_some() || child.stderr.is_some();
        child.wait().unwrap();
        let mut command = Command::new("readlink");
        command.arg("/proc/self/fd/0").stdin(Stdio::piped());
        command.output().unwrap();
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let stdin_piped = child.stdin.is_some();
        child.wait().unwrap();
        (piped, stdin_piped)
    });
    assert!(!piped_after);
    assert!(stdin_after);
}
