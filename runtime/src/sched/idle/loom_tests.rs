//! Model-checks the sleep protocol: work pushed while workers go to sleep is always taken.

use super::*;
use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;

/// One worker's idle loop, as `Local::idle` and `run_worker` run it, over a one-item queue.
fn worker(
    index: usize,
    idle: &Idle,
    parkers: &[Parker],
    work: &AtomicUsize,
    taken: &AtomicUsize,
    stop: &AtomicBool,
    pusher: &thread::Thread,
) {
    let mut searching = false;
    loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if work
            .compare_exchange(1, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            taken.fetch_add(1, Ordering::SeqCst);
            pusher.unpark();
            if searching {
                idle.found_work(parkers);
                searching = false;
            }
            continue;
        }
        if !searching {
            idle.start_searching();
        }
        idle.prepare_sleep(index);
        let woken = if stop.load(Ordering::SeqCst) || work.load(Ordering::Relaxed) != 0 {
            idle.cancel_sleep(index)
        } else {
            idle.sleep_on(index, &parkers[index])
        };
        searching = woken == Woken::Searching;
    }
}

#[test]
fn loom_pushed_work_is_never_left_with_every_worker_asleep() {
    model(|| {
        let idle = Arc::new(Idle::new(2));
        let parkers = Arc::new([Parker::new(), Parker::new()]);
        let work = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let pusher = thread::current();
        let workers: Vec<_> = (0..2)
            .map(|index| {
                let (idle, parkers, work, taken, stop, pusher) = (
                    idle.clone(),
                    parkers.clone(),
                    work.clone(),
                    taken.clone(),
                    stop.clone(),
                    pusher.clone(),
                );
                thread::spawn(move || {
                    parkers[index].bind_current();
                    worker(index, &idle, &*parkers, &work, &taken, &stop, &pusher)
                })
            })
            .collect();

        // Push one item the way `push_unstarted` does: publish, then notify.
        work.store(1, Ordering::Relaxed);
        idle.notify_one(&*parkers);
        // A lost wake-up leaves every thread parked, which loom reports as a deadlock.
        while taken.load(Ordering::SeqCst) == 0 {
            thread::park();
        }

        stop.store(true, Ordering::SeqCst);
        for parker in parkers.iter() {
            parker.unpark();
        }
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(taken.load(Ordering::SeqCst), 1);
    });
}

/// Explores every interleaving with at most 2 preemptions (loom's `LOOM_MAX_PREEMPTIONS`
/// overrides it); unbounded exploration of these models takes hours.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(2);
    builder.check(f);
}
