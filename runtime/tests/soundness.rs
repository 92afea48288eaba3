//! The soundness rules around the coroutine boundary: thread-local lifetime at shutdown, panics
//! that escape a fiber's closure, the per-fiber view of `std::thread::panicking`, re-entrant
//! drops at shutdown, and tokio context guards across parks.

use fibra_runtime::{current_worker, park, scope, spawn, spawn_local, yield_now, Runtime};
use fibra_testing::{on, runtime};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3600);

/// Set by the destructor of the worker thread-local that `a_scope_child_never_outlives...`
/// lends to its children.
static LENT_DESTROYED: AtomicBool = AtomicBool::new(false);
/// Set when such a child ran after that destructor.
static RAN_AFTER_DESTROY: AtomicBool = AtomicBool::new(false);

struct Lent(u64);

impl Drop for Lent {
    fn drop(&mut self) {
        LENT_DESTROYED.store(true, Ordering::SeqCst);
    }
}

thread_local! {
    static LENT: Lent = const { Lent(7) };
}

#[test]
fn a_scope_child_never_outlives_the_thread_local_it_borrows() {
    // A fiber on one worker lends its thread's `LENT` to scope children; at shutdown that
    // worker must not exit (destroying `LENT`) while a child still runs elsewhere. Each child
    // keeps running for a while per slice, so an early exit would be seen.
    let mut spread = false;
    for _attempt in 0..6 {
        // The children spin without a cancellation point, so shutdown's unwinding cannot end
        // them: after its (short) wait they are abandoned still running, the case this is about.
        let runtime = Runtime::builder()
            .workers(2)
            .shutdown_timeout(Duration::from_millis(10))
            .build()
            .unwrap()
            .into_background()
            .unwrap();
        let owner_at = Arc::new(Mutex::new(None));
        let child_at = Arc::new(Mutex::new(Vec::new()));
        let (owner, children) = (owner_at.clone(), child_at.clone());
        let (started_tx, started_rx) = mpsc::channel();
        drop(runtime.handle().spawn(move || {
            *owner.lock().unwrap() = current_worker();
            LENT.with(|lent| {
                scope(|s| {
                    for _ in 0..4 {
                        let (children, started) = (children.clone(), started_tx.clone());
                        s.spawn(move || {
                            assert_eq!(lent.0, 7);
                            children.lock().unwrap().push(current_worker());
                            let _ = started.send(());
                            loop {
                                let until = Instant::now() + Duration::from_millis(2);
                                while Instant::now() < until {
                                    if LENT_DESTROYED.load(Ordering::SeqCst) {
                                        RAN_AFTER_DESTROY.store(true, Ordering::SeqCst);
                                    }
                                }
                                yield_now();
                            }
                        });
                    }
                    loop {
                        park();
                    }
                })
            })
        }));
        for _ in 0..4 {
            started_rx.recv().unwrap();
        }
        runtime.shut_down();
        let owner = owner_at.lock().unwrap().unwrap();
        spread |= child_at.lock().unwrap().iter().any(|&w| w != Some(owner));
        assert!(
            LENT_DESTROYED.swap(false, Ordering::SeqCst),
            "the owner's thread exited"
        );
    }
    assert!(
        spread,
        "no child ran on another worker than its scope's owner"
    );
    assert!(
        !RAN_AFTER_DESTROY.load(Ordering::SeqCst),
        "a child ran after the thread-local it borrows was destroyed"
    );
}

/// A waker whose `wake` panics, as user code awaiting a `JoinHandle` may.
struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("a waker that panics");
    }
}

struct PanicOnDrop<'a>(&'a AtomicUsize);

impl Drop for PanicOnDrop<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a drop that panics");
    }
}

static STATIC_DROPS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn panics_around_a_fibers_closure_do_not_kill_its_worker() {
    for workers in [1, 2] {
        let before = STATIC_DROPS.load(Ordering::SeqCst);
        let sum = on(workers, || {
            // The joiner's waker panics when the fiber completes. The fiber waits for the
            // poll, so the poll finds it unfinished whichever worker runs it.
            let polled = Arc::new(AtomicBool::new(false));
            let mut handle = {
                let polled = polled.clone();
                spawn(move || {
                    while !polled.load(Ordering::SeqCst) {
                        park();
                    }
                    1
                })
            };
            let waker = Waker::from(Arc::new(PanickingWaker));
            assert!(Pin::new(&mut handle)
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
            polled.store(true, Ordering::SeqCst);
            handle.fiber().unpark();
            while !handle.is_finished() {
                yield_now();
            }
            // A result nobody takes panics when dropped, and so does a panic payload.
            drop(spawn(|| PanicOnDrop(&STATIC_DROPS)));
            drop(spawn(|| panic::panic_any(PanicOnDrop(&STATIC_DROPS))));
            while STATIC_DROPS.load(Ordering::SeqCst) < before + 2 {
                yield_now();
            }
            // The workers still run fibers, here and elsewhere.
            let more: u32 = (0..8)
                .map(|i| spawn(move || i))
                .map(|h| h.join().unwrap())
                .sum();
            yield_now();
            handle.join().unwrap() + more
        });
        assert_eq!(sum, 1 + 28, "{workers} workers");
        assert!(
            !fibra_runtime::wait::in_fiber(),
            "the thread still thinks it runs a fiber"
        );
        assert_eq!(STATIC_DROPS.load(Ordering::SeqCst), before + 2);
    }
}

#[test]
fn a_result_nobody_takes_panics_in_its_drop_harmlessly_in_both_orders() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    for workers in [1, 2] {
        let before = DROPS.load(Ordering::SeqCst);
        on(workers, || {
            // The handle goes first: the fiber drops its result.
            drop(spawn(|| PanicOnDrop(&DROPS)));
            while DROPS.load(Ordering::SeqCst) < before + 1 {
                yield_now();
            }
            // The fiber finishes first: the handle drops the result.
            let handle = spawn(|| PanicOnDrop(&DROPS));
            while !handle.is_finished() {
                yield_now();
            }
            drop(handle);
        });
        assert_eq!(
            DROPS.load(Ordering::SeqCst),
            before + 2,
            "{workers} workers"
        );
    }
}

/// Counts its drops; big enough that a fiber's `Core` keeps it boxed rather than in place.
struct BigCounted<'a>(&'a AtomicUsize, [u64; 16]);

impl Drop for BigCounted<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn results_kept_in_place_or_boxed_join_whole_and_drop_once_in_both_orders() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    for workers in [1, 2, 4] {
        let before = DROPS.load(Ordering::SeqCst);
        on(workers, || {
            let big = spawn(|| BigCounted(&DROPS, [7; 16])).join().unwrap();
            assert_eq!(big.1, [7; 16]);
            drop(big);
            let small = spawn(|| (Arc::new(5u8), 9u16)).join().unwrap();
            assert_eq!((*small.0, small.1), (5, 9));
            // Not taken, the handle going first, then the fiber finishing first.
            drop(spawn(|| BigCounted(&DROPS, [0; 16])));
            while DROPS.load(Ordering::SeqCst) < before + 2 {
                yield_now();
            }
            let handle = spawn(|| BigCounted(&DROPS, [0; 16]));
            while !handle.is_finished() {
                yield_now();
            }
            drop(handle);
            assert_eq!(DROPS.load(Ordering::SeqCst), before + 3);
            // A scope drops its children's untaken results before it returns.
            scope(|s| {
                for _ in 0..10 {
                    s.spawn(|| BigCounted(&DROPS, [0; 16]));
                }
            });
            assert_eq!(DROPS.load(Ordering::SeqCst), before + 13);
        });
        assert_eq!(
            DROPS.load(Ordering::SeqCst),
            before + 13,
            "{workers} workers"
        );
    }
}

#[test]
fn a_joiners_waker_that_panics_keeps_no_result_alive() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    on(1, || {
        let mut handle = spawn(|| BigCounted(&DROPS, [0; 16]));
        // Polled once as a future: the child, not started yet, keeps this waker.
        let waker = Waker::from(Arc::new(PanickingWaker));
        let poll = Pin::new(&mut handle).poll(&mut Context::from_waker(&waker));
        assert!(poll.is_pending());
        while !handle.is_finished() {
            yield_now();
        }
        // The child's wake panicked (the worker went on); the result goes with the handle,
        // though the fiber itself is still referenced.
        let fiber = handle.fiber().clone();
        drop(handle);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        drop(fiber);
    });
}

/// Sleeps in its `Drop`, which runs while its fiber unwinds.
struct SleepOnDrop<'a>(&'a AtomicBool);

impl Drop for SleepOnDrop<'_> {
    fn drop(&mut self) {
        fibra_runtime::sleep(Duration::from_millis(20));
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn only_the_unwinding_fiber_sees_panicking() {
    let (saw_panicking, poisoned, rounds) = on(1, || {
        let unwound = AtomicBool::new(false);
        let std_mutex = Mutex::new(0u32);
        let saw_panicking = AtomicBool::new(false);
        let rounds = AtomicUsize::new(0);
        scope(|s| {
            // Spawned first, so it starts first and is mid-loop when the unwinder starts.
            s.spawn(|| {
                while !unwound.load(Ordering::SeqCst) {
                    saw_panicking.fetch_or(thread::panicking(), Ordering::SeqCst);
                    *std_mutex.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                    rounds.fetch_add(1, Ordering::SeqCst);
                    yield_now();
                }
            });
            let unwinder = s.spawn(|| {
                let _sleeps = SleepOnDrop(&unwound);
                panic!("unwinding through a drop that sleeps");
            });
            assert!(unwinder.join().unwrap_err().is_panic());
        });
        (
            saw_panicking.into_inner(),
            std_mutex.is_poisoned(),
            rounds.into_inner(),
        )
    });
    assert!(rounds > 0, "the other fiber never ran");
    assert!(!saw_panicking, "another fiber saw thread::panicking()");
    assert!(!poisoned, "another fiber's std mutex was poisoned");
}

/// Joins a scoped child that panics, before or during the join, then reaches a cancellation
/// point; returns what `join` gave and how the scope ended.
fn join_a_panicked_child(panic_first: bool) -> (String, String) {
    let joined = Mutex::new(String::new());
    let ended = panic::catch_unwind(AssertUnwindSafe(|| {
        scope(|s| {
            let child = s.spawn(move || {
                if !panic_first {
                    for _ in 0..3 {
                        yield_now();
                    }
                }
                panic!("boom");
            });
            if panic_first {
                while !child.is_finished() {
                    yield_now();
                }
            }
            let error = child.join().unwrap_err();
            let payload = error.into_panic();
            *joined.lock().unwrap() = payload.downcast_ref::<&str>().unwrap().to_string();
            fibra_runtime::checkpoint();
        })
    }));
    let ended = match ended {
        Ok(()) => "returned".to_owned(),
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|message| message.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "another payload".to_owned()),
    };
    (joined.into_inner().unwrap(), ended)
}

#[test]
fn a_scope_that_joined_its_panicked_child_ends_the_same_way_in_both_orders() {
    for workers in [1, 2, 4] {
        let (first, during) = on(workers, || {
            (join_a_panicked_child(true), join_a_panicked_child(false))
        });
        assert_eq!(first, during, "{workers} workers");
        assert_eq!(first.0, "boom", "{workers} workers: join gives the panic");
        assert_eq!(
            first.1, "returned",
            "{workers} workers: a joined panic neither unwinds the body nor the scope"
        );
    }
}

#[test]
fn race_returns_its_winner_while_its_iterator_blocks() {
    for workers in [1, 2, 4] {
        let winner = on(workers, || {
            let fs = (0..3).map(|i| {
                if i > 0 {
                    fibra_runtime::sleep(HOUR);
                }
                move || i
            });
            fibra_runtime::race(fs)
        });
        assert_eq!(winner, 0, "{workers} workers");
    }
}

#[test]
fn handle_block_on_in_two_fibers_of_one_worker_finishing_out_of_order() {
    let rt = runtime(1);
    let handle = rt.handle();
    let order = rt.block_on(move || {
        let (tx_first, rx_first) = tokio::sync::oneshot::channel::<u32>();
        let (tx_second, rx_second) = tokio::sync::oneshot::channel::<u32>();
        let waiting = Arc::new(AtomicUsize::new(0));
        let (h1, w1) = (handle.clone(), waiting.clone());
        let first = spawn_local(move || {
            w1.fetch_add(1, Ordering::SeqCst);
            h1.block_on(rx_first).unwrap()
        });
        let (h2, w2) = (handle.clone(), waiting.clone());
        let second = spawn_local(move || {
            w2.fetch_add(1, Ordering::SeqCst);
            h2.block_on(rx_second).unwrap()
        });
        while waiting.load(Ordering::SeqCst) < 2 {
            yield_now();
        }
        yield_now();
        // The fiber that entered first finishes first.
        tx_first.send(1).unwrap();
        let a = first.join().unwrap();
        tx_second.send(2).unwrap();
        let b = second.join().unwrap();
        [a, b]
    });
    assert_eq!(order, [1, 2]);
}

#[test]
fn dropping_a_background_runtime_inside_its_own_fiber_shuts_it_down() {
    let runtime = Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .into_background()
        .unwrap();
    let handle = runtime.handle();
    let sleeper = handle.spawn(|| fibra_runtime::sleep(HOUR));
    let (joined_tx, joined_rx) = mpsc::channel();
    thread::spawn(move || joined_tx.send(sleeper.join()));
    let dropper = handle.spawn(move || drop(runtime));
    let outcome = joined_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("an outside joiner was left hanging");
    assert!(outcome.unwrap_err().is_cancelled());
    // The dropping fiber went on to its end.
    dropper.join().unwrap();
}

/// Wakes a fiber when dropped.
struct WakeOnDrop(fibra_runtime::Fiber, Arc<AtomicUsize>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.unpark();
    }
}

#[test]
fn shutdown_survives_a_drop_that_wakes_a_fiber_of_the_same_worker() {
    let runtime = Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .into_background()
        .unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = drops.clone();
    let (queued_tx, queued_rx) = mpsc::channel();
    drop(runtime.handle().spawn(move || {
        let sleeper = spawn_local(|| loop {
            park();
        });
        yield_now();
        // Queued here and never started: shutdown drops its closure, which wakes `sleeper`.
        let waker = WakeOnDrop(sleeper.fiber().clone(), counted);
        drop(spawn_local(move || drop(waker)));
        queued_tx.send(()).unwrap();
        // Keeps the worker busy while shutdown begins, so the queued fiber never starts.
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until {
            thread::yield_now();
        }
        loop {
            park();
        }
    }));
    queued_rx.recv().unwrap();
    runtime.shut_down();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

fibra_runtime::fiber_local!(
    static OUTER: u32 = 5;
);
fibra_runtime::fiber_local!(
    static TRACKED: Option<ReadsLocal> = None;
);

/// Reads another fiber-local and spawns when dropped.
struct ReadsLocal(Arc<AtomicUsize>);

impl Drop for ReadsLocal {
    fn drop(&mut self) {
        assert_eq!(OUTER.get(), 5);
        spawn(|| ()).join().unwrap();
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_fiber_local_value_dropped_at_the_end_of_its_scope_may_use_fiber_locals() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    on(1, move || {
        TRACKED.scope(Some(ReadsLocal(counter)), || {
            assert!(TRACKED.with(Option::is_some));
        });
    });
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}
