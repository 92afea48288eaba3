//! Ports: an external program's output and exit status as messages, its input through the
//! port, and the program killed whenever the port ends for another reason than its exit.

mod common;

use common::program;
use fibra_net::os::Command;
use fibra_process::{self as process, Inbox, PortEvent, ProcessId, Reason, Signal};
use fibra_testing::WORKER_COUNTS;
use std::time::Duration;

/// The program's output up to its exit, and the exit code.
fn output_and_code(inbox: &Inbox<PortEvent>) -> (Vec<u8>, Option<i32>) {
    let mut output = Vec::new();
    loop {
        match inbox.recv() {
            Signal::Msg(PortEvent::Data(bytes)) => output.extend(bytes),
            Signal::Msg(PortEvent::Exit(status)) => return (output, status.code()),
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn next_down(inbox: &Inbox<impl Send + 'static>) -> (ProcessId, Reason) {
    match inbox.receive(|s| matches!(s, Signal::Down { .. })) {
        Signal::Down { pid, reason, .. } => (pid, reason),
        _ => unreachable!(),
    }
}

/// Whether the OS process `os_id` has ended (gone, or a zombie waiting to be reaped).
fn has_ended(os_id: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{os_id}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (a bounded number of short sleeps: the kill is asynchronous) for `os_id` to end.
fn assert_ends(os_id: u32) {
    for _ in 0..2_000 {
        if has_ended(os_id) {
            return;
        }
        fibra_runtime::sleep(Duration::from_millis(5));
    }
    panic!("the program {os_id} is still running");
}

fn sleeper() -> Command {
    let mut command = Command::new("sleep");
    command.arg("30");
    command
}

#[test]
fn the_output_arrives_in_order_then_the_exit_status() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<PortEvent>| {
            let mut command = Command::new("sh");
            command.args(["-c", "printf one; printf ' two'; exit 3"]);
            let port = process::open_port(command, |event| event).unwrap();
            let watch = process::monitor(port.id());
            assert_eq!(output_and_code(&inbox), (b"one two".to_vec(), Some(3)));
            // The port then ends normally, and nothing else arrives from it.
            match inbox.recv() {
                Signal::Down { mref, reason, .. } => {
                    assert_eq!(mref, watch);
                    assert_eq!(reason, Reason::Normal);
                }
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(status, 0);
    }
}

#[test]
fn input_sent_through_the_port_reaches_the_program_in_order() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<PortEvent>| {
            let port = process::open_port(Command::new("cat"), |event| event).unwrap();
            for word in ["alpha ", "beta ", "gamma"] {
                port.send(word);
            }
            port.close_input();
            // Bytes sent after the input is closed are dropped.
            port.send("lost");
            assert_eq!(
                output_and_code(&inbox),
                (b"alpha beta gamma".to_vec(), Some(0))
            );
        });
        assert_eq!(status, 0);
    }
}

/// In both orders: the owner ends before the port has started (the port must notice it
/// gone), or once the port has echoed a byte (the port traps the owner's exit signal).
#[test]
fn the_owner_ending_however_it_ends_kills_the_program() {
    for workers in WORKER_COUNTS {
        for port_started in [false, true] {
            for reason in [Reason::Normal, Reason::custom("owner failed")] {
                let status = program(workers, move |inbox: Inbox<u32>| {
                    let me = inbox.pid();
                    let expected = reason.clone();
                    let (owner, _) = process::spawn_monitor(move |inbox: Inbox<PortEvent>| {
                        let port = process::open_port(Command::new("cat"), |event| event).unwrap();
                        me.send(port.os_id());
                        if port_started {
                            port.send("x");
                            assert!(matches!(inbox.recv(), Signal::Msg(PortEvent::Data(_))));
                        }
                        if !expected.is_normal() {
                            process::exit_self(expected);
                        }
                    });
                    let Signal::Msg(os_id) = inbox.receive(|s| s.msg().is_some()) else {
                        unreachable!()
                    };
                    assert_eq!(next_down(&inbox), (owner.id(), reason));
                    assert_ends(os_id);
                });
                assert_eq!(status, 0);
            }
        }
    }
}

#[test]
fn close_kills_the_program_and_ends_the_port_normally_without_an_exit_event() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<PortEvent>| {
            let port = process::open_port(sleeper(), |event| event).unwrap();
            process::monitor(port.id());
            port.close();
            assert_eq!(next_down(&inbox), (port.id(), Reason::Normal));
            assert_ends(port.os_id());
            process::receive! { inbox,
                Signal::Msg(event) => panic!("a closed port sent {event:?}"),
                after Duration::ZERO => {}
            }
        });
        assert_eq!(status, 0);
    }
}

#[test]
fn a_killed_port_kills_its_program_and_signals_its_owner() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<PortEvent>| {
            process::trap_exit(true);
            let port = process::open_port(sleeper(), |event| event).unwrap();
            process::exit(port.id(), Reason::Kill);
            match inbox.receive(|s| matches!(s, Signal::Exit { .. })) {
                Signal::Exit { from, reason } => {
                    assert_eq!(from, port.id());
                    assert_eq!(reason, Reason::Killed);
                }
                _ => unreachable!(),
            }
            assert_ends(port.os_id());
        });
        assert_eq!(status, 0);
    }
}

/// A port takes part in links: an abnormal exit signal from another linked process ends it
/// (and its program), a normal one does not.
#[test]
fn a_linked_process_ending_abnormally_ends_the_port_a_normal_end_does_not() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<PortEvent>| {
            process::trap_exit(true);
            let port = process::open_port(Command::new("cat"), |event| event).unwrap();
            for reason in [Reason::Normal, Reason::custom("linked failed")] {
                let id = port.id();
                let (linked, _) = process::spawn_monitor(move |_: Inbox<()>| {
                    process::link(id).unwrap();
                    process::exit_self(reason);
                });
                next_down(&inbox);
                assert!(!process::is_alive(linked.id()));
            }
            match inbox.receive(|s| matches!(s, Signal::Exit { .. })) {
                Signal::Exit { from, reason } => {
                    assert_eq!(from, port.id());
                    assert_eq!(reason, Reason::custom("linked failed"));
                }
                _ => unreachable!(),
            }
            assert_ends(port.os_id());
        });
        assert_eq!(status, 0);
    }
}

#[test]
fn a_port_can_be_registered_and_a_program_that_cannot_start_is_an_error() {
    let status = program(1, |_: Inbox<PortEvent>| {
        let port = process::open_port(sleeper(), |event| event).unwrap();
        process::register("port-under-test", port.id()).unwrap();
        assert_eq!(process::whereis_id("port-under-test"), Some(port.id()));
        port.close();

        let missing = process::open_port(Command::new("/nonexistent/program"), |e| e);
        assert_eq!(missing.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    });
    assert_eq!(status, 0);
}

/// Opening a port is a cancellation point before the program starts: a process killed while
/// it could not unwind starts no program once it can.
#[test]
fn a_killed_process_opening_a_port_starts_no_program() {
    let status = program(2, |_: Inbox<()>| {
        let (ready_tx, ready) = fibra::chan::bounded(1);
        let (go, go_rx) = fibra::chan::bounded(1);
        let (outcome_tx, outcome) = fibra::chan::bounded(1);
        let doomed = process::spawn(move |_: Inbox<PortEvent>| {
            fibra_runtime::shield(|| {
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            });
            // Had the program started, opening this one would have returned its error.
            let opened = std::panic::catch_unwind(|| {
                process::open_port(Command::new("/nonexistent/program"), |e| e)
            });
            let unwound = opened.is_err();
            fibra_runtime::shield(|| outcome_tx.send(unwound).unwrap());
        });
        ready.recv().unwrap();
        process::exit(&doomed, Reason::Kill);
        go.send(()).unwrap();
        assert_eq!(
            outcome.recv(),
            Some(true),
            "the killed process started its program"
        );
    });
    assert_eq!(status, 0);
}

#[test]
#[should_panic(expected = "fibra::process::self_pid")]
fn opening_a_port_outside_a_process_panics() {
    fibra_testing::on(1, || {
        let _ = process::open_port(Command::new("true"), |event| event);
    });
}
