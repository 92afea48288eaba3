//! `JoinHandle::abort`: it cancels that one fiber (and the scopes it opened), its join reports
//! the cancellation, and a result that is already there stays.

use fibra_runtime::{scope, sleep, spawn, spawn_local, yield_now, Builder, CancelGroup};
use fibra_testing::{on_each_worker_count, Counted};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn an_aborted_parked_fiber_unwinds_and_its_join_reports_cancelled() {
    on_each_worker_count(|_| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = Counted(dropped.clone());
        let sleeper = spawn(move || {
            let _guard = guard;
            sleep(HOUR);
        });
        sleeper.abort();
        sleeper.abort(); // twice is once
        let error = sleeper.join().unwrap_err();
        assert!(error.is_cancelled(), "{error}");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        // The joiner was not cancelled with it.
        assert!(!fibra_runtime::is_cancelled());
        sleep(Duration::from_millis(1));
    });
}

#[test]
fn aborting_a_finished_fiber_keeps_its_result() {
    on_each_worker_count(|_| {
        let quick = spawn(|| 7);
        while !quick.is_finished() {
            yield_now();
        }
        quick.abort();
        assert_eq!(quick.join().unwrap(), 7);
    });
}

#[test]
fn a_fiber_that_reaches_no_cancellation_point_after_the_abort_keeps_its_result() {
    on_each_worker_count(|_| {
        let (started, aborted) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s, a) = (started.clone(), aborted.clone());
        let runner = spawn(move || {
            s.store(true, Ordering::SeqCst);
            // `yield_now` is no cancellation point.
            while !a.load(Ordering::SeqCst) {
                yield_now();
            }
            "finished"
        });
        while !started.load(Ordering::SeqCst) {
            yield_now();
        }
        runner.abort();
        aborted.store(true, Ordering::SeqCst);
        assert_eq!(runner.join().unwrap(), "finished");
    });
}

#[test]
fn an_aborted_fiber_that_has_not_started_never_runs() {
    on_each_worker_count(|_| {
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (r, guard) = (ran.clone(), Counted(dropped.clone()));
        // A fresh slice: the spawn below does not use it up, so the spawner goes on running
        // and the fiber, pinned to this worker, cannot start before the abort.
        yield_now();
        let unstarted = spawn_local(move || {
            let _guard = guard;
            r.fetch_add(1, Ordering::SeqCst);
        });
        unstarted.abort();
        assert!(unstarted.join().unwrap_err().is_cancelled());
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the closure ran");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the closure was not dropped once"
        );
    });
}

#[test]
fn abort_cancels_the_children_of_the_scopes_the_fiber_opened_and_nothing_else() {
    on_each_worker_count(|_| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let (d, st) = (dropped.clone(), started.clone());
        let parent = spawn(move || {
            scope(|s| {
                for _ in 0..3 {
                    let (guard, st) = (Counted(d.clone()), st.clone());
                    s.spawn(move || {
                        let _guard = guard;
                        st.fetch_add(1, Ordering::SeqCst);
                        sleep(HOUR);
                    });
                }
                sleep(HOUR);
            })
        });
        // Aborted once the children have started: an unstarted parent would never open the
        // scope.
        while started.load(Ordering::SeqCst) < 3 {
            yield_now();
        }
        let sibling = spawn(|| {
            sleep(Duration::from_millis(2));
            "sibling"
        });
        parent.abort();
        assert!(parent.join().unwrap_err().is_cancelled());
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
        assert_eq!(sibling.join().unwrap(), "sibling");
    });
}

#[test]
fn every_kind_of_spawn_can_be_aborted() {
    on_each_worker_count(|_| {
        let group = CancelGroup::new();
        let handles = [
            Builder::new().name("a").spawn(|| sleep(HOUR)).unwrap(),
            Builder::new().spawn_local(|| sleep(HOUR)).unwrap(),
            Builder::new().spawn_in(&group, || sleep(HOUR)).unwrap(),
            fibra_runtime::Handle::current().spawn(|| sleep(HOUR)),
        ];
        for handle in handles {
            handle.abort();
            assert!(handle.join().unwrap_err().is_cancelled());
        }
    });
}

#[test]
fn an_aborted_join_handle_awaited_from_a_plain_thread_reports_cancelled() {
    let runtime = fibra_testing::runtime(2);
    let handle = runtime.handle();
    let sleeper = handle.spawn(|| sleep(HOUR));
    sleeper.abort();
    let outcome = std::thread::spawn(move || sleeper.join()).join().unwrap();
    assert!(outcome.unwrap_err().is_cancelled());
    runtime.block_on(|| ());
}

#[test]
fn an_aborted_running_fiber_unwinds_at_its_next_cancellation_point() {
    on_each_worker_count(|_| {
        let rounds = Arc::new(AtomicUsize::new(0));
        let counted = rounds.clone();
        let spinner = spawn(move || loop {
            counted.fetch_add(1, Ordering::SeqCst);
            yield_now(); // lets the spawner run on one worker
            fibra_runtime::checkpoint();
        });
        while rounds.load(Ordering::SeqCst) < 3 {
            yield_now();
        }
        spinner.abort();
        assert!(spinner.join().unwrap_err().is_cancelled());
    });
}
