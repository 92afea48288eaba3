//! The driver: timers, `block_on`, the blocking pool and holds, seen from fibers.

// tokio compiles its networking out under `--cfg loom`; these tests need it.
#![cfg(not(loom))]

use fibra_runtime::wait::{park_current_until_at_checked_if, WaitKind, WaitSite};
use fibra_runtime::{
    block_on, blocking, current, park_timeout, scope, sleep, sleep_until, HoldKind, ScopeOptions,
    WaitExt,
};
use fibra_testing::{bounded, on, runtime};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3600);
/// The hang guard of the scenarios whose regression is a hang.
const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn sleeping_fibers_wake_in_deadline_order_and_never_early() {
    let woke = on(1, || {
        let woke = Mutex::new(Vec::new());
        let start = Instant::now();
        scope(|s| {
            // Spawned out of order; deadlines 20 ms apart.
            for i in [3u32, 0, 4, 1, 2] {
                let woke = &woke;
                s.spawn(move || {
                    let deadline = start + Duration::from_millis(20 * u64::from(i) + 5);
                    sleep_until(deadline);
                    woke.lock().unwrap().push((i, Instant::now() >= deadline));
                });
            }
        });
        woke.into_inner().unwrap()
    });
    assert_eq!(
        woke.iter().map(|&(i, _)| i).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert!(woke.iter().all(|&(_, on_time)| on_time), "{woke:?}");
}

#[test]
fn sleep_lasts_at_least_its_duration_on_every_worker_count() {
    for workers in [1, 2, 4] {
        let early = on(workers, || {
            let early = AtomicUsize::new(0);
            scope(|s| {
                for i in 0..200u64 {
                    let early = &early;
                    s.spawn(move || {
                        let d = Duration::from_millis(i % 7);
                        let start = Instant::now();
                        sleep(d);
                        if start.elapsed() < d {
                            early.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                }
            });
            early.into_inner()
        });
        assert_eq!(early, 0, "{workers} workers");
    }
}

#[test]
fn park_timeout_returns_after_the_timeout_or_at_an_unpark() {
    on(2, || {
        let start = Instant::now();
        park_timeout(Duration::from_millis(5));
        assert!(
            start.elapsed() >= Duration::from_millis(5),
            "returned early"
        );

        let me = current();
        let released = Arc::new(AtomicBool::new(false));
        let flag = released.clone();
        let waker = fibra_runtime::spawn(move || {
            flag.store(true, Ordering::SeqCst);
            me.unpark();
        });
        // An hour-long timeout: only the unpark can end this wait within the test.
        while !released.load(Ordering::SeqCst) {
            park_timeout(Duration::from_secs(3600));
        }
        waker.join().unwrap();
        // The timer of the interrupted wait was deregistered.
        assert!(fibra_runtime::Handle::current().holds().is_empty());
    });
}

#[test]
fn holds_are_listed_while_waiting_and_gone_after() {
    let runtime = runtime(2);
    let handle = runtime.handle();
    runtime.block_on(|| {
        let go = Arc::new(AtomicBool::new(false));
        let g = go.clone();
        let sleeper = fibra_runtime::spawn(move || {
            while !g.load(Ordering::SeqCst) {
                park_timeout(Duration::from_secs(3600));
            }
        });
        let holds = loop {
            let holds = handle.holds();
            if !holds.is_empty() {
                break holds;
            }
            fibra_runtime::yield_now();
        };
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].kind, HoldKind::Timer);
        assert_eq!(holds[0].owner, Some(sleeper.fiber().id().as_u64()));
        assert!(holds[0].to_string().contains("timer"), "{}", holds[0]);
        go.store(true, Ordering::SeqCst);
        sleeper.fiber().unpark();
        sleeper.join().unwrap();
        assert!(handle.holds().is_empty());
    });
}

#[test]
fn a_scope_deadline_and_a_scope_token_hold_the_runtime_while_they_may_fire() {
    on(1, || {
        let handle = fibra_runtime::Handle::current();
        let me = fibra_runtime::current().id().as_u64();
        let by_deadline =
            fibra_runtime::scope_with(ScopeOptions::new().timeout(HOUR), |_| handle.holds())
                .unwrap();
        assert_eq!(by_deadline.len(), 1);
        assert_eq!(by_deadline[0].kind, HoldKind::Timer);
        assert_eq!(by_deadline[0].owner, Some(me));
        assert_eq!(
            by_deadline[0].location.file(),
            file!(),
            "the hold names the scope_with call"
        );
        let token = fibra_runtime::CancelToken::new();
        let by_token =
            fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| handle.holds())
                .unwrap();
        assert_eq!(by_token.len(), 1);
        assert_eq!(by_token[0].kind, HoldKind::CancelToken);
        assert!(handle.holds().is_empty(), "released when the scopes ended");
    });
}

#[test]
fn block_on_a_tokio_sleep_and_a_ready_future() {
    on(1, || {
        let start = Instant::now();
        block_on(tokio::time::sleep(Duration::from_millis(3)));
        assert!(start.elapsed() >= Duration::from_millis(3));
        assert_eq!(block_on(std::future::ready(9)), 9);
        assert_eq!(async { 4 }.wait(), 4);
    });
}

#[test]
fn block_on_serves_a_tokio_tcp_pair_between_two_fibers() {
    on(2, || {
        let listener = block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let address = listener.local_addr().unwrap();
        let echoed = scope(|s| {
            s.spawn(move || {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let (mut socket, _) = block_on(listener.accept()).unwrap();
                let mut buffer = [0u8; 5];
                block_on(socket.read_exact(&mut buffer)).unwrap();
                block_on(socket.write_all(&buffer)).unwrap();
            });
            let client = s.spawn(move || {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut socket = block_on(tokio::net::TcpStream::connect(address)).unwrap();
                block_on(socket.write_all(b"hello")).unwrap();
                let mut buffer = [0u8; 5];
                block_on(socket.read_exact(&mut buffer)).unwrap();
                buffer
            });
            client.join().unwrap()
        });
        assert_eq!(&echoed, b"hello");
    });
}

#[test]
fn a_fiber_and_a_tokio_task_exchange_values_both_ways() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (to_task, mut from_fiber) = tokio::sync::mpsc::channel::<u32>(1);
    let (to_fiber, mut from_task) = tokio::sync::mpsc::channel::<u32>(1);
    tokio.spawn(async move {
        while let Some(v) = from_fiber.recv().await {
            to_fiber.send(v * 2).await.unwrap();
        }
    });
    let doubled = on(2, move || {
        (1..=100)
            .map(|v| {
                to_task.send(v).wait().unwrap();
                from_task.recv().wait().unwrap()
            })
            .sum::<u32>()
    });
    assert_eq!(doubled, 2 * 5050);
}

#[test]
fn nested_block_on_works() {
    on(1, || {
        let value = block_on(async {
            let inner = block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                20
            });
            tokio::time::sleep(Duration::from_millis(1)).await;
            inner + 1
        });
        assert_eq!(value, 21);
    });
}

#[test]
fn a_panic_in_a_block_on_future_resumes_in_the_caller() {
    on(1, || {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                panic!("in the future")
            })
        }));
        assert_eq!(
            outcome.unwrap_err().downcast_ref::<&str>(),
            Some(&"in the future")
        );
    });
}

#[test]
fn blocking_runs_off_the_workers_and_64_jobs_run_at_once_while_fibers_run() {
    on(2, || {
        const JOBS: usize = 64;
        let all_in = Arc::new(Barrier::new(JOBS));
        let fiber_ran = Arc::new(AtomicBool::new(false));
        let off_worker = AtomicUsize::new(0);
        scope(|s| {
            for _ in 0..JOBS {
                let (all_in, fiber_ran, off_worker) =
                    (all_in.clone(), fiber_ran.clone(), &off_worker);
                s.spawn(move || {
                    let was_off = blocking(move || {
                        // Returns only once all 64 jobs are blocked here at the same time.
                        all_in.wait();
                        // And only after a fiber ran while they were all blocked.
                        while !fiber_ran.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        fibra_runtime::current_worker().is_none()
                    });
                    if was_off {
                        off_worker.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
            s.spawn(|| {
                fibra_runtime::yield_now();
                fiber_ran.store(true, Ordering::SeqCst);
            });
        });
        assert_eq!(off_worker.load(Ordering::SeqCst), JOBS);
    });
}

#[test]
fn a_panic_in_a_blocking_job_resumes_in_the_fiber() {
    on(1, || {
        let outcome = panic::catch_unwind(|| blocking(|| panic!("in the pool")));
        assert_eq!(
            outcome.unwrap_err().downcast_ref::<&str>(),
            Some(&"in the pool")
        );
    });
}

/// A fiber whose scope was already cancelled handed its job to the pool before its
/// cancellation point: a pool thread could start it before the abort that followed, so the
/// job of a cancelled caller might run. It is now dropped in the fiber, never queued.
#[test]
fn a_cancelled_fibers_blocking_job_never_reaches_the_pool() {
    /// Records, when dropped, whether that happened in a fiber.
    struct Probe(Arc<Mutex<Option<bool>>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = Some(fibra_runtime::wait::in_fiber());
        }
    }

    let dropped_in_fiber = on(1, || {
        let ran = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(Mutex::new(None));
        let token = fibra_runtime::CancelToken::new();
        let outcome = fibra_runtime::scope_with(ScopeOptions::new().token(token.clone()), |_| {
            token.cancel();
            let (probe, ran) = (Probe(dropped.clone()), ran.clone());
            blocking(move || {
                let _probe = probe;
                ran.store(true, Ordering::SeqCst);
            });
        });
        assert!(outcome.is_err());
        // A job that reached the pool is dropped there, once run or aborted.
        while dropped.lock().unwrap().is_none() {
            sleep(Duration::from_millis(1));
        }
        assert!(!ran.load(Ordering::SeqCst));
        let dropped_in_fiber = dropped.lock().unwrap().unwrap();
        dropped_in_fiber
    });
    assert!(dropped_in_fiber);
}

#[test]
fn a_sleep_of_duration_max_neither_overflows_nor_panics() {
    let runtime = runtime(1);
    let handle = runtime.handle();
    runtime.block_on(|| {
        let forever = fibra_runtime::spawn(|| sleep(Duration::MAX));
        let parked = fibra_runtime::spawn(|| park_timeout(Duration::MAX));
        // The sleep is a timer on the wheel; a park whose timeout never passes is a plain park,
        // with no timer and so no hold.
        while handle.holds().is_empty() {
            fibra_runtime::yield_now();
        }
        for _ in 0..10 {
            fibra_runtime::yield_now();
        }
        assert_eq!(handle.holds().len(), 1);
        assert!(!forever.is_finished() && !parked.is_finished());
        parked.fiber().unpark();
        parked.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "Handle::block_on called after the runtime shut down")]
fn the_driver_after_shutdown_is_a_panic_not_a_hang() {
    let runtime = runtime(1);
    let handle = runtime.handle();
    runtime.block_on(|| ());
    handle.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
}

#[test]
fn park_outside_and_blocking_on_a_plain_thread() {
    // On a plain thread `blocking` just runs, and `sleep` sleeps the thread.
    assert_eq!(blocking(|| 3), 3);
    let start = Instant::now();
    sleep(Duration::from_millis(2));
    assert!(start.elapsed() >= Duration::from_millis(2));
    let outcome = panic::catch_unwind(|| park_timeout(Duration::from_millis(1)));
    assert!(outcome.is_err());
}

/// A future that is pending until its gate opens, counting its polls and keeping the last
/// waker it was given.
#[derive(Clone, Default)]
struct Gate {
    open: Arc<AtomicBool>,
    polls: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<std::task::Waker>>>,
}

impl std::future::Future for Gate {
    type Output = usize;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<usize> {
        let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.open.load(Ordering::SeqCst) {
            return std::task::Poll::Ready(polls);
        }
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        std::task::Poll::Pending
    }
}

impl Gate {
    /// From another fiber: waits for the waiter's `polls`th poll, then wakes it, first
    /// opening the gate if `open`.
    fn wake_after(&self, polls: usize, open: bool) {
        while self.polls.load(Ordering::SeqCst) < polls {
            fibra_runtime::yield_now();
        }
        self.open.store(open, Ordering::SeqCst);
        self.waker.lock().unwrap().take().unwrap().wake();
    }
}

#[test]
fn a_leaf_wait_polls_once_per_wake_and_a_wake_with_nothing_ready_parks_again() {
    on(1, || {
        let gate = Gate::default();
        let waker = {
            let gate = gate.clone();
            fibra_runtime::spawn(move || gate.wake_after(1, true))
        };
        let polls = fibra_runtime::block_on_leaf_until(gate.clone(), Instant::now() + HOUR);
        waker.join().unwrap();
        assert_eq!(polls, Ok(2), "the first poll, then one after the wake");

        let gate = Gate::default();
        let waker = {
            let gate = gate.clone();
            fibra_runtime::spawn(move || {
                gate.wake_after(1, false);
                gate.wake_after(2, true);
            })
        };
        let polls = fibra_runtime::block_on_leaf_until(gate.clone(), Instant::now() + HOUR);
        waker.join().unwrap();
        assert_eq!(
            polls,
            Ok(3),
            "the early wake's poll found it pending and parked again"
        );
    });
}

#[test]
fn a_leaf_wait_times_out_and_holds_the_runtime_while_it_waits() {
    let runtime = runtime(1);
    let handle = runtime.handle();
    runtime.block_on(move || {
        let gate = Gate::default();
        let looker = {
            let (gate, handle) = (gate.clone(), handle.clone());
            fibra_runtime::spawn(move || {
                while gate.polls.load(Ordering::SeqCst) < 1 {
                    fibra_runtime::yield_now();
                }
                handle.holds()
            })
        };
        let soon = Instant::now() + Duration::from_millis(5);
        assert_eq!(
            fibra_runtime::block_on_leaf_until(gate.clone(), soon),
            Err(fibra_runtime::wait::TimedOut)
        );
        assert!(Instant::now() >= soon);
        let holds = looker.join().unwrap();
        assert!(holds.iter().any(|hold| hold.kind == HoldKind::Future));
        assert!(
            handle
                .holds()
                .iter()
                .all(|hold| hold.kind != HoldKind::Future),
            "released when the wait ended"
        );
    });
}

#[test]
fn a_blocking_wait_takes_one_hold() {
    on(1, || {
        let handle = fibra_runtime::Handle::current();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let job = fibra_runtime::spawn(move || blocking(move || released.recv().unwrap()));
        // On one worker the job's fiber runs until it parks in its wait before this one
        // runs again.
        fibra_runtime::yield_now();
        let holds = handle.holds();
        release.send(()).unwrap();
        job.join().unwrap();
        assert_eq!(holds.len(), 1, "{holds:?}");
        assert_eq!(holds[0].kind, HoldKind::Blocking);
    });
}

/// Two fibers of one worker in `Handle::block_on`, each waiting inside its future, finish in
/// the other order than they began. A context entered per poll outlived the poll's wait, and
/// tokio's guards, dropped out of order, panicked and took the process down.
#[test]
fn handle_block_on_in_fibers_that_wait_inside_their_futures_finish_in_any_order() {
    let finished = on(1, || {
        let handle = fibra_runtime::Handle::current();
        let finished = Mutex::new(Vec::new());
        scope(|s| {
            // The first to begin finishes first: its context, entered before the other's,
            // would be left first.
            for (name, wait) in [("short", 1), ("long", 40)] {
                let (handle, finished) = (handle.clone(), &finished);
                s.spawn(move || {
                    handle.block_on(async move { sleep(Duration::from_millis(wait)) });
                    finished.lock().unwrap().push(name);
                });
            }
        });
        finished.into_inner().unwrap()
    });
    assert_eq!(finished, ["short", "long"]);
}

/// A fibra wait in a tokio task (a `tokio::spawn` made in a fiber runs on the driver thread)
/// would park the thread that runs every timer of the runtime, for ever if it waits for one
/// of them; it panics in the task instead.
#[test]
fn a_fibra_wait_on_the_driver_thread_panics_instead_of_stopping_its_timers() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = on(1, || {
            let task = tokio::spawn(async {
                block_on(tokio::time::sleep(Duration::from_millis(1)));
            });
            block_on(task)
        });
        done.send(outcome.map_err(|error| error.into_panic()))
            .unwrap();
    });
    let outcome = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the runtime hung: its driver thread was parked in a fibra wait");
    let payload = outcome.expect_err("the task's wait panics");
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    assert!(
        message.is_some_and(|message| message.contains("driver thread")),
        "{message:?}"
    );
}

/// A future that wakes itself in every poll until `done` is set, as tokio's `yield_now` does
/// off tokio's own workers; its output is the number of polls it took.
#[derive(Default)]
struct WakesItself {
    done: Arc<AtomicBool>,
    polls: usize,
}

impl std::future::Future for WakesItself {
    type Output = usize;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<usize> {
        self.polls += 1;
        if self.done.load(Ordering::SeqCst) {
            return std::task::Poll::Ready(self.polls);
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// On one worker, in a scope that another fiber of the worker cancels, runs in a loop the step
/// that `prepare` (run first, before that fiber exists) returns, and asserts that the scope ended
/// cancelled: the step must be a cancellation point that lets the other fiber have its turn, or
/// the loop runs until the hang guard fails the test.
fn ends_cancelled<F: FnMut()>(prepare: impl FnOnce() -> F + Send + 'static) {
    let outcome = bounded(MINUTE, || {
        on(1, || {
            let mut step = prepare();
            let token = fibra_runtime::CancelToken::new();
            let canceller = {
                let token = token.clone();
                fibra_runtime::spawn(move || token.cancel())
            };
            let outcome = fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| loop {
                step();
            });
            canceller.join().unwrap();
            outcome
        })
    });
    assert!(outcome.is_err(), "{outcome:?}");
}

/// A future that wakes itself while polled was polled again at once, for as long as it asked:
/// the worker's other fibers never ran, and here the one that would end it starved.
#[test]
fn block_on_of_a_future_that_wakes_itself_lets_the_workers_other_fibers_run() {
    let polls = bounded(MINUTE, || {
        on(1, || {
            let future = WakesItself::default();
            let done = future.done.clone();
            let ender = fibra_runtime::spawn(move || done.store(true, Ordering::SeqCst));
            let polls = block_on(future);
            ender.join().unwrap();
            polls
        })
    });
    assert_eq!(
        polls, 3,
        "the first poll, one with the wait's own waker, and one after the other fiber ran"
    );
}

/// The same spin was no cancellation point: a scope cancelled by another fiber of the worker
/// never ended it.
#[test]
fn block_on_of_a_future_that_wakes_itself_is_cancelled() {
    ends_cancelled(|| {
        || {
            block_on(WakesItself::default());
        }
    });
}

/// A `block_on` of a future ready at its first poll was no cancellation point and cost no
/// reduction: a loop of them was never cancelled, and its worker's other fibers never ran.
#[test]
fn a_loop_of_ready_block_ons_is_cancelled() {
    ends_cancelled(|| {
        || {
            block_on(std::future::ready(()));
        }
    });
}

/// A park whose timeout had already passed returned before its cancellation point and cost no
/// reduction: a loop of them was never cancelled, and its worker's other fibers never ran.
#[test]
fn a_loop_of_parks_timed_out_at_once_is_cancelled() {
    ends_cancelled(|| {
        || {
            park_timeout(Duration::ZERO);
        }
    });
}

/// A park that leaves its cancellation point to its caller (`park_current_until_at_checked_if`,
/// whose wait another thread may have committed) does not unwind when its deadline has
/// passed: the caller said no, and the cancellation waits for the next point.
#[test]
fn a_timed_out_park_whose_caller_refused_to_unwind_returns() {
    let (asked, returned, cancelled) = on(1, || {
        let token = fibra_runtime::CancelToken::new();
        token.cancel();
        let (mut asked, mut returned) = (0, false);
        let outcome = fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| {
            let event = ();
            let site = WaitSite::new(WaitKind::Event, &event);
            park_current_until_at_checked_if(Instant::now(), &site, || {
                asked += 1;
                false
            });
            returned = true;
            fibra_runtime::checkpoint();
        });
        (asked, returned, outcome.is_err())
    });
    assert_eq!((asked, returned, cancelled), (1, true, true));
}

/// A sleep until an instant the driver's clock had already passed returned without parking,
/// so it was no cancellation point and cost no reduction: a loop of them was never cancelled,
/// and its worker's other fibers never ran.
#[test]
fn a_loop_of_sleeps_until_the_past_is_cancelled() {
    ends_cancelled(|| {
        let past = Instant::now();
        // The driver's clock passes `past` (rounded up to its tick) before the loop starts.
        sleep(Duration::from_millis(2));
        move || {
            sleep_until(past);
        }
    });
}

/// A cancelled `block_on` does not poll its future, even one that would be ready at once.
#[test]
fn a_cancelled_block_on_takes_nothing_from_its_future() {
    on(1, || {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        tx.send(1).unwrap();
        let token = fibra_runtime::CancelToken::new();
        token.cancel();
        let outcome =
            fibra_runtime::scope_with(ScopeOptions::new().token(token), |_| block_on(rx.recv()));
        assert!(outcome.is_err());
        assert_eq!(rx.try_recv(), Ok(1));
    });
}

/// Two background runtimes of one worker each.
fn two_background_runtimes() -> [fibra_runtime::BackgroundRuntime; 2] {
    [(); 2].map(|()| runtime(1).into_background().unwrap())
}

/// `Handle::block_on` in a fiber of another runtime ran its future in the caller's runtime's
/// context: a listener it bound used the caller's reactor, and failed once that runtime was
/// gone though the handle's runtime still ran.
#[test]
fn handle_block_on_in_a_fiber_of_another_runtime_runs_in_the_handles_runtime() {
    bounded(MINUTE, || {
        let [caller, callee] = two_background_runtimes();
        let callee_handle = callee.handle();
        let listener = caller
            .handle()
            .spawn(move || callee_handle.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")))
            .join()
            .unwrap()
            .unwrap();
        let address = listener.local_addr().unwrap();
        drop(caller);
        let client = std::net::TcpStream::connect(address).unwrap();
        let (accepted, _) = callee.handle().block_on(listener.accept()).unwrap();
        assert_eq!(accepted.peer_addr().unwrap(), client.local_addr().unwrap());
    });
}

/// A future given to another runtime's `Handle::block_on` that suspends its fiber inside its
/// poll has let the worker's other fibers run inside that runtime's context: it panics.
#[test]
fn handle_block_on_of_another_runtime_refuses_a_future_that_suspends_its_fiber() {
    let [caller, callee] = two_background_runtimes();
    let callee_handle = callee.handle();
    let outcome = caller
        .handle()
        .spawn(move || {
            callee_handle.block_on(async { fibra_runtime::yield_now() });
        })
        .join();
    let payload = outcome.unwrap_err().into_panic();
    let message = payload.downcast_ref::<&str>().unwrap();
    assert!(
        message.contains("suspended the fiber inside its poll"),
        "{message}"
    );
}

/// A plain thread in `Handle::block_on` of a tokio sleep when its runtime shuts down: the
/// sleep panics, its driver gone, and the panic said only that a tokio context was being shut
/// down.
#[test]
fn handle_block_on_interrupted_by_shutdown_panics_saying_so() {
    let runtime = runtime(1).into_background().unwrap();
    let handle = runtime.handle();
    let (polled_tx, polled) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        handle.block_on(async move {
            polled_tx.send(()).unwrap();
            tokio::time::sleep(HOUR).await;
        });
    });
    // Dropped during the first poll or after it, the sleep panics either way: its timer
    // cannot be set, or is ended, once the driver is gone.
    polled.recv().unwrap();
    drop(runtime);
    let payload = waiter.join().unwrap_err();
    let message = payload.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("the runtime shut down while Handle::block_on waited"),
        "{message}"
    );
}
