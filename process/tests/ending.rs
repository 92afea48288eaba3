//! What a process's end promises, whoever ends it and whatever it is doing: a killed process
//! sends, spawns and links nothing more; `exit` and `demonitor` return only once the end they
//! raced with is complete; a cascade runs to its end even when it ends its own caller.

mod common;

use common::program;
use fibra_process::{self as process, Inbox, Pid, ProcessId, Reason, Signal};
use std::time::Duration;

/// Receives what is left in the mailbox, until it has been quiet for a while.
fn drain<M: Send + 'static>(inbox: &Inbox<M>) -> Vec<Signal<M>> {
    std::iter::from_fn(|| inbox.recv_timeout(Duration::from_millis(50))).collect()
}

/// One worker: the sender's slice ends inside a send's cancellation point, where the kill
/// finds it; nothing it sends comes after its `Down`.
#[test]
fn a_killed_sender_sends_nothing_after_its_down() {
    let status = program(1, |inbox: Inbox<u64>| {
        let me = inbox.pid();
        let sender = process::spawn(move |_: Inbox<()>| {
            for i in 0.. {
                me.send(i);
            }
        });
        let mref = process::monitor(&sender);
        inbox.recv();
        process::exit(&sender, Reason::Kill);
        let signals = drain(&inbox);
        let down = signals
            .iter()
            .position(|s| matches!(s, Signal::Down { mref: m, .. } if *m == mref))
            .expect("the Down came");
        let after = signals[down..]
            .iter()
            .filter(|s| matches!(s, Signal::Msg(_)))
            .count();
        assert_eq!(after, 0, "messages after the Down");
    });
    assert_eq!(status, 0);
}

/// One worker: a process killed inside `spawn_link` starts no child that would outlive it.
#[test]
fn a_process_killed_while_it_spawns_linked_children_leaves_none_running() {
    let status = program(1, |inbox: Inbox<ProcessId>| {
        let me = inbox.pid();
        let parent = process::spawn(move |_: Inbox<()>| loop {
            let me = me.clone();
            process::spawn_link(move |children: Inbox<()>| {
                me.send(process::self_id());
                loop {
                    children.recv();
                }
            });
        });
        inbox.recv();
        process::exit(&parent, Reason::Kill);
        let children: Vec<_> = drain(&inbox)
            .into_iter()
            .filter_map(|s| match s {
                Signal::Msg(child) => Some(child),
                _ => None,
            })
            .collect();
        let alive: Vec<_> = children.iter().filter(|c| process::is_alive(*c)).collect();
        assert!(
            alive.is_empty(),
            "{} children outlived their parent",
            alive.len()
        );
    });
    assert_eq!(status, 0);
}

/// A process that monitors `target` `n` times (making its end long), tells `main`, then
/// idles.
fn many_monitors(main: Pid<u8>, target: ProcessId, n: usize) -> Pid<()> {
    process::spawn(move |inbox: Inbox<()>| {
        for _ in 0..n {
            process::monitor(&target);
        }
        main.send(0);
        loop {
            inbox.recv();
        }
    })
}

/// `exit` of a process another fiber is still ending returns once that end is complete:
/// its name is free.
#[test]
fn exit_of_a_process_being_ended_returns_once_its_name_is_free() {
    let status = program(2, |inbox: Inbox<u8>| {
        let me = inbox.pid();
        let watched = process::spawn(|inbox: Inbox<()>| loop {
            inbox.recv();
        });
        let watched_id = watched.id();
        // Its end drops many held monitors before it frees its name.
        let ending = process::spawn(move |inbox: Inbox<()>| {
            process::register("ending", process::self_id()).unwrap();
            for _ in 0..20_000 {
                process::monitor(&watched_id);
            }
            me.send(0);
            inbox.recv();
        });
        inbox.recv();
        ending.send(());
        while process::is_alive(&ending) {
            fibra_runtime::yield_now();
        }
        process::exit(&ending, Reason::Kill);
        assert!(process::whereis_id("ending").is_none());
        process::exit(&watched, Reason::Kill);
    });
    assert_eq!(status, 0);
}

/// `demonitor` of a monitor whose target's end took it returns once its `Down` is delivered:
/// none comes afterwards.
#[test]
fn no_down_arrives_after_demonitor_returns() {
    let status = program(2, |inbox: Inbox<u8>| {
        let me = inbox.pid();
        let target = process::spawn(|inbox: Inbox<()>| loop {
            inbox.recv();
        });
        // Monitors posted before this one's `Down`.
        let _others = many_monitors(me, target.id(), 20_000);
        inbox.recv();
        let mref = process::monitor(&target);
        let killed = target.id();
        process::spawn(move |_: Inbox<()>| process::exit(&killed, Reason::Kill));
        while process::is_alive(&target) {
            fibra_runtime::yield_now();
        }
        let active = process::demonitor(mref, false);
        let delivered = inbox.try_recv();
        let later = drain(&inbox);
        assert!(
            later
                .iter()
                .all(|s| !matches!(s, Signal::Down { mref: m, .. } if *m == mref)),
            "a Down after demonitor returned (active: {active}, delivered: {delivered:?})"
        );
    });
    assert_eq!(status, 0);
}

/// Sends to `sink` when dropped: a message whose drop reaches a cancellation point.
struct SendsOnDrop(Pid<()>);

impl Drop for SendsOnDrop {
    fn drop(&mut self) {
        self.0.send(());
    }
}

/// Tells `main` when dropped, with `UNWOUND`.
struct TellsOnDrop(Pid<u8>);

const UNWOUND: u8 = 9;

impl Drop for TellsOnDrop {
    fn drop(&mut self) {
        self.0.send(UNWOUND);
    }
}

/// `killer` ends `target`; the cascade ends the killer itself (linked to the target), then
/// `linked`, whose unread message's drop sends: the cascade runs on to its end, so `linked`'s
/// own link is signalled and its fiber unwinds.
#[test]
fn a_cascade_that_ends_its_own_caller_runs_to_its_end() {
    let status = program(1, |inbox: Inbox<u8>| {
        let me = inbox.pid();
        let sink = process::spawn(|inbox: Inbox<()>| loop {
            inbox.recv();
        });
        let target = process::spawn(|inbox: Inbox<()>| loop {
            inbox.recv();
        });
        let target_id = target.id();
        let killer = process::spawn(move |inbox: Inbox<()>| {
            process::link(&target_id).unwrap();
            inbox.recv();
            process::exit(&target_id, Reason::custom("boom"));
        });
        for _ in 0..10 {
            fibra_runtime::yield_now();
        }
        let (target_id, main) = (target.id(), me.clone());
        let (tail_tx, tail_rx) = std::sync::mpsc::channel();
        let linked = process::spawn(move |_: Inbox<SendsOnDrop>| {
            process::link(&target_id).unwrap();
            let tail = process::spawn_link(|inbox: Inbox<()>| loop {
                inbox.recv();
            });
            tail_tx.send(tail.id()).unwrap();
            let _tells = TellsOnDrop(main.clone());
            main.send(0);
            loop {
                fibra_runtime::park();
            }
        });
        inbox.recv();
        let tail = tail_rx.recv().unwrap();
        linked.send(SendsOnDrop(sink.clone()));
        killer.send(());
        let unwound = drain(&inbox)
            .iter()
            .any(|s| matches!(s, Signal::Msg(UNWOUND)));
        assert!(unwound, "the linked process's fiber unwound");
        assert!(!process::is_alive(&tail), "its own link was signalled");
        process::exit(&sink, Reason::Kill);
    });
    assert_eq!(status, 0);
}

/// Yields, then panics, when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        fibra_runtime::yield_now();
        panic!("a message's drop failed");
    }
}

/// One worker: the killer's end of `target` stops part-way (a message dropped with the
/// mailbox panics), while the main process waits in `exit` for that end: it is let go.
#[test]
fn an_end_cut_short_by_a_panicking_drop_lets_its_waiters_go() {
    let status = program(1, |_: Inbox<()>| {
        let target = process::spawn(|_: Inbox<PanicsOnDrop>| loop {
            fibra_runtime::park();
        });
        target.send(PanicsOnDrop);
        let doomed = target.id();
        process::spawn(move |_: Inbox<()>| process::exit(&doomed, Reason::Kill));
        // The killer runs until the drop yields: the target is ended, its end not complete.
        while process::is_alive(&target) {
            fibra_runtime::yield_now();
        }
        process::exit(&target, Reason::Kill);
        assert!(!process::is_alive(&target));
    });
    assert_eq!(status, 0);
}
