//! `call`: replies, a callee that ends before or while it is called, timeouts, dropped
//! requests.

mod common;

use common::program;
use fibra_process::{self as process, CallError, Inbox, Pid, Reason, ReplyTo, Signal};
use fibra_testing::WORKER_COUNTS;
use std::time::Duration;

enum Request {
    Double(u64, ReplyTo<u64>),
    Crash(ReplyTo<u64>),
    Ignore(ReplyTo<u64>),
    Hold(ReplyTo<u64>),
}

fn server() -> Pid<Request> {
    process::spawn(|inbox: Inbox<Request>| {
        let mut held = Vec::new();
        loop {
            match inbox.recv() {
                Signal::Msg(Request::Double(n, reply)) => reply.reply(n * 2),
                Signal::Msg(Request::Crash(_reply)) => panic!("crashed on request"),
                Signal::Msg(Request::Ignore(reply)) => drop(reply),
                Signal::Msg(Request::Hold(reply)) => held.push(reply),
                _ => {}
            }
        }
    })
}

const LONG: Duration = Duration::from_secs(30);

#[test]
fn a_call_returns_the_typed_reply() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let server = server();
            for n in 0..200 {
                assert_eq!(
                    process::call(&server, |r| Request::Double(n, r), LONG),
                    Ok(n * 2)
                );
            }
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_callee_that_dies_on_the_request_fails_the_call_with_its_reason_not_a_timeout() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let server = server();
            let outcome = process::call(&server, Request::Crash, LONG);
            assert_eq!(
                outcome,
                Err(CallError::Down(Reason::Panic("crashed on request".into())))
            );
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_call_to_an_ended_process_is_noproc_at_once() {
    let status = program(2, |inbox: Inbox<()>| {
        let (gone, _) = process::spawn_monitor(|_: Inbox<Request>| {});
        inbox.recv();
        assert_eq!(
            process::call(&gone, |r| Request::Double(1, r), LONG),
            Err(CallError::Down(Reason::Noproc))
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_callee_killed_while_holding_the_request_fails_the_call() {
    let status = program(2, |_: Inbox<()>| {
        let server = server();
        let killer_target = server.clone();
        process::spawn(move |_: Inbox<()>| {
            // Kill the server once it holds a request (it is blocked in no reply).
            fibra_runtime::sleep(Duration::from_millis(2));
            process::exit(&killer_target, Reason::Kill);
        });
        assert_eq!(
            process::call(&server, Request::Hold, LONG),
            Err(CallError::Down(Reason::Killed))
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_call_times_out_when_no_reply_comes_and_a_dropped_request_is_no_reply() {
    let status = program(1, |_: Inbox<()>| {
        let server = server();
        assert_eq!(
            process::call(&server, Request::Hold, Duration::from_millis(5)),
            Err(CallError::Timeout)
        );
        assert_eq!(
            process::call(&server, Request::Ignore, LONG),
            Err(CallError::NoReply)
        );
        // The server is unharmed.
        assert_eq!(
            process::call(&server, |r| Request::Double(4, r), LONG),
            Ok(8)
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_request_dropped_in_a_panic_the_callee_catches_fails_the_call_at_its_next_receive() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let server = process::spawn(|inbox: Inbox<Request>| loop {
                match inbox.recv() {
                    Signal::Msg(Request::Crash(reply)) => {
                        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let _reply = reply;
                            panic!("caught on request");
                        }));
                        assert!(caught.is_err());
                    }
                    Signal::Msg(Request::Double(n, reply)) => reply.reply(n * 2),
                    _ => {}
                }
            });
            assert_eq!(
                process::call(&server, Request::Crash, LONG),
                Err(CallError::NoReply)
            );
            // The server lives on and answers.
            assert_eq!(
                process::call(&server, |r| Request::Double(4, r), LONG),
                Ok(8)
            );
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_request_dropped_by_a_panicking_fiber_that_is_no_process_fails_the_call_at_once() {
    let status = program(2, |_: Inbox<()>| {
        let server = process::spawn(|inbox: Inbox<Request>| loop {
            if let Signal::Msg(Request::Crash(reply)) = inbox.recv() {
                // Handed to a helper fiber, which panics (and is not joined).
                drop(fibra_runtime::spawn(move || {
                    let _reply = reply;
                    panic!("helper crashed");
                }));
            }
        });
        assert_eq!(
            process::call(&server, Request::Crash, LONG),
            Err(CallError::NoReply)
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_process_calling_itself_panics_instead_of_waiting_forever() {
    let status = program(1, |inbox: Inbox<Request>| {
        let me = inbox.pid();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            process::call(&me, Request::Hold, LONG)
        }));
        let payload = outcome.unwrap_err();
        let message = payload.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(
            message.contains("to the calling process itself"),
            "{message}"
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_call_answered_by_a_process_on_the_same_worker_does_not_park_the_caller() {
    let status = program(1, |_: Inbox<()>| {
        let server = process::spawn(|inbox: Inbox<ReplyTo<u8>>| {
            if let Signal::Msg(reply) = inbox.recv() {
                reply.reply(7);
            }
        });
        let parks = || fibra_runtime::Handle::current().metrics().workers[0].parks;
        let before = parks();
        // No reply yet when the request is sent: the caller yields, the server answers.
        assert_eq!(
            process::call(&server, |r| r, Duration::from_secs(60)),
            Ok(7)
        );
        assert_eq!(parks(), before, "neither process parked");
    });
    assert_eq!(status, 0);
}

/// A server that forwards each request to `worker`, which answers it (or not) in its stead.
fn forwarder(worker: Pid<ReplyTo<u64>>) -> Pid<ReplyTo<u64>> {
    process::spawn(move |inbox: Inbox<ReplyTo<u64>>| loop {
        if let Signal::Msg(reply) = inbox.recv() {
            worker.send(reply);
        }
    })
}

/// A request forwarded to a worker process that panics while holding it: the caller watches
/// the server, not the worker, so only the worker's end can fail the call.
#[test]
fn a_forwarded_request_held_by_a_worker_that_panics_is_no_reply() {
    let status = program(2, |_: Inbox<()>| {
        let worker = process::spawn(|inbox: Inbox<ReplyTo<u64>>| {
            if let Signal::Msg(reply) = inbox.recv() {
                let _reply = reply;
                panic!("the worker crashes holding the request");
            }
        });
        let server = forwarder(worker);
        assert_eq!(process::call(&server, |r| r, LONG), Err(CallError::NoReply));
    });
    assert_eq!(status, 0);
}

/// The same with the worker killed while it waits holding the request: it drops the request
/// as it unwinds, after its end.
#[test]
fn a_forwarded_request_held_by_a_worker_that_is_killed_is_no_reply() {
    enum Note {
        Holding,
        Called(Result<u64, CallError>),
    }
    let status = program(2, |main: Inbox<Note>| {
        let me = main.pid();
        let worker = process::spawn(move |inbox: Inbox<ReplyTo<u64>>| {
            if let Signal::Msg(reply) = inbox.recv() {
                let _reply = reply;
                me.send(Note::Holding);
                loop {
                    inbox.recv();
                }
            }
        });
        let server = forwarder(worker.clone());
        let me = main.pid();
        process::spawn(move |_: Inbox<()>| {
            me.send(Note::Called(process::call(&server, |r| r, LONG)));
        });
        assert!(matches!(main.recv(), Signal::Msg(Note::Holding)));
        process::exit(&worker, Reason::Kill);
        match main.recv() {
            Signal::Msg(Note::Called(called)) => assert_eq!(called, Err(CallError::NoReply)),
            _ => unreachable!("only the caller sends a result"),
        }
    });
    assert_eq!(status, 0);
}
