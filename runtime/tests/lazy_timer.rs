//! A fiber's timed park reaches the driver's wheel (and takes its hold) only if it outlasts
//! its worker's next look: its periodic check, its going to sleep, or a fiber blocking its
//! thread. Each of those looks is needed for the deadline to wake the fiber at all.

use fibra_runtime::wait::{park_current_until, Deadline};
use fibra_runtime::{Handle, HoldKind, JoinHandle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

/// Parks the calling fiber until `timeout` from now has passed, through timed parks only.
fn park_for(timeout: Duration) {
    let deadline = Deadline::after(timeout);
    while !deadline.has_passed() {
        park_current_until(deadline);
    }
}

/// Runs `f` on a runtime of `workers` workers in a thread of its own, and fails (instead of
/// hanging the test) if it has not returned within a minute: the waits under test hang when
/// their deadline is never armed.
fn finishes(workers: usize, f: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        fibra_testing::on(workers, f);
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("a timed park was never woken by its deadline");
}

/// A fiber in timed parks with an hour-long deadline until it is told to end.
struct HourLongWait {
    fiber: JoinHandle<()>,
    end: Arc<AtomicBool>,
}

impl HourLongWait {
    fn spawn() -> HourLongWait {
        let end = Arc::new(AtomicBool::new(false));
        let told = end.clone();
        let fiber = fibra_runtime::spawn(move || {
            while !told.load(Ordering::SeqCst) {
                park_current_until(Deadline::after(HOUR));
            }
        });
        HourLongWait { fiber, end }
    }

    fn end(self) {
        self.end.store(true, Ordering::SeqCst);
        self.fiber.fiber().unpark();
        self.fiber.join().unwrap();
    }
}

#[test]
fn a_timed_park_woken_before_its_worker_looks_again_takes_no_timer() {
    fibra_testing::on(1, || {
        let waiter = HourLongWait::spawn();
        // The waiter runs and parks; its deadline is only noted.
        fibra_runtime::yield_now();
        assert!(!waiter.fiber.is_finished());
        assert!(Handle::current().holds().is_empty());
        waiter.end();
        assert!(Handle::current().holds().is_empty());
    });
}

#[test]
fn a_busy_worker_arms_a_long_timed_park_and_its_hold() {
    fibra_testing::on(1, || {
        let waiter = HourLongWait::spawn();
        // This fiber keeps the worker busy: it never sleeps, yet arms the wait.
        let mut turns = 0;
        while Handle::current().holds().is_empty() {
            turns += 1;
            assert!(turns < 1_000, "the wait was not armed within 1000 turns");
            fibra_runtime::yield_now();
        }
        let holds = Handle::current().holds();
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].kind, HoldKind::Timer);
        assert_eq!(holds[0].owner, Some(waiter.fiber.fiber().id().as_u64()));
        assert!(holds[0].location.file().ends_with("lazy_timer.rs"));
        waiter.end();
        assert!(Handle::current().holds().is_empty());
    });
}

#[test]
fn a_timed_park_times_out_on_a_worker_that_never_sleeps() {
    finishes(1, || {
        let waiter = fibra_runtime::spawn(|| park_for(Duration::from_millis(2)));
        while !waiter.is_finished() {
            fibra_runtime::yield_now();
        }
        waiter.join().unwrap();
    });
}

#[test]
fn a_deadline_that_passed_before_its_idle_worker_armed_it_wakes_the_fiber() {
    // Shorter than the worker's spin before it sleeps: the deadline has passed when it is
    // armed, and the fiber it wakes must run before the worker sleeps.
    finishes(1, || {
        for _ in 0..100 {
            park_for(Duration::from_micros(5));
        }
    });
}

#[test]
fn a_timed_park_of_an_unwinding_fiber_times_out() {
    struct ParksOnDrop;
    impl Drop for ParksOnDrop {
        fn drop(&mut self) {
            // Unwinding: this park blocks the worker's thread.
            park_for(Duration::from_millis(2));
        }
    }
    for workers in [1, 2] {
        finishes(workers, || {
            let unwinding = fibra_runtime::spawn(|| {
                let _parks = ParksOnDrop;
                panic!("unwinding through a timed park");
            });
            assert!(unwinding.join().is_err());
        });
    }
}

/// The runtime's holds: (futures, timers).
fn holds() -> (usize, usize) {
    let holds = Handle::current().holds();
    let count = |kind| holds.iter().filter(|hold| hold.kind == kind).count();
    assert_eq!(
        count(HoldKind::Future) + count(HoldKind::Timer),
        holds.len()
    );
    (count(HoldKind::Future), count(HoldKind::Timer))
}

#[test]
fn a_timed_block_on_holds_as_a_future_and_its_deadline_as_a_lazily_armed_timer() {
    fibra_testing::on(1, || {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let waiter = fibra_runtime::spawn(move || {
            fibra_runtime::block_on_until(rx, Deadline::after(HOUR)).map(Result::unwrap)
        });
        fibra_runtime::yield_now();
        assert_eq!(holds(), (1, 0), "the deadline is only noted at first");
        let mut turns = 0;
        while holds() != (1, 1) {
            turns += 1;
            assert!(
                turns < 1_000,
                "the deadline was not armed within 1000 turns"
            );
            fibra_runtime::yield_now();
        }
        tx.send(7).unwrap();
        assert_eq!(waiter.join().unwrap(), Ok(7));
        assert!(Handle::current().holds().is_empty());
    });
}

#[test]
fn a_timed_block_on_times_out_on_a_worker_that_never_sleeps() {
    finishes(1, || {
        let waiter = fibra_runtime::spawn(|| {
            let soon = Deadline::after(Duration::from_millis(2));
            fibra_runtime::block_on_until(std::future::pending::<()>(), soon)
        });
        while !waiter.is_finished() {
            fibra_runtime::yield_now();
        }
        assert_eq!(waiter.join().unwrap(), Err(fibra_runtime::wait::TimedOut));
        assert!(Handle::current().holds().is_empty());
    });
}

#[test]
fn a_timed_block_on_of_a_future_that_always_wakes_itself_times_out() {
    finishes(1, || {
        let busy = std::future::poll_fn(|cx| {
            cx.waker().wake_by_ref();
            std::task::Poll::<()>::Pending
        });
        let soon = Deadline::after(Duration::from_millis(2));
        assert_eq!(
            fibra_runtime::block_on_until(busy, soon),
            Err(fibra_runtime::wait::TimedOut)
        );
    });
}

#[test]
fn a_worker_whose_slices_are_long_arms_a_timed_park_long_before_its_periodic_check() {
    // Slices of ten checkpoints half a millisecond apart. The periodic check comes every 61
    // scheduling steps and arms the waits noted before the previous one, so on its own it
    // would arm the wait after 1 220 checkpoints; the monitor's requests, once a tick (at most
    // 10 ms), arm it within a few dozen.
    const SLICE: u32 = 10;
    let runtime = fibra_runtime::Runtime::builder()
        .workers(1)
        .reductions(SLICE)
        .build()
        .unwrap();
    let checkpoints = runtime.block_on(|| {
        let waiter = fibra_runtime::spawn(|| park_for(Duration::from_millis(1)));
        let mut checkpoints = 0u32;
        while !waiter.is_finished() {
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_micros(500) {}
            fibra_runtime::checkpoint();
            checkpoints += 1;
        }
        checkpoints
    });
    assert!(
        checkpoints < 61 * SLICE,
        "the wait was armed only after {checkpoints} checkpoints"
    );
}
