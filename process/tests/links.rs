//! Links and exit signals: propagation, trapping, kill, noproc, unlink, link order, long
//! chains, and `exit` taking effect before it returns.

mod common;

use common::program;
use fibra_process::{self as process, Inbox, NoProc, Pid, ProcessId, Reason, Signal};
use fibra_testing::{Counted, WORKER_COUNTS};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A process that waits for messages for good.
fn idle(inbox: Inbox<()>) {
    loop {
        inbox.recv();
    }
}

fn next_down(inbox: &Inbox<impl Send + 'static>) -> (ProcessId, Reason) {
    match inbox.receive(|s| matches!(s, Signal::Down { .. })) {
        Signal::Down { pid, reason, .. } => (pid, reason),
        _ => unreachable!(),
    }
}

#[test]
fn an_abnormal_end_ends_untrapping_linked_processes_with_the_same_reason() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            // Monitored from its spawn: it may end before a later `monitor` (then noproc).
            let (linked, _) = process::spawn_monitor(|_: Inbox<()>| {
                let crasher = process::spawn_link(|inbox: Inbox<()>| {
                    inbox.recv();
                    process::exit_self(Reason::custom("boom"));
                });
                crasher.send(());
                loop {
                    fibra_runtime::park();
                }
            });
            assert_eq!(next_down(&inbox), (linked.id(), Reason::custom("boom")));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_normal_end_does_not_end_untrapping_linked_processes() {
    let status = program(2, |inbox: Inbox<()>| {
        // The child ends only once it is monitored (else the monitor could find it ended).
        let child = process::spawn_link(|inbox: Inbox<()>| drop(inbox.recv()));
        process::monitor(&child);
        child.send(());
        assert_eq!(next_down(&inbox).1, Reason::Normal);
        assert!(process::is_alive(inbox.pid()));
    });
    assert_eq!(status, 0);
}

#[test]
fn a_trapping_process_gets_exit_messages_even_for_normal_ends() {
    let status = program(2, |inbox: Inbox<()>| {
        process::trap_exit(true);
        let normal = process::spawn_link(|_: Inbox<()>| {});
        let panicking = process::spawn_link(|_: Inbox<()>| panic!("kaput"));
        let mut exits = Vec::new();
        for _ in 0..2 {
            match inbox.recv() {
                Signal::Exit { from, reason } => exits.push((from, reason)),
                _ => unreachable!(),
            }
        }
        exits.sort_by_key(|(from, _)| from.to_string());
        let mut expected = vec![
            (normal.id(), Reason::Normal),
            (panicking.id(), Reason::Panic("kaput".into())),
        ];
        expected.sort_by_key(|(from, _)| from.to_string());
        assert_eq!(exits, expected);
    });
    assert_eq!(status, 0);
}

#[test]
fn kill_cannot_be_trapped_and_reaches_links_as_killed() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            process::trap_exit(true);
            let victim = process::spawn_link(|_: Inbox<()>| {
                process::trap_exit(true);
                loop {
                    fibra_runtime::park();
                }
            });
            process::exit(&victim, Reason::Kill);
            assert!(!process::is_alive(&victim));
            match inbox.recv() {
                Signal::Exit { from, reason } => {
                    assert_eq!((from, reason), (victim.id(), Reason::Killed));
                }
                _ => unreachable!(),
            }
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn exit_to_a_trapping_process_is_a_message_from_the_caller() {
    let status = program(2, |inbox: Inbox<()>| {
        let me = inbox.pid();
        let (trapper, _) = process::spawn_monitor(move |inbox: Inbox<()>| {
            process::trap_exit(true);
            me.send(());
            match inbox.recv() {
                Signal::Exit { from, reason } if from == me.id() && reason == Reason::Shutdown => {}
                other => panic!("unexpected {other:?}"),
            }
        });
        assert!(matches!(inbox.recv(), Signal::Msg(())));
        process::exit(&trapper, Reason::Shutdown);
        assert_eq!(next_down(&inbox), (trapper.id(), Reason::Normal));
    });
    assert_eq!(status, 0);
}

#[test]
fn exit_normal_is_ignored_by_others_and_ends_the_caller_itself() {
    let status = program(2, |inbox: Inbox<()>| {
        let other = process::spawn(idle);
        process::exit(&other, Reason::Normal);
        assert!(process::is_alive(&other));
        let (me_too, _) = process::spawn_monitor(|_: Inbox<()>| {
            process::exit(process::self_id(), Reason::Normal);
            unreachable!("exit(self, normal) ends the caller");
        });
        assert_eq!(next_down(&inbox), (me_too.id(), Reason::Normal));
        process::exit(&other, Reason::Kill);
    });
    assert_eq!(status, 0);
}

#[test]
fn exit_kill_has_taken_effect_when_it_returns_and_the_fiber_unwinds() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let drops = Arc::new(AtomicUsize::new(0));
            let counted = Counted(drops.clone());
            let victim = process::spawn(move |inbox: Inbox<()>| {
                let _counted = counted;
                loop {
                    inbox.recv();
                }
            });
            let mref = process::monitor(&victim);
            process::exit(&victim, Reason::Kill);
            assert!(!process::is_alive(&victim));
            match inbox.recv() {
                Signal::Down {
                    mref: m, reason, ..
                } => assert_eq!((m, reason), (mref, Reason::Killed)),
                _ => unreachable!(),
            }
            // Destructors run as its fiber unwinds.
            while drops.load(Ordering::SeqCst) == 0 {
                fibra_runtime::yield_now();
            }
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_link_to_an_ended_process_is_noproc_or_an_exit_message_when_trapping() {
    let status = program(2, |inbox: Inbox<()>| {
        let (gone, _) = process::spawn_monitor(|_: Inbox<()>| {});
        next_down(&inbox);
        assert_eq!(process::link(&gone), Err(NoProc));
        process::trap_exit(true);
        assert_eq!(process::link(&gone), Ok(()));
        match inbox.recv() {
            Signal::Exit { from, reason } => {
                assert_eq!((from, reason), (gone.id(), Reason::Noproc))
            }
            _ => unreachable!(),
        }
    });
    assert_eq!(status, 0);
}

#[test]
fn after_unlink_the_link_has_no_effect() {
    let status = program(2, |inbox: Inbox<()>| {
        let child = process::spawn(idle);
        process::link(&child).unwrap();
        process::link(&child).unwrap(); // again: nothing new
        process::unlink(&child);
        process::exit(&child, Reason::custom("bye"));
        assert!(!process::is_alive(&child));
        assert!(process::is_alive(inbox.pid()));
        assert!(inbox.try_recv().is_none());
    });
    assert_eq!(status, 0);
}

#[test]
fn linked_processes_are_signalled_in_link_order() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            // The hub links to each spoke it is sent, in the order sent.
            let hub = process::spawn(|inbox: Inbox<(ProcessId, Pid<()>)>| loop {
                if let Signal::Msg((spoke, ack)) = inbox.recv() {
                    process::link(&spoke).unwrap();
                    ack.send(());
                }
            });
            let spokes: Vec<_> = (0..6).map(|_| process::spawn(idle)).collect();
            // Monitors in spawn order; links in another: the Downs follow the links.
            for spoke in &spokes {
                process::monitor(spoke);
            }
            let link_order = [3, 0, 5, 1, 4, 2];
            for &at in &link_order {
                hub.send((spokes[at].id(), inbox.pid()));
                assert!(matches!(inbox.recv(), Signal::Msg(())));
            }
            process::exit(&hub, Reason::custom("hub down"));
            let order: Vec<ProcessId> = (0..6).map(|_| next_down(&inbox).0).collect();
            let expected: Vec<ProcessId> = link_order.iter().map(|&at| spokes[at].id()).collect();
            assert_eq!(order, expected);
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

/// Spawns `left` more links of a chain, each linked to the one before; the last sends its
/// identity to `main`.
fn link_in(left: usize, main: Pid<ProcessId>, drops: Arc<AtomicUsize>) {
    let counted = Counted(drops.clone());
    process::spawn_link(move |inbox: Inbox<()>| {
        let _counted = counted;
        if left == 1 {
            main.send(process::self_id());
        } else {
            link_in(left - 1, main, drops);
        }
        idle(inbox);
    });
}

/// Starts a chain of `length` processes, each linked to the next (all but the first count
/// their drops); returns the first and the last.
fn chain(inbox: &Inbox<ProcessId>, length: usize, drops: Arc<AtomicUsize>) -> (Pid<()>, ProcessId) {
    let main = inbox.pid();
    let first = process::spawn(move |inbox: Inbox<()>| {
        link_in(length - 1, main, drops);
        idle(inbox);
    });
    (first, inbox.recv().into_msg().unwrap())
}

#[test]
fn a_chain_of_a_hundred_thousand_linked_processes_ends_from_one_exit() {
    const CHAIN: usize = 100_000;
    let drops = Arc::new(AtomicUsize::new(0));
    let counter = drops.clone();
    let status = program(2, move |inbox: Inbox<ProcessId>| {
        let (first, last) = chain(&inbox, CHAIN, counter);
        process::monitor(&last);
        process::exit(&first, Reason::Kill);
        // Every link has ended by the time `exit` returns.
        assert!(!process::is_alive(&last));
        assert_eq!(next_down(&inbox), (last, Reason::Killed));
    });
    assert_eq!(status, 0);
    // `run` returned after every process fiber unwound.
    assert_eq!(drops.load(Ordering::SeqCst), CHAIN - 1);
}

#[test]
fn a_long_cascade_of_exits_lets_other_fibers_run_before_exit_returns() {
    // More processes than the reductions of one slice: the caller yields at least once.
    const CHAIN: usize = 10_000;
    let drops = Arc::new(AtomicUsize::new(0));
    let counter = drops.clone();
    let status = program(1, move |inbox: Inbox<ProcessId>| {
        let (first, last) = chain(&inbox, CHAIN, counter);
        let seen = Arc::new(Mutex::new(None));
        let observer = {
            let (first, last, seen) = (first.id(), last.clone(), seen.clone());
            fibra_runtime::spawn(move || {
                *seen.lock().unwrap() = Some((process::is_alive(first), process::is_alive(last)));
            })
        };
        process::exit(&first, Reason::Kill);
        assert_eq!(
            *seen.lock().unwrap(),
            Some((false, true)),
            "another fiber ran in the middle of the cascade"
        );
        assert!(!process::is_alive(&last));
        observer.join().unwrap();
    });
    assert_eq!(status, 0);
    assert_eq!(drops.load(Ordering::SeqCst), CHAIN - 1);
}

enum Ring {
    Next(Pid<Ring>),
    Token(u64),
}

#[test]
fn one_exit_ends_a_ring_of_linked_processes_that_keep_passing_a_token() {
    const RING: usize = 16;
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let main = inbox.pid();
            let members: Vec<Pid<Ring>> = (0..RING)
                .map(|_| {
                    let main = main.clone();
                    process::spawn(move |inbox: Inbox<Ring>| {
                        let Signal::Msg(Ring::Next(next)) = inbox.recv() else {
                            unreachable!("the successor comes first")
                        };
                        process::link(&next).unwrap();
                        main.send(());
                        loop {
                            if let Signal::Msg(Ring::Token(n)) = inbox.recv() {
                                next.send(Ring::Token(n + 1));
                            }
                        }
                    })
                })
                .collect();
            for (at, member) in members.iter().enumerate() {
                process::monitor(member);
                member.send(Ring::Next(members[(at + 1) % RING].clone()));
            }
            for _ in 0..RING {
                assert!(matches!(
                    inbox.receive(|s| matches!(s, Signal::Msg(()))),
                    Signal::Msg(())
                ));
            }
            members[0].send(Ring::Token(0));
            // Let the token rotate a while, then stop the ring with one signal.
            for _ in 0..100 {
                fibra_runtime::yield_now();
            }
            process::exit(&members[0], Reason::custom("stop"));
            assert!(members.iter().all(|member| !process::is_alive(member)));
            let mut ended: Vec<ProcessId> = (0..RING)
                .map(|_| {
                    let (pid, reason) = next_down(&inbox);
                    assert_eq!(reason, Reason::custom("stop"));
                    pid
                })
                .collect();
            ended.sort_by_key(ProcessId::to_string);
            let mut all: Vec<ProcessId> = members.iter().map(Pid::id).collect();
            all.sort_by_key(ProcessId::to_string);
            assert_eq!(ended, all);
            assert!(inbox.try_recv().is_none());
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_process_killed_before_its_fiber_first_ran_runs_none_of_its_code() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let status = program(1, move |_: Inbox<()>| {
        // On one worker the new process cannot start before the caller waits or yields.
        let victim = process::spawn(move |_: Inbox<()>| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        process::exit(&victim, Reason::Kill);
    });
    assert_eq!(status, 0);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}
