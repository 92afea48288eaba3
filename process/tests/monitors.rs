//! Monitors: `Down` reasons and order, noproc, demonitor with and without flush, names.

mod common;

use common::program;
use fibra_process::{self as process, Inbox, MonitorRef, Pid, ProcessId, Reason, Signal};
use fibra_testing::WORKER_COUNTS;

fn idle(inbox: Inbox<()>) {
    loop {
        inbox.recv();
    }
}

fn next_down<M: Send + 'static>(inbox: &Inbox<M>) -> (MonitorRef, ProcessId, Reason) {
    match inbox.receive(|s| matches!(s, Signal::Down { .. })) {
        Signal::Down { mref, pid, reason } => (mref, pid, reason),
        _ => unreachable!(),
    }
}

#[test]
fn a_monitor_gets_down_with_the_exit_reason() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let worker = process::spawn(idle);
            let mref = process::monitor(&worker);
            process::exit(&worker, Reason::custom("{stop,now}"));
            assert_eq!(
                next_down(&inbox),
                (mref, worker.id(), Reason::custom("{stop,now}"))
            );
            assert!(inbox.try_recv().is_none(), "one Down per monitor");
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn monitoring_an_ended_process_gives_noproc_at_once() {
    let status = program(2, |inbox: Inbox<()>| {
        let (gone, first) = process::spawn_monitor(|_: Inbox<()>| {});
        assert_eq!(next_down(&inbox), (first, gone.id(), Reason::Normal));
        let again = process::monitor(&gone);
        assert_eq!(next_down(&inbox), (again, gone.id(), Reason::Noproc));
    });
    assert_eq!(status, 0);
}

#[test]
fn every_monitor_is_its_own_and_downs_go_out_in_monitor_order() {
    let status = program(2, |inbox: Inbox<()>| {
        let worker = process::spawn(idle);
        let refs: Vec<MonitorRef> = (0..5).map(|_| process::monitor(&worker)).collect();
        process::exit(&worker, Reason::Kill);
        let downs: Vec<MonitorRef> = (0..5).map(|_| next_down(&inbox).0).collect();
        assert_eq!(downs, refs);
    });
    assert_eq!(status, 0);
}

#[test]
fn monitoring_oneself_does_nothing() {
    let status = program(1, |inbox: Inbox<()>| {
        let mref = process::monitor(inbox.pid());
        assert!(!process::demonitor(mref, false));
        assert!(inbox.try_recv().is_none());
    });
    assert_eq!(status, 0);
}

#[test]
fn after_demonitor_no_down_comes_and_info_says_it_was_active() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let worker = process::spawn(idle);
            let mref = process::monitor(&worker);
            assert!(process::demonitor(mref, false), "it was active");
            assert!(!process::demonitor(mref, false), "not any more");
            let control = process::monitor(&worker);
            process::exit(&worker, Reason::Kill);
            // Only the other monitor's Down comes.
            assert_eq!(next_down(&inbox).0, control);
            assert!(inbox.try_recv().is_none());
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn demonitor_with_flush_removes_a_delivered_down_and_without_keeps_it() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<u8>| {
            let me = inbox.pid();
            me.send(1);
            let flushed = process::spawn(idle);
            let flushed_ref = process::monitor(&flushed);
            let kept = process::spawn(idle);
            let kept_ref = process::monitor(&kept);
            process::exit(&flushed, Reason::Kill);
            process::exit(&kept, Reason::Kill);
            me.send(2);
            // Both Downs are in the mailbox now.
            assert!(!process::demonitor(flushed_ref, true));
            assert!(!process::demonitor(kept_ref, false));
            let rest: Vec<String> = std::iter::from_fn(|| inbox.try_recv())
                .map(|s| match s {
                    Signal::Msg(n) => n.to_string(),
                    Signal::Down { mref, .. } => format!("down {}", mref == kept_ref),
                    Signal::Exit { .. } => "exit".to_owned(),
                })
                .collect();
            assert_eq!(rest, ["1", "down true", "2"]);
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn demonitor_flush_of_a_noproc_down_removes_it() {
    let status = program(1, |inbox: Inbox<()>| {
        let (gone, first) = process::spawn_monitor(|_: Inbox<()>| {});
        next_down(&inbox);
        let _ = first;
        let mref = process::monitor(&gone);
        assert!(!process::demonitor(mref, true));
        assert!(inbox.try_recv().is_none());
    });
    assert_eq!(status, 0);
}

#[test]
fn a_name_monitor_watches_the_registered_process_or_gives_noproc() {
    let status = program(2, |inbox: Inbox<()>| {
        let named: Pid<()> = process::Builder::new()
            .name("monitors-named")
            .spawn(idle)
            .unwrap();
        let mref = process::monitor_name("monitors-named");
        process::exit(&named, Reason::Shutdown);
        assert_eq!(next_down(&inbox), (mref, named.id(), Reason::Shutdown));
        let none = process::monitor_name("monitors-named");
        let (got, _, reason) = next_down(&inbox);
        assert_eq!((got, reason), (none, Reason::Noproc));
    });
    assert_eq!(status, 0);
}
