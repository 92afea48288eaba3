//! Ports: an external program's output and exit status as messages, its input through the
//! port, and the program killed whenever the port ends for another reason than its exit.

mod common;

use common::program;
use fibra_net::os::Command;
use fibra_process::{self as process, Inbox, Port, PortEvent, ProcessId, Reason, Signal};
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

/// Whether `os_id` ends within a bounded number of short sleeps (the kill is asynchronous).
fn ends(os_id: u32) -> bool {
    for _ in 0..2_000 {
        if has_ended(os_id) {
            return true;
        }
        fibra_runtime::sleep(Duration::from_millis(5));
    }
    false
}

fn assert_ends(os_id: u32) {
    assert!(ends(os_id), "the program {os_id} is still running");
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
            // Told of the port's end through its link, which exists before the port runs (a
            // monitor made once `open_port` returns may find the port already ended).
            process::trap_exit(true);
            let mut command = Command::new("sh");
            command.args(["-c", "printf one; printf ' two'; exit 3"]);
            let port = process::open_port(command, |event| event).unwrap();
            assert_eq!(output_and_code(&inbox), (b"one two".to_vec(), Some(3)));
            // The port then ends normally, and nothing else arrives from it.
            match inbox.recv() {
                Signal::Exit { from, reason } => {
                    assert_eq!(from, port.id());
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
/// Also once the owner has unlinked the port (OTP's ports close with their connected process,
/// link or not): the program of an unlinked port ran on.
#[test]
fn the_owner_ending_however_it_ends_kills_the_program() {
    for workers in WORKER_COUNTS {
        for (port_started, unlinked) in [(false, false), (true, false), (false, true), (true, true)]
        {
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
                        if unlinked {
                            process::unlink(port.id());
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

/// What the owner of a stalled port takes: its port's events, and the go-ahead to let go.
#[derive(Debug)]
enum Owned {
    Port(PortEvent),
    LetGo,
}

/// Lets go of a port stalled by `stall`, both ways an owner can: by returning, and with
/// [`Port::close`] while it stays alive. The port must end (normally) and kill its program.
/// `command` prints a line first: its arrival shows the port in its loop, trapping exits.
fn letting_go_of_a_stalled_port_ends_it(command: fn() -> Command, stall: fn(&Port)) {
    for workers in WORKER_COUNTS {
        for close in [false, true] {
            let status = program(workers, move |inbox: Inbox<(u32, ProcessId)>| {
                let me = inbox.pid();
                let (owner, _) = process::spawn_monitor(move |owned: Inbox<Owned>| {
                    let port = process::open_port(command(), Owned::Port).unwrap();
                    let first = owned.recv();
                    assert!(
                        matches!(first, Signal::Msg(Owned::Port(PortEvent::Data(_)))),
                        "{first:?}"
                    );
                    me.send((port.os_id(), port.id()));
                    owned.receive(|signal| matches!(signal, Signal::Msg(Owned::LetGo)));
                    stall(&port);
                    if close {
                        port.close();
                        // Alive, so that only the close can end the port.
                        owned.receive(|_| false);
                    }
                });
                let (os_id, port_id) = match inbox.recv() {
                    Signal::Msg(ids) => ids,
                    other => panic!("the owner failed: {other:?}"),
                };
                let watch = process::monitor(port_id.clone());
                owner.send(Owned::LetGo);
                let down = inbox.receive_timeout(
                    Duration::from_secs(10),
                    |signal| matches!(signal, Signal::Down { mref, .. } if *mref == watch),
                );
                let Some(Signal::Down { reason, .. }) = down else {
                    panic!("the port (close: {close}) is still alive");
                };
                assert_eq!(reason, Reason::Normal);
                assert_ends(os_id);
            });
            assert_eq!(status, 0);
        }
    }
}

/// A program that reads no input, so the port's writes soon fill its input pipe.
#[test]
fn a_port_blocked_writing_the_programs_input_still_ends_and_kills_it() {
    letting_go_of_a_stalled_port_ends_it(
        || {
            let mut command = Command::new("sh");
            command.args(["-c", "echo ready; exec sleep 30"]);
            command
        },
        |port| port.send(vec![b'x'; 1 << 20]),
    );
}

/// A program that closed its output but runs on: the port has all the output and waits for
/// the program's exit.
#[test]
fn a_port_waiting_for_its_programs_exit_still_ends_and_kills_it() {
    letting_go_of_a_stalled_port_ends_it(
        || {
            let mut command = Command::new("sh");
            command.args(["-c", "echo ready; exec >&-; exec sleep 30"]);
            command
        },
        |port| {
            let output = format!("/proc/{}/fd/1", port.os_id());
            for _ in 0..2_000 {
                if std::fs::symlink_metadata(&output).is_err() {
                    break;
                }
                fibra_runtime::sleep(Duration::from_millis(5));
            }
            // Time for the port to take the end of the output, so that the let-go finds
            // it waiting for the exit (the outcome must be the same either way).
            fibra_runtime::sleep(Duration::from_millis(100));
        },
    );
}

/// A grandchild that still writes the output pipe once the port's program is killed: the
/// port's end must close the pipe's read end, so the grandchild's writes fail (`yes` dies of
/// `SIGPIPE`) instead of being drained for ever.
#[test]
fn a_closed_port_closes_its_output_pipe_under_a_grandchild_still_writing() {
    for workers in WORKER_COUNTS {
        let pidfile = std::env::temp_dir().join(format!(
            "fibra-port-grandchild-{}-{workers}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&pidfile);
        let path = pidfile.clone();
        let status = program(workers, move |inbox: Inbox<PortEvent>| {
            let mut command = Command::new("sh");
            let script = format!(
                "yes & echo $! > '{0}.tmp' && mv '{0}.tmp' '{0}'; wait",
                path.display()
            );
            command.args(["-c", &script]);
            let port = process::open_port(command, |event| event).unwrap();
            let watch = process::monitor(port.id());
            let mut grandchild = None;
            for _ in 0..2_000 {
                grandchild = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|pid| pid.trim().parse::<u32>().ok());
                if grandchild.is_some() {
                    break;
                }
                fibra_runtime::sleep(Duration::from_millis(5));
            }
            let grandchild = grandchild.expect("the shell wrote no pid");
            // Output forwarded: the port is in its loop, so the close goes through it.
            assert!(matches!(inbox.recv(), Signal::Msg(PortEvent::Data(_))));
            port.close();
            let down = inbox.receive(|s| matches!(s, Signal::Down { mref, .. } if *mref == watch));
            assert!(matches!(
                down,
                Signal::Down {
                    reason: Reason::Normal,
                    ..
                }
            ));
            let ended = ends(grandchild);
            if !ended {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &grandchild.to_string()])
                    .status();
            }
            assert!(ended, "the grandchild {grandchild} still writes");
        });
        let _ = std::fs::remove_file(&pidfile);
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
