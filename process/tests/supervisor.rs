//! Supervisors: the three strategies, restart policies, and restart intensity.

mod common;

use common::program;
use fibra_process::{
    self as process, ChildSpec, ChildState, Inbox, Pid, ProcessId, Reason, Restart, Shutdown,
    Signal, Strategy, Supervisor, SupervisorRequest,
};
use fibra_testing::WORKER_COUNTS;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn idle(inbox: Inbox<()>) {
    loop {
        inbox.recv();
    }
}

fn worker(id: &str) -> ChildSpec {
    ChildSpec::new(id, || process::spawn_link(idle).id())
}

/// Each child's id and running process, as the supervisor lists them.
fn listed(sup: &Pid<SupervisorRequest>) -> Vec<(String, ChildState)> {
    let which = process::call(
        sup,
        SupervisorRequest::WhichChildren,
        Duration::from_secs(30),
    );
    which.unwrap()
}

fn ids(listed: &[(String, ChildState)]) -> Vec<&str> {
    listed.iter().map(|(id, _)| id.as_str()).collect()
}

fn children(sup: &Pid<SupervisorRequest>) -> Vec<Option<ProcessId>> {
    listed(sup)
        .into_iter()
        .map(|(_, state)| state.pid().cloned())
        .collect()
}

/// Waits until the supervisor reports children that satisfy `done`.
fn until(
    sup: &Pid<SupervisorRequest>,
    done: impl Fn(&[Option<ProcessId>]) -> bool,
) -> Vec<Option<ProcessId>> {
    loop {
        let now = children(sup);
        if done(&now) {
            return now;
        }
        fibra_runtime::yield_now();
    }
}

/// Waits until the supervisor reports children that satisfy `done`, all running.
fn running(
    sup: &Pid<SupervisorRequest>,
    done: impl Fn(&[Option<ProcessId>]) -> bool,
) -> Vec<ProcessId> {
    until(sup, |now| all_running(now) && done(now))
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

fn all_running(now: &[Option<ProcessId>]) -> bool {
    now.iter().all(Option::is_some)
}

fn three(strategy: Strategy) -> Pid<SupervisorRequest> {
    Supervisor::new(strategy)
        .intensity(10, Duration::from_secs(3600))
        .child(worker("a"))
        .child(worker("b"))
        .child(worker("c"))
        .spawn()
}

#[test]
fn one_for_one_restarts_only_the_child_that_ended() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let sup = three(Strategy::OneForOne);
            let before = running(&sup, |_| true);
            process::exit(&before[1], Reason::custom("crash"));
            let after = running(&sup, |now| now[1].as_ref() != Some(&before[1]));
            assert_eq!((&after[0], &after[2]), (&before[0], &before[2]));
            assert!(after.iter().all(process::is_alive));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn one_for_all_restarts_every_child() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let sup = three(Strategy::OneForAll);
            let before = running(&sup, |_| true);
            process::exit(&before[1], Reason::custom("crash"));
            let after = running(&sup, |now| {
                now.iter().zip(&before).all(|(n, b)| n.as_ref() != Some(b))
            });
            assert!(before.iter().all(|pid| !process::is_alive(pid)));
            assert!(after.iter().all(process::is_alive));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn rest_for_one_restarts_the_child_and_those_started_after_it() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let sup = three(Strategy::RestForOne);
            let before = running(&sup, |_| true);
            process::exit(&before[1], Reason::custom("crash"));
            let after = running(&sup, |now| {
                now[1].as_ref() != Some(&before[1]) && now[2].as_ref() != Some(&before[2])
            });
            assert_eq!(after[0], before[0]);
            assert!(process::is_alive(&before[0]));
            assert!(!process::is_alive(&before[2]));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn more_restarts_than_the_intensity_end_the_supervisor_with_shutdown() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let sup = Supervisor::new(Strategy::OneForOne)
                .intensity(2, Duration::from_secs(3600))
                .child(worker("a"))
                .child(worker("b"))
                .spawn();
            let mref = process::monitor(&sup);
            let mut current = running(&sup, |_| true);
            for restart in 1..=2 {
                process::exit(&current[0], Reason::custom("crash"));
                let old = current[0].clone();
                current = running(&sup, |now| now[0].as_ref() != Some(&old));
                assert!(
                    process::is_alive(&sup),
                    "restart {restart} is within the intensity"
                );
            }
            process::exit(&current[0], Reason::custom("crash"));
            match inbox.recv() {
                Signal::Down {
                    mref: m, reason, ..
                } => assert_eq!((m, reason), (mref, Reason::Shutdown)),
                _ => unreachable!(),
            }
            assert!(
                current.iter().all(|pid| !process::is_alive(pid)),
                "children terminated"
            );
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn transient_children_restart_only_after_an_abnormal_end_and_temporary_never() {
    let status = program(2, |_: Inbox<()>| {
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(3600))
            .child(worker("transient").restart(Restart::Transient))
            .child(worker("temporary").restart(Restart::Temporary))
            .spawn();
        let before = running(&sup, |_| true);
        process::exit(&before[1], Reason::custom("crash"));
        until(&sup, |now| now.len() == 1);
        process::exit(&before[0], Reason::Shutdown);
        until(&sup, |now| now[0].is_none());
        // A transient child restarts after an abnormal end.
        let sup2 = Supervisor::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(3600))
            .child(worker("transient").restart(Restart::Transient))
            .spawn();
        let first = running(&sup2, |_| true);
        process::exit(&first[0], Reason::custom("crash"));
        let again = running(&sup2, |now| now[0].as_ref() != Some(&first[0]));
        assert!(process::is_alive(&again[0]));
    });
    assert_eq!(status, 0);
}

#[test]
fn a_temporary_child_that_ended_is_no_longer_listed() {
    let status = program(2, |_: Inbox<()>| {
        let temporary = || worker("t").restart(Restart::Temporary);
        let supervise = |strategy, children: [ChildSpec; 3]| {
            let sup = Supervisor::new(strategy).intensity(10, Duration::from_secs(3600));
            children.into_iter().fold(sup, Supervisor::child).spawn()
        };
        // `exit` returns once the supervisor has the child's `Exit`, which it handles before
        // the `WhichChildren` sent after it.

        // Ended by itself.
        let sup = supervise(Strategy::OneForOne, [worker("a"), temporary(), worker("c")]);
        let before = running(&sup, |_| true);
        process::exit(&before[1], Reason::custom("crash"));
        let after = listed(&sup);
        assert_eq!(ids(&after), ["a", "c"]);
        assert_eq!(after[0].1.pid(), Some(&before[0]));
        assert_eq!(after[1].1.pid(), Some(&before[2]));

        // Terminated by the restart of a child started before it.
        let sup = supervise(
            Strategy::RestForOne,
            [worker("a"), temporary(), worker("c")],
        );
        let before = running(&sup, |_| true);
        process::exit(&before[0], Reason::custom("crash"));
        let after = listed(&sup);
        assert_eq!(ids(&after), ["a", "c"]);
        assert!(after
            .iter()
            .all(|(_, state)| state.pid().is_some_and(process::is_alive)));
        assert!(!process::is_alive(&before[1]));

        // Terminated by the restart of a child started after it.
        let sup = supervise(Strategy::OneForAll, [temporary(), worker("b"), worker("c")]);
        let before = running(&sup, |_| true);
        process::exit(&before[2], Reason::custom("crash"));
        let after = listed(&sup);
        assert_eq!(ids(&after), ["b", "c"]);
        assert!(after
            .iter()
            .all(|(_, state)| state.pid().is_some_and(process::is_alive)));
        assert!(before.iter().all(|pid| !process::is_alive(pid)));
    });
    assert_eq!(status, 0);
}

#[test]
fn a_supervisor_ends_with_its_parents_exit_signal_and_takes_its_children() {
    let status = program(2, |inbox: Inbox<(ProcessId, Vec<ProcessId>)>| {
        let me = inbox.pid();
        process::spawn(move |_: Inbox<()>| {
            let sup = Supervisor::new(Strategy::OneForOne)
                .child(worker("a"))
                .child(worker("b"))
                .spawn_link();
            me.send((sup.id(), running(&sup, |_| true)));
            process::exit_self(Reason::custom("parent gone"));
        });
        let (sup, kids) = inbox.recv().into_msg().unwrap();
        process::monitor(&sup);
        match inbox.recv() {
            Signal::Down { reason, .. } => {
                assert!(reason == Reason::custom("parent gone") || reason == Reason::Noproc);
            }
            _ => unreachable!(),
        }
        assert!(kids.iter().all(|kid| !process::is_alive(kid)));
    });
    assert_eq!(status, 0);
}

/// What a signal is, for an assertion message.
fn describe<M>(signal: Option<Signal<M>>) -> Option<String> {
    signal.map(|signal| match signal {
        Signal::Exit { from, reason } => format!("Exit from {from}: {reason:?}"),
        Signal::Down { pid, reason, .. } => format!("Down {pid}: {reason:?}"),
        Signal::Msg(_) => "a message".into(),
    })
}

/// A generous bound on an event that must come.
const EVENTUALLY: Duration = Duration::from_secs(30);

/// A bound on an event that must not come: long enough for a wrong supervisor to act.
const NOTHING_WITHIN: Duration = Duration::from_millis(500);

/// A transient child that ended normally while its supervisor was still in `start`, linked
/// to it (`spawn_link`) or not (`spawn`): not restarted, and the supervisor lives on.
fn a_transient_child_that_ended_before_start_returned_is_not_restarted(linked: bool) {
    let status = program(2, move |inbox: Inbox<()>| {
        process::trap_exit(true);
        let starts = Arc::new(AtomicUsize::new(0));
        let counted = starts.clone();
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(
                ChildSpec::new("job", move || {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let pid = if linked {
                        process::spawn_link(|_: Inbox<()>| {})
                    } else {
                        process::spawn(|_: Inbox<()>| {})
                    };
                    // The child ends while its supervisor is still in `start`.
                    fibra_runtime::sleep(Duration::from_millis(20));
                    pid.id()
                })
                .restart(Restart::Transient),
            )
            .spawn_link();
        let got = describe(inbox.recv_timeout(NOTHING_WITHIN));
        assert!(got.is_none(), "supervisor ended: {got:?}");
        assert_eq!(until(&sup, |now| now[0].is_none()), [None]);
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_transient_child_that_ends_normally_before_start_links_it_is_not_restarted() {
    a_transient_child_that_ended_before_start_returned_is_not_restarted(true);
}

#[test]
fn an_unlinked_transient_child_that_ended_normally_is_not_restarted() {
    a_transient_child_that_ended_before_start_returned_is_not_restarted(false);
}

#[test]
fn a_permanent_child_that_crashes_before_start_links_it_is_restarted_once() {
    let status = program(2, |inbox: Inbox<()>| {
        process::trap_exit(true);
        let starts = Arc::new(AtomicUsize::new(0));
        let counted = starts.clone();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(3600))
            .child(ChildSpec::new("w", move || {
                let crash = counted.fetch_add(1, Ordering::SeqCst) == 0;
                let pid = process::spawn_link(move |inbox: Inbox<()>| {
                    if crash {
                        process::exit_self(Reason::custom("boom"));
                    }
                    idle(inbox);
                });
                fibra_runtime::sleep(Duration::from_millis(20));
                pid.id()
            }))
            .spawn_link();
        let got = describe(inbox.recv_timeout(NOTHING_WITHIN));
        assert!(got.is_none(), "supervisor ended: {got:?}");
        running(&sup, |_| true);
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        process::exit(&sup, Reason::Shutdown);
        match inbox.recv_timeout(EVENTUALLY) {
            Some(Signal::Exit { from, reason }) => {
                assert_eq!((from, reason), (sup.id(), Reason::Shutdown));
            }
            other => panic!("{:?}", describe(other)),
        }
    });
    assert_eq!(status, 0);
}

#[test]
fn many_supervisors_whose_transient_child_ends_at_once_all_stay_up() {
    const SUPERVISORS: usize = 500;
    let status = program(2, |inbox: Inbox<()>| {
        process::trap_exit(true);
        let sups: Vec<_> = (0..SUPERVISORS)
            .map(|_| {
                Supervisor::new(Strategy::OneForOne)
                    .child(
                        ChildSpec::new("job", || process::spawn_link(|_: Inbox<()>| {}).id())
                            .restart(Restart::Transient),
                    )
                    .spawn_link()
            })
            .collect();
        for sup in &sups {
            until(sup, |now| now[0].is_none());
        }
        let got = describe(inbox.recv_timeout(NOTHING_WITHIN));
        assert!(got.is_none(), "a supervisor ended: {got:?}");
        let up = sups.iter().filter(|sup| process::is_alive(*sup)).count();
        assert_eq!(up, SUPERVISORS);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_supervisor_ends_when_its_parent_ends_normally_and_shuts_its_children_down() {
    type Started = (ProcessId, Vec<ProcessId>, Pid<()>);
    let status = program(2, |inbox: Inbox<Started>| {
        let me = inbox.pid();
        process::spawn(move |parent: Inbox<()>| {
            let sup = Supervisor::new(Strategy::OneForOne)
                .child(worker("a"))
                .spawn_link();
            me.send((sup.id(), running(&sup, |_| true), parent.pid()));
            parent.recv();
        });
        let (sup, kids, parent) = inbox.recv().into_msg().unwrap();
        let kid = process::monitor(&kids[0]);
        let supervisor = process::monitor(&sup);
        parent.send(());
        let mut downs = Vec::new();
        for _ in 0..2 {
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Down { mref, reason, .. }) => downs.push((mref, reason)),
                other => panic!("the supervisor outlived its parent: {:?}", describe(other)),
            }
        }
        assert_eq!(
            downs,
            [(kid, Reason::Shutdown), (supervisor, Reason::Normal)]
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_supervisor_ignores_exits_from_linked_processes_other_than_its_parent_and_children() {
    let status = program(2, |inbox: Inbox<()>| {
        process::trap_exit(true);
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(worker("a"))
            .spawn_link();
        let before = running(&sup, |_| true);
        let target = sup.clone();
        let bystander = process::spawn(move |_: Inbox<()>| {
            process::link(&target).unwrap();
            process::exit_self(Reason::custom("bystander"));
        });
        let got = describe(inbox.recv_timeout(NOTHING_WITHIN));
        assert!(got.is_none(), "supervisor ended: {got:?}");
        assert!(!process::is_alive(&bystander));
        assert_eq!(running(&sup, |_| true), before);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_nested_supervisor_shuts_its_children_down_in_reverse_order() {
    let status = program(2, |inbox: Inbox<()>| {
        let inner = || {
            Supervisor::new(Strategy::OneForOne)
                .child(ChildSpec::new("w1", || {
                    let pid = process::spawn_link(idle);
                    process::register("nested-w1", &pid).unwrap();
                    pid.id()
                }))
                .child(ChildSpec::new("w2", || {
                    let pid = process::spawn_link(idle);
                    process::register("nested-w2", &pid).unwrap();
                    pid.id()
                }))
                .spawn_link()
                .id()
        };
        let top = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::supervisor("inner", inner))
            .spawn();
        while process::whereis_id("nested-w2").is_none() {
            fibra_runtime::yield_now();
        }
        let w1 = process::monitor(process::whereis_id("nested-w1").unwrap());
        let w2 = process::monitor(process::whereis_id("nested-w2").unwrap());
        process::exit(&top, Reason::Shutdown);
        let mut downs = Vec::new();
        for _ in 0..2 {
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Down { mref, reason, .. }) => downs.push((mref, reason)),
                other => panic!("{:?}", describe(other)),
            }
        }
        assert_eq!(downs, [(w2, Reason::Shutdown), (w1, Reason::Shutdown)]);
    });
    assert_eq!(status, 0);
}

#[test]
fn a_worker_that_traps_exits_gets_time_to_end_on_shutdown() {
    let status = program(2, |inbox: Inbox<()>| {
        let me = inbox.pid();
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::new("tidy", move || {
                let me = me.clone();
                process::spawn_link(move |inbox: Inbox<()>| {
                    process::trap_exit(true);
                    me.send(());
                    loop {
                        if let Signal::Exit { reason, .. } = inbox.recv() {
                            // Cleaning up takes a while: a wait, so a cancellation point.
                            fibra_runtime::sleep(Duration::from_millis(20));
                            process::exit_self(reason);
                        }
                    }
                })
                .id()
            }))
            .spawn();
        let tidy = process::monitor(&running(&sup, |_| true)[0]);
        inbox.recv(); // it traps exits
        process::exit(&sup, Reason::Shutdown);
        match inbox.recv_timeout(EVENTUALLY) {
            Some(Signal::Down { mref, reason, .. }) => {
                assert_eq!((mref, reason), (tidy, Reason::Shutdown));
            }
            other => panic!("{:?}", describe(other)),
        }
    });
    assert_eq!(status, 0);
}

#[test]
fn a_child_is_killed_after_its_shutdown_timeout_or_at_once_with_brutal_kill() {
    let status = program(2, |inbox: Inbox<()>| {
        let me = inbox.pid();
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(worker("brutal").shutdown(Shutdown::BrutalKill))
            .child(
                ChildSpec::new("stubborn", move || {
                    let me = me.clone();
                    process::spawn_link(move |inbox: Inbox<()>| {
                        process::trap_exit(true);
                        me.send(());
                        idle(inbox);
                    })
                    .id()
                })
                .shutdown(Shutdown::Timeout(Duration::from_millis(50))),
            )
            .spawn();
        let now = running(&sup, |_| true);
        let (brutal, stubborn) = (process::monitor(&now[0]), process::monitor(&now[1]));
        inbox.recv(); // the stubborn one traps exits
        process::exit(&sup, Reason::Shutdown);
        let mut downs = Vec::new();
        for _ in 0..2 {
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Down { mref, reason, .. }) => downs.push((mref, reason)),
                other => panic!("{:?}", describe(other)),
            }
        }
        assert_eq!(
            downs,
            [(stubborn, Reason::Killed), (brutal, Reason::Killed)]
        );
    });
    assert_eq!(status, 0);
}

#[test]
fn a_start_that_panics_ends_the_started_children_in_reverse_order_first() {
    let status = program(2, |inbox: Inbox<&'static str>| {
        process::trap_exit(true);
        let me = inbox.pid();
        let trapping = Arc::new(AtomicUsize::new(0));
        let reporting = |name: &'static str| {
            let (me, trapping) = (me.clone(), trapping.clone());
            ChildSpec::new(name, move || {
                let (me, trapping) = (me.clone(), trapping.clone());
                process::spawn_link(move |inbox: Inbox<()>| {
                    process::trap_exit(true);
                    trapping.fetch_add(1, Ordering::SeqCst);
                    loop {
                        if let Signal::Exit { reason, .. } = inbox.recv() {
                            assert_eq!(reason, Reason::Shutdown, "{name} ended by its supervisor");
                            me.send(name);
                            process::exit_self(reason);
                        }
                    }
                })
                .id()
            })
        };
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(reporting("a"))
            .child(reporting("b"))
            .child(ChildSpec::new("c", move || {
                while trapping.load(Ordering::SeqCst) < 2 {
                    fibra_runtime::yield_now();
                }
                panic!("c cannot start")
            }))
            .spawn_link();
        let mut got = Vec::new();
        for _ in 0..3 {
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Msg(name)) => got.push(name.to_owned()),
                Some(Signal::Exit { from, reason }) if from == sup.id() => {
                    got.push(reason.to_string());
                }
                other => panic!("{:?}", describe(other)),
            }
        }
        assert_eq!(got, ["b", "a", "{panic,\"c cannot start\"}"]);
    });
    assert_eq!(status, 0);
}

/// A start that returns the supervisor's own id instead of a new process (a user's mistake):
/// the supervisor linked itself to itself, taking its one lock twice, and spun its worker
/// thread for ever. It ends now as after a start that panics, saying what was wrong.
#[test]
fn a_start_that_returns_the_supervisors_own_id_ends_it_with_a_panic() {
    let status = program(2, |inbox: Inbox<()>| {
        process::trap_exit(true);
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::new("itself", process::self_id))
            .spawn_link();
        match inbox.recv_timeout(EVENTUALLY) {
            Some(Signal::Exit { from, reason }) if from == sup.id() => {
                let Reason::Panic(message) = reason else {
                    panic!("the supervisor ended with {reason}");
                };
                assert!(message.contains("child `itself`"), "{message}");
                assert!(message.contains("supervisor's own id"), "{message}");
            }
            other => panic!("{:?}", describe(other)),
        }
    });
    assert_eq!(status, 0);
}

/// A child killed while it waits unwinds after its end was signalled; its restart waits for
/// that, so the new child never finds what the old one held still held (here: its `Drop`
/// still running). Restarts raced the unwinding before.
#[test]
fn a_restarted_child_starts_after_the_old_one_has_run_its_destructors() {
    /// Counts its drop once the drop (a slow one) is done.
    struct Held(Arc<AtomicUsize>);
    impl Drop for Held {
        fn drop(&mut self) {
            // Blocks the worker thread a moment, as a slow destructor does.
            std::thread::sleep(Duration::from_millis(20));
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    const KILLS: usize = 5;
    let status = program(2, |inbox: Inbox<()>| {
        let (starts, dropped, overlaps) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let spec = {
            let (starts, dropped, overlaps) = (starts.clone(), dropped.clone(), overlaps.clone());
            ChildSpec::new("holder", move || {
                let started_before = starts.fetch_add(1, Ordering::SeqCst);
                if dropped.load(Ordering::SeqCst) != started_before {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let held = Held(dropped.clone());
                process::spawn_link(move |inbox: Inbox<()>| {
                    let _held = held;
                    idle(inbox);
                })
                .id()
            })
        };
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(KILLS, Duration::from_secs(3600))
            .child(spec)
            .spawn();
        let mut child = running(&sup, |_| true)[0].clone();
        for _ in 0..KILLS {
            process::exit(&child, Reason::Kill);
            child = running(&sup, |now| now[0].as_ref() != Some(&child))[0].clone();
        }
        process::exit(&sup, Reason::Shutdown);
        drop(inbox);
        assert_eq!(starts.load(Ordering::SeqCst), KILLS + 1);
        assert_eq!(
            overlaps.load(Ordering::SeqCst),
            0,
            "restarts while the old child unwound"
        );
    });
    assert_eq!(status, 0);
}

/// The calls of a child's `start`, in order: the process each started, `None` for one that
/// panicked.
#[derive(Clone, Default)]
struct Starts(Arc<Mutex<Vec<Option<ProcessId>>>>);

impl Starts {
    fn calls(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn alive(&self) -> Vec<ProcessId> {
        let calls = self.0.lock().unwrap();
        calls
            .iter()
            .flatten()
            .filter(|pid| process::is_alive(*pid))
            .cloned()
            .collect()
    }

    /// A child whose `start` is recorded here and panics on the calls (counted from 1) for
    /// which `fails` is true.
    fn child(&self, id: &'static str, fails: fn(usize) -> bool) -> ChildSpec {
        let calls = self.0.clone();
        ChildSpec::new(id, move || {
            let call = calls.lock().unwrap().len() + 1;
            let started = (!fails(call)).then(|| process::spawn_link(idle).id());
            calls.lock().unwrap().push(started.clone());
            started.unwrap_or_else(|| panic!("{id} cannot start (call {call})"))
        })
    }
}

fn second_and_third(call: usize) -> bool {
    matches!(call, 2 | 3)
}

fn never(_: usize) -> bool {
    false
}

/// A restart whose start panicked ended the supervisor with that panic; OTP's supervisor
/// tries it again, each try counting against the intensity.
#[test]
fn a_restart_whose_start_panics_is_tried_again_until_it_starts() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let starts = Starts::default();
            let sup = Supervisor::new(Strategy::OneForOne)
                .intensity(5, Duration::from_secs(10))
                .child(starts.child("flaky", second_and_third))
                .spawn();
            let first = running(&sup, |_| true).remove(0);
            process::exit(&first, Reason::custom("crash"));
            let now = running(&sup, |now| now[0].as_ref() != Some(&first));
            assert_eq!(starts.calls(), 4, "started on the 4th call");
            assert_eq!(starts.alive(), now);
            assert!(process::is_alive(&sup));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
fn a_restart_that_keeps_failing_ends_the_supervisor_at_its_intensity() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let (flaky, steady) = (Starts::default(), Starts::default());
            let sup = Supervisor::new(Strategy::OneForOne)
                .intensity(2, Duration::from_secs(3600))
                .child(flaky.child("flaky", second_and_third))
                .child(steady.child("steady", never))
                .spawn();
            let mref = process::monitor(&sup);
            let first = running(&sup, |_| true).remove(0);
            process::exit(&first, Reason::custom("crash"));
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Down {
                    mref: m, reason, ..
                }) => {
                    assert_eq!((m, reason), (mref, Reason::Shutdown));
                }
                other => panic!("{:?}", describe(other)),
            }
            // Two tries within the intensity, the third one beyond it.
            assert_eq!(flaky.calls(), 3);
            assert_eq!((steady.calls(), steady.alive()), (1, vec![]));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

/// Children `a`, `b` (whose start fails on its 2nd and 3rd calls) and `c`; `a` crashes. Each
/// try restarts `b`'s group again, so `a`'s, `b`'s and `c`'s starts are called `calls` times,
/// and each has exactly one process alive: the one listed.
fn a_failed_restart_restarts_the_group_consistently(strategy: Strategy, calls: [usize; 3]) {
    let status = program(2, move |_: Inbox<()>| {
        let starts: [Starts; 3] = Default::default();
        let sup = Supervisor::new(strategy)
            .intensity(10, Duration::from_secs(3600))
            .child(starts[0].child("a", never))
            .child(starts[1].child("b", second_and_third))
            .child(starts[2].child("c", never))
            .spawn();
        let first = running(&sup, |_| true).remove(0);
        process::exit(&first, Reason::custom("crash"));
        let now = running(&sup, |now| now[0].as_ref() != Some(&first));
        assert_eq!(starts.each_ref().map(Starts::calls), calls, "{strategy:?}");
        for (listed, starts) in now.iter().zip(&starts) {
            assert_eq!(starts.alive(), std::slice::from_ref(listed), "{strategy:?}");
        }
        assert!(process::is_alive(&sup));
    });
    assert_eq!(status, 0, "{strategy:?}");
}

#[test]
fn a_failed_one_for_all_restart_restarts_every_child_again() {
    a_failed_restart_restarts_the_group_consistently(Strategy::OneForAll, [4, 4, 2]);
}

#[test]
fn a_failed_rest_for_one_restart_restarts_from_the_child_that_failed() {
    a_failed_restart_restarts_the_group_consistently(Strategy::RestForOne, [2, 4, 2]);
}

/// While a restart keeps failing, the child is listed as restarting and the siblings its
/// group restart stopped as stopped (OTP's `restarting` and `undefined`); once a try
/// succeeds, all run again.
#[test]
fn a_child_whose_restart_failed_is_listed_as_restarting() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |_: Inbox<()>| {
            let can_start = Arc::new(AtomicBool::new(true));
            let flaky = {
                let can_start = can_start.clone();
                ChildSpec::new("flaky", move || {
                    assert!(can_start.load(Ordering::SeqCst), "flaky cannot start now");
                    process::spawn_link(idle).id()
                })
            };
            let sup = Supervisor::new(Strategy::RestForOne)
                .intensity(1_000_000, Duration::from_secs(3600))
                .child(worker("a"))
                .child(flaky)
                .child(worker("c"))
                .spawn();
            let before = running(&sup, |_| true);
            can_start.store(false, Ordering::SeqCst);
            process::exit(&before[0], Reason::custom("crash"));
            let during = listed(&sup);
            assert_eq!(ids(&during), ["a", "flaky", "c"]);
            assert!(matches!(&during[0].1, ChildState::Running(a) if *a != before[0]));
            assert_eq!(during[1].1, ChildState::Restarting);
            assert_eq!(during[2].1, ChildState::Stopped);
            can_start.store(true, Ordering::SeqCst);
            let after = running(&sup, |_| true);
            assert_eq!(after[0], *during[0].1.pid().unwrap());
            assert!(after.iter().all(process::is_alive));
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

/// An exit signal that comes while a restart keeps failing is handled before the next try.
#[test]
fn a_supervisor_whose_restart_keeps_failing_still_shuts_down() {
    for workers in WORKER_COUNTS {
        let status = program(workers, |inbox: Inbox<()>| {
            let me = inbox.pid();
            let (calls, sent) = (
                Arc::new(AtomicUsize::new(0)),
                Arc::new(AtomicBool::new(false)),
            );
            let spec = {
                let (calls, sent) = (calls.clone(), sent.clone());
                ChildSpec::new("hopeless", move || {
                    match calls.fetch_add(1, Ordering::SeqCst) + 1 {
                        1 => return process::spawn_link(idle).id(),
                        // The second try waits for the exit signal to be in the mailbox.
                        3 => {
                            me.send(());
                            while !sent.load(Ordering::SeqCst) {
                                fibra_runtime::yield_now();
                            }
                        }
                        _ => {}
                    }
                    panic!("hopeless cannot start")
                })
            };
            let sup = Supervisor::new(Strategy::OneForOne)
                .intensity(1000, Duration::from_secs(3600))
                .child(spec)
                .spawn();
            let mref = process::monitor(&sup);
            let first = running(&sup, |_| true).remove(0);
            process::exit(&first, Reason::custom("crash"));
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Msg(())) => {}
                other => panic!("no second try: {:?}", describe(other)),
            }
            process::exit(&sup, Reason::Shutdown);
            sent.store(true, Ordering::SeqCst);
            match inbox.recv_timeout(EVENTUALLY) {
                Some(Signal::Down {
                    mref: m, reason, ..
                }) => {
                    assert_eq!((m, reason), (mref, Reason::Shutdown));
                }
                other => panic!("{:?}", describe(other)),
            }
            assert_eq!(
                calls.load(Ordering::SeqCst),
                3,
                "no try after the exit signal"
            );
        });
        assert_eq!(status, 0, "under {workers} workers");
    }
}

#[test]
#[should_panic(expected = "a child with id `b` was added already")]
fn children_with_the_same_id_are_refused() {
    let _ = Supervisor::new(Strategy::OneForOne)
        .child(worker("a"))
        .child(worker("b"))
        .child(worker("b"));
}
