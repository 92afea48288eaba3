//! A process blocked in a receive or a call shows in the dump what it waits for and the line
//! of the call.

mod common;

use common::program;
use fibra_process::{self as process, receive, Inbox, ReplyTo, Signal};
use fibra_runtime::wait::WaitKind;
use fibra_runtime::Fiber;
use fibra_runtime::WaitInfo;
use fibra_testing::{parked_wait, WORKER_COUNTS};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a process is about to wait: its fiber, and the line of the call.
#[derive(Default)]
struct About {
    fiber: Mutex<Option<Fiber>>,
    line: AtomicU32,
}

impl About {
    fn note(&self, line: u32) {
        *self.fiber.lock().unwrap() = Some(fibra_runtime::current());
        self.line.store(line, Ordering::SeqCst);
    }

    /// The noted process's wait once it has parked, with the line it noted.
    fn wait(&self) -> (WaitInfo, u32) {
        let fiber = loop {
            if let Some(fiber) = self.fiber.lock().unwrap().take() {
                break fiber;
            }
            fibra_runtime::yield_now();
        };
        (parked_wait(&fiber), self.line.load(Ordering::SeqCst))
    }
}

#[test]
fn receives_show_a_receive_wait_at_the_line_of_the_call() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let about = Arc::new(About::default());
            let a = about.clone();
            let receiver = process::spawn(move |inbox: Inbox<u8>| {
                a.note(line!() + 1);
                let next = inbox.recv();
                assert_eq!(next.into_msg(), Some(1));
                a.note(line!() + 1);
                let two = inbox.receive(|s| matches!(s, Signal::Msg(2)));
                assert_eq!(two.into_msg(), Some(2));
                a.note(line!() + 2);
                let three =
                    receive! { inbox, Signal::Msg(3) => 3, after Duration::from_secs(600) => 0 };
                assert_eq!(three, 3);
            });
            for n in 1..=3 {
                let (wait, line) = about.wait();
                assert_eq!((wait.kind, wait.line), (WaitKind::Receive, line));
                assert_eq!(wait.timed, n == 3, "only the `after` receive is timed");
                assert!(wait.site.starts_with(file!()), "{}", wait.site);
                receiver.send(n);
            }
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

enum Req {
    Get(ReplyTo<u8>),
    Go,
}

#[test]
fn a_call_shows_a_call_wait_at_the_line_of_the_call() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let about = Arc::new(About::default());
            let server = process::spawn(|inbox: Inbox<Req>| {
                if let Signal::Msg(Req::Get(reply)) = inbox.recv() {
                    // Answers once told to.
                    let _ = inbox.recv();
                    reply.reply(7);
                }
            });
            let (a, s) = (about.clone(), server.clone());
            let caller = process::spawn(move |_: Inbox<()>| {
                a.note(line!() + 1);
                let got = process::call(&s, Req::Get, Duration::MAX);
                assert_eq!(got, Ok(7));
            });
            let done = process::monitor(&caller);
            let (wait, line) = about.wait();
            assert_eq!((wait.kind, wait.line), (WaitKind::Call, line));
            assert!(!wait.timed);
            assert_eq!(
                wait.owner, None,
                "a call names no owner: its request may be forwarded"
            );
            server.send(Req::Go);
            match inbox.recv() {
                Signal::Down { mref, reason, .. } => {
                    assert_eq!((mref, reason), (done, process::Reason::Normal));
                }
                _ => panic!("expected the caller's Down"),
            }
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}
