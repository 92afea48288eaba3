//! The program of processes: exit statuses, halt, runtime errors, unwinding the rest at the
//! end, and OTP's error report on stderr — the OS-level parts checked from a child process.

mod common;

use common::program;
use fibra_process::{self as process, Builder, Inbox, Reason, Signal};
use fibra_testing::{in_child, Counted, WORKER_COUNTS};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn idle(inbox: Inbox<()>) {
    loop {
        inbox.recv();
    }
}

#[test]
fn the_status_is_0_for_a_normal_end_and_1_for_an_abnormal_one() {
    assert_eq!(program(1, |_: Inbox<()>| {}), 0);
    assert_eq!(program(1, |_: Inbox<()>| panic!("main failed")), 1);
    assert_eq!(
        program(1, |_: Inbox<()>| process::exit_self(Reason::Shutdown)),
        1
    );
    assert_eq!(
        program(1, |_: Inbox<()>| process::exit_self(Reason::Normal)),
        0
    );
}

#[test]
fn an_exit_signal_that_ends_the_main_process_ends_the_program() {
    let status = program(2, |inbox: Inbox<()>| {
        let main = inbox.pid().id();
        process::spawn(move |_: Inbox<()>| process::exit(&main, Reason::custom("stop")));
        idle(inbox);
    });
    assert_eq!(status, 1);
}

#[test]
fn halt_from_any_process_ends_the_program_with_its_status() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            process::spawn(|_: Inbox<()>| process::halt(3));
            idle(inbox);
        });
        assert_eq!(status, 3, "under {workers} workers");
    }
}

#[test]
fn processes_still_running_at_the_end_are_unwound_before_run_returns() {
    const RUNNING: usize = 1000;
    for workers in WORKER_COUNTS {
        let drops = Arc::new(AtomicUsize::new(0));
        let counter = drops.clone();
        let status = program(workers, move |_: Inbox<()>| {
            for _ in 0..RUNNING {
                let counted = Counted(counter.clone());
                process::spawn(move |inbox: Inbox<()>| {
                    let _counted = counted;
                    idle(inbox);
                });
            }
        });
        assert_eq!(status, 0);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            RUNNING,
            "under {workers} workers"
        );
    }
}

/// A process whose fiber cannot start (a stack too large) is an error value, ended, and
/// counted once: it was counted as finished twice, and the program then ended before its
/// processes had (or never).
#[test]
fn a_process_that_cannot_start_is_an_error_and_the_program_still_waits_for_the_rest() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counter = drops.clone();
    let status = program(2, move |_: Inbox<()>| {
        let counted = Counted(counter.clone());
        let spawned = Builder::new()
            .stack_size(usize::MAX)
            .spawn(|inbox: Inbox<()>| idle(inbox));
        let error = spawned.expect_err("a stack of usize::MAX bytes");
        assert!(matches!(error, process::SpawnError::Start(_)), "{error}");
        // Still running when the main process ends: unwound before `run` returns.
        process::spawn(move |inbox: Inbox<()>| {
            let _counted = counted;
            idle(inbox);
        });
    });
    assert_eq!(status, 0);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panic_in_a_process_does_not_take_down_its_worker() {
    let status = program(1, |inbox: Inbox<()>| {
        for _ in 0..10 {
            let (_, mref) = process::spawn_monitor(|_: Inbox<()>| panic!("one of many"));
            match inbox.recv() {
                fibra_process::Signal::Down {
                    mref: m, reason, ..
                } => {
                    assert_eq!((m, reason), (mref, Reason::Panic("one of many".into())));
                }
                _ => unreachable!(),
            }
        }
    });
    assert_eq!(status, 0);
}

/// Runs `test`'s child part and returns its exit status and stderr.
fn child_outcome(test: &str) -> (Option<i32>, String) {
    let output = fibra_testing::run_child(test, &[]);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_process_that_ends_abnormally_writes_otps_error_report() {
    const TEST: &str = "a_process_that_ends_abnormally_writes_otps_error_report";
    if in_child(TEST) {
        let status = process::run(|inbox: Inbox<String>| {
            let me = inbox.pid();
            let (pid, _) = process::spawn_monitor(|_: Inbox<()>| {
                process::exit_self(Reason::custom(
                    "{boom,[{crash_reports,'-main/1-fun-6-',0,[]}]}",
                ))
            });
            inbox.recv();
            // Normal and shutdown ends write nothing; nor does a process killed by a signal.
            process::spawn(|_: Inbox<()>| {});
            process::spawn(|_: Inbox<()>| process::exit_self(Reason::Shutdown));
            let victim = process::spawn(idle);
            process::exit(&victim, Reason::Kill);
            me.send(format!("{pid}"));
            eprintln!("pid {}", inbox.recv().into_msg().unwrap());
        });
        std::process::exit(status);
    }
    let (status, stderr) = child_outcome(TEST);
    assert_eq!(status, Some(0), "{stderr}");
    let pid = stderr
        .lines()
        .find_map(|line| line.strip_prefix("pid "))
        .expect("the child names the process");
    let reports: Vec<&str> = stderr.matches("=ERROR REPORT==== ").collect();
    assert_eq!(reports.len(), 1, "{stderr}");
    let report = &stderr[stderr.find("=ERROR REPORT==== ").unwrap()..];
    let mut lines = report.lines();
    let header = lines.next().unwrap();
    // =ERROR REPORT==== 8-Oct-2026::03:42:15.983000 ===
    let stamp = header
        .strip_prefix("=ERROR REPORT==== ")
        .and_then(|rest| rest.strip_suffix(" ==="))
        .expect(header);
    let (date, time) = stamp.split_once("::").expect(stamp);
    let date: Vec<&str> = date.split('-').collect();
    assert_eq!(date.len(), 3, "{stamp}");
    assert!(
        date[0].parse::<u32>().is_ok_and(|d| (1..=31).contains(&d)),
        "{stamp}"
    );
    assert!(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            .contains(&date[1]),
        "{stamp}"
    );
    assert_eq!(date[2].len(), 4, "{stamp}");
    let shape: String = time
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "99:99:99.999999", "{stamp}");
    assert_eq!(
        lines.next(),
        Some(format!("Error in process {pid} with exit value:").as_str())
    );
    assert_eq!(
        lines.next(),
        Some("{boom,[{crash_reports,'-main/1-fun-6-',0,[]}]}")
    );
}

#[test]
fn a_mailbox_over_its_limit_is_a_runtime_error_exiting_70() {
    const TEST: &str = "a_mailbox_over_its_limit_is_a_runtime_error_exiting_70";
    if in_child(TEST) {
        let status = process::run(|_: Inbox<()>| {
            let full = Builder::new()
                .mailbox_limit(3)
                .spawn(|inbox: Inbox<u8>| loop {
                    // Never receives: every message stays.
                    fibra_runtime::park();
                    let _ = &inbox;
                })
                .unwrap();
            eprintln!("pid {full}");
            for n in 0..10 {
                full.send(n);
            }
            loop {
                fibra_runtime::park();
            }
        });
        std::process::exit(status);
    }
    let (status, stderr) = child_outcome(TEST);
    assert_eq!(status, Some(process::RUNTIME_ERROR_STATUS), "{stderr}");
    let pid = stderr
        .lines()
        .find_map(|line| line.strip_prefix("pid "))
        .expect("the child names the process");
    let diagnostics: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("fibra::process: runtime error:"))
        .collect();
    assert_eq!(
        diagnostics,
        [format!(
            "fibra::process: runtime error: the mailbox of {pid} exceeded its limit of 3 messages"
        )]
    );
}

#[test]
fn halt_outside_run_ends_the_os_process_with_the_status() {
    const TEST: &str = "halt_outside_run_ends_the_os_process_with_the_status";
    if in_child(TEST) {
        common::runtime(1).block_on(|| {
            process::spawn(|_: Inbox<()>| process::halt(3));
            loop {
                fibra_runtime::park();
            }
        });
        unreachable!("halt ends the OS process");
    }
    let (status, stderr) = child_outcome(TEST);
    assert_eq!(status, Some(3), "{stderr}");
}

#[test]
fn processes_unwound_by_their_runtimes_shutdown_write_no_report() {
    const TEST: &str = "processes_unwound_by_their_runtimes_shutdown_write_no_report";
    if in_child(TEST) {
        let started = Arc::new(AtomicUsize::new(0));
        let seen = started.clone();
        common::runtime(2).block_on(move || {
            for _ in 0..10 {
                let started = started.clone();
                process::spawn(move |inbox: Inbox<()>| {
                    started.fetch_add(1, Ordering::SeqCst);
                    idle(inbox);
                });
            }
            while started.load(Ordering::SeqCst) < 10 {
                fibra_runtime::yield_now();
            }
        });
        eprintln!("started {}", seen.load(Ordering::SeqCst));
        std::process::exit(0);
    }
    let (status, stderr) = child_outcome(TEST);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("started 10"), "{stderr}");
    assert!(!stderr.contains("=ERROR REPORT"), "{stderr}");
}

#[test]
fn a_receive_with_a_message_ready_is_still_a_cancellation_point() {
    const QUEUED: usize = 100_000;
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let status = program(1, move |inbox: Inbox<()>| {
        let main = inbox.pid();
        process::spawn(move |inbox: Inbox<()>| {
            let me = inbox.pid();
            for _ in 0..QUEUED {
                me.send(());
            }
            main.send(());
            // A message is always ready: only the receive's cancellation point stops this
            // loop once the program ends.
            for _ in 0..QUEUED {
                inbox.recv();
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        inbox.recv();
    });
    assert_eq!(status, 0);
    assert!(received.load(Ordering::SeqCst) < QUEUED);
}

#[test]
fn a_process_that_was_ended_unwinds_at_its_next_spawn_instead_of_spawning() {
    for workers in WORKER_COUNTS {
        let spawned = Arc::new(AtomicUsize::new(0));
        let counter = spawned.clone();
        let status = program(workers, move |inbox: Inbox<()>| {
            let (_, mref) = process::spawn_monitor(move |_: Inbox<()>| {
                // Ended here, but the shield keeps it running until its next cancellation
                // point outside.
                fibra_runtime::shield(|| process::exit(process::self_id(), Reason::Kill));
                process::spawn(|_: Inbox<()>| {});
                counter.fetch_add(1, Ordering::SeqCst);
            });
            match inbox.recv() {
                Signal::Down {
                    mref: down, reason, ..
                } => {
                    assert_eq!((down, reason), (mref, Reason::Killed));
                }
                _ => unreachable!("only the monitor's Down is sent"),
            }
        });
        assert_eq!(status, 0);
        assert_eq!(spawned.load(Ordering::SeqCst), 0, "{workers} workers");
    }
}

#[test]
fn processes_spawned_by_a_processs_helper_fiber_belong_to_its_program() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counter = drops.clone();
    let status = program(2, move |_: Inbox<()>| {
        let helper = fibra_runtime::spawn(move || {
            let counted = Counted(counter);
            process::spawn(move |inbox: Inbox<()>| {
                let _counted = counted;
                idle(inbox);
            });
        });
        helper.join().unwrap();
    });
    assert_eq!(status, 0);
    // Unwound with the program's other processes before `run` returned.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}
