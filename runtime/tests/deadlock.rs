//! Deadlock detection: cycles over owned resources (mutexes, reentrant mutexes, writer locks,
//! joins), reported once with every fiber's sites, and under `Deadlock::Panic` unwinding each
//! of them; waits that are not deadlocks are never reported.

// Written against the facade, which is not built under loom.
#![cfg(not(loom))]

use fibra::sync::{Barrier, Mutex, ReentrantMutex, RwLock};
use fibra::{Deadlock, Deadlocked, JoinHandle};
use fibra_testing::{in_child, run_child, WORKER_COUNTS};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const FILE: &str = "runtime/tests/deadlock.rs";

fn runtime(workers: usize, policy: Deadlock) -> fibra::Runtime {
    fibra::Runtime::builder()
        .workers(workers)
        .on_deadlock(policy)
        .build()
        .unwrap()
}

/// The report `f` unwinds with.
fn report_of(f: impl FnOnce()) -> String {
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the wait is a deadlock");
    payload
        .downcast::<Deadlocked>()
        .expect("unwound with a Deadlocked payload")
        .report()
        .to_owned()
}

fn at(line: u32) -> String {
    format!("{FILE}:{line}:")
}

/// Two fibers, each holding one mutex and locking the other's: (report of each, lines where
/// `first` took `a`, `second` took `b`, `first` waits for `b`, `second` waits for `a`).
fn opposite_order(workers: usize, policy: Deadlock) -> Option<(String, String, [u32; 4])> {
    runtime(workers, policy).block_on(|| {
        let a = Arc::new(Mutex::new(()));
        let b = Arc::new(Mutex::new(()));
        let both = Arc::new(Barrier::new(2));
        let lines = Arc::new(std::sync::Mutex::new([0u32; 4]));
        let spawn = |name: &str, mine: Arc<Mutex<()>>, theirs: Arc<Mutex<()>>, slot: usize| {
            let (both, lines) = (both.clone(), lines.clone());
            fibra::Builder::new()
                .name(name)
                .spawn(move || {
                    let _mine = mine.lock();
                    lines.lock().unwrap()[slot] = line!() - 1;
                    both.wait().unwrap();
                    lines.lock().unwrap()[slot + 2] = line!() + 1;
                    report_of(|| drop(theirs.lock()))
                })
                .unwrap()
        };
        let first = spawn("first", a.clone(), b.clone(), 0);
        let second = spawn("second", b, a, 1);
        if policy == Deadlock::Report {
            // The fibers stay blocked: wait until the cycle is reported, then leave them
            // (shutdown abandons them).
            while deadlocks_reported() == 0 {
                fibra::sleep(Duration::from_millis(1));
            }
            let ids = [first.fiber().id().as_u64(), second.fiber().id().as_u64()];
            assert!(ids.iter().all(|&id| parked_on_mutex(id)));
            std::mem::forget((first, second));
            return None;
        }
        let reports = (first.join().unwrap(), second.join().unwrap());
        assert_eq!(deadlocks_reported(), 1);
        let lines = *lines.lock().unwrap();
        Some((reports.0, reports.1, lines))
    })
}

fn deadlocks_reported() -> u64 {
    fibra::Handle::current().metrics().deadlocks
}

fn parked_on_mutex(id: u64) -> bool {
    fibra::dump().fiber(id).is_some_and(|fiber| {
        fiber.state == fibra::FiberState::Parked
            && fiber
                .wait
                .as_ref()
                .is_some_and(|wait| wait.kind == fibra::wait::WaitKind::Mutex)
    })
}

#[test]
fn two_fibers_locking_two_mutexes_in_opposite_order_both_unwind_with_one_report() {
    for workers in WORKER_COUNTS {
        let (first, second, [took_a, took_b, waits_b, waits_a]) =
            opposite_order(workers, Deadlock::Panic).unwrap();
        assert_eq!(first, second, "one report, shared by the cycle's fibers");
        assert!(first.starts_with("fibra: deadlock: 2 fibers"), "{first}");
        for name in ["\"first\"", "\"second\""] {
            assert_eq!(first.matches(name).count(), 2, "{first}");
        }
        for line in [took_a, took_b, waits_a, waits_b] {
            assert!(
                first.contains(&at(line)),
                "line {line} missing from:\n{first}"
            );
        }
        assert_eq!(first.matches("waits for mutex").count(), 2, "{first}");
    }
}

#[test]
fn a_cycle_is_found_while_every_worker_stays_busy() {
    for workers in WORKER_COUNTS {
        let report = runtime(workers, Deadlock::Panic).block_on(|| {
            let a = Mutex::new(());
            let b = Mutex::new(());
            let both = Barrier::new(2);
            let found = AtomicUsize::new(0);
            let cycle = |mine: &Mutex<()>, theirs: &Mutex<()>| {
                let _mine = mine.lock();
                both.wait().unwrap();
                let report = report_of(|| drop(theirs.lock()));
                found.fetch_add(1, Ordering::Release);
                report
            };
            fibra::scope(|s| {
                // Fibers that never let a worker sleep: the cycle must be found by a busy
                // worker's periodic look.
                for _ in 0..workers {
                    s.spawn(|| {
                        while found.load(Ordering::Acquire) < 2 {
                            fibra::yield_now();
                        }
                    });
                }
                let first = s.spawn(|| cycle(&a, &b));
                let second = s.spawn(|| cycle(&b, &a));
                let (first, second) = (first.join().unwrap(), second.join().unwrap());
                assert_eq!(first, second);
                first
            })
        });
        assert!(report.starts_with("fibra: deadlock: 2 fibers"), "{report}");
    }
}

#[test]
fn the_report_policy_prints_each_cycle_once_on_stderr() {
    const TEST: &str = "the_report_policy_prints_each_cycle_once_on_stderr";
    if in_child(TEST) {
        for workers in WORKER_COUNTS {
            assert!(opposite_order(workers, Deadlock::Report).is_none());
        }
        return;
    }
    let output = run_child(TEST, &[]);
    fibra_testing::assert_passed(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("fibra: deadlock: 2 fibers").count(),
        WORKER_COUNTS.len(),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("which took it at").count(),
        2 * WORKER_COUNTS.len()
    );
}

#[test]
fn the_deadlock_policy_comes_from_the_environment() {
    const TEST: &str = "the_deadlock_policy_comes_from_the_environment";
    if in_child(TEST) {
        let runtime = fibra::Runtime::builder().workers(1).build().unwrap();
        runtime.block_on(|| {
            let lock = Mutex::new(());
            let _held = lock.lock();
            let report = report_of(|| drop(lock.lock()));
            assert!(report.contains("fibra: deadlock: 1 fiber wait"), "{report}");
        });
        return;
    }
    fibra_testing::assert_passed(&run_child(TEST, &[("FIBRA_DEADLOCK", "panic")]));
}

#[test]
fn a_bad_deadlock_policy_in_the_environment_is_reported_in_one_line_and_ignored() {
    const TEST: &str =
        "a_bad_deadlock_policy_in_the_environment_is_reported_in_one_line_and_ignored";
    if in_child(TEST) {
        // The default, `Report`: the cycle is printed and the waits stay blocked.
        let runtime = fibra::Runtime::builder().workers(2).build().unwrap();
        runtime.block_on(|| {
            let lock = Arc::new(Mutex::new(()));
            let held = lock.clone();
            let stuck = fibra::spawn(move || {
                let _mine = held.lock();
                drop(held.lock());
            });
            // Parked is not yet reported: the check runs when a worker next looks (as it goes
            // to sleep, or periodically), which the runtime's shutdown could otherwise beat.
            while deadlocks_reported() == 0 {
                fibra::sleep(Duration::from_millis(1));
            }
            std::mem::forget(stuck);
        });
        return;
    }
    let output = run_child(TEST, &[("FIBRA_DEADLOCK", "sometimes")]);
    fibra_testing::assert_passed(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let config: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("FIBRA_DEADLOCK"))
        .collect();
    assert_eq!(config.len(), 1, "{stderr}");
    assert!(config[0].contains("\"sometimes\""), "{}", config[0]);
    assert_eq!(
        stderr.matches("fibra: deadlock: 1 fiber").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_three_fiber_cycle_names_all_three() {
    for workers in WORKER_COUNTS {
        let reports = runtime(workers, Deadlock::Panic).block_on(|| {
            let locks: Vec<Arc<Mutex<()>>> = (0..3).map(|_| Arc::new(Mutex::new(()))).collect();
            let all = Arc::new(Barrier::new(3));
            let fibers: Vec<JoinHandle<String>> = (0..3)
                .map(|i| {
                    let mine = locks[i].clone();
                    let next = locks[(i + 1) % 3].clone();
                    let all = all.clone();
                    fibra::Builder::new()
                        .name(format!("ring-{i}"))
                        .spawn(move || {
                            let _mine = mine.lock();
                            all.wait().unwrap();
                            report_of(|| drop(next.lock()))
                        })
                        .unwrap()
                })
                .collect();
            fibers
                .into_iter()
                .map(|fiber| fiber.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert!(reports.iter().all(|report| *report == reports[0]));
        let report = &reports[0];
        assert!(report.starts_with("fibra: deadlock: 3 fibers"), "{report}");
        for i in 0..3 {
            assert_eq!(
                report.matches(&format!("\"ring-{i}\"")).count(),
                2,
                "{report}"
            );
        }
    }
}

#[test]
fn two_fibers_joining_each_other_are_a_cycle() {
    for workers in WORKER_COUNTS {
        let reports = runtime(workers, Deadlock::Panic).block_on(|| {
            type Slot = Arc<std::sync::Mutex<Option<JoinHandle<()>>>>;
            let slots: [Slot; 2] = Default::default();
            let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
            let ready = Arc::new(Barrier::new(3));
            for me in 0..2 {
                let (all, reports, ready) = (slots.clone(), reports.clone(), ready.clone());
                let fiber = fibra::Builder::new()
                    .name(format!("joiner-{me}"))
                    .spawn(move || {
                        ready.wait().unwrap();
                        let other = all[1 - me].lock().unwrap().take().unwrap();
                        let report = report_of(|| drop(other.join()));
                        reports.lock().unwrap().push(report);
                    })
                    .unwrap();
                *slots[me].lock().unwrap() = Some(fiber);
            }
            ready.wait().unwrap();
            while reports.lock().unwrap().len() < 2 {
                fibra::sleep(Duration::from_millis(1));
            }
            let reports = reports.lock().unwrap().clone();
            reports
        });
        assert_eq!(reports[0], reports[1]);
        assert!(
            reports[0].starts_with("fibra: deadlock: 2 fibers"),
            "{}",
            reports[0]
        );
        assert_eq!(
            reports[0].matches("waits for join").count(),
            2,
            "{}",
            reports[0]
        );
        assert!(reports[0].contains("\"joiner-0\"") && reports[0].contains("\"joiner-1\""));
    }
}

#[test]
fn reentrant_mutexes_and_writer_locks_form_cycles_too() {
    for workers in WORKER_COUNTS {
        let (one, other) = runtime(workers, Deadlock::Panic).block_on(|| {
            let reentrant = Arc::new(ReentrantMutex::new(()));
            let rwlock = Arc::new(RwLock::new(()));
            let both = Arc::new(Barrier::new(2));
            let (r, w, b) = (reentrant.clone(), rwlock.clone(), both.clone());
            let writer = fibra::spawn(move || {
                let _write = w.write();
                b.wait().unwrap();
                report_of(|| drop(r.lock()))
            });
            let _mine = reentrant.lock();
            let _again = reentrant.lock();
            both.wait().unwrap();
            let mine = report_of(|| drop(rwlock.read()));
            (mine, writer.join().unwrap())
        });
        assert_eq!(one, other);
        assert!(one.contains("waits for rwlock read"), "{one}");
        assert!(one.contains("waits for reentrant mutex"), "{one}");
    }
}

#[test]
fn waits_that_only_look_circular_are_not_reported() {
    for workers in WORKER_COUNTS {
        let total = runtime(workers, Deadlock::Panic).block_on(|| {
            // The same lock order everywhere: contention, handoffs, never a cycle.
            let a = Arc::new(Mutex::new(0usize));
            let b = Arc::new(Mutex::new(0usize));
            let fibers: Vec<_> = (0..50)
                .map(|_| {
                    let (a, b) = (a.clone(), b.clone());
                    fibra::spawn(move || {
                        for _ in 0..40 {
                            let mut a = a.lock();
                            let mut b = b.lock();
                            *a += 1;
                            *b += 1;
                            if *a % 7 == 0 {
                                fibra::yield_now();
                            }
                        }
                    })
                })
                .collect();
            for fiber in fibers {
                fiber.join().unwrap();
            }
            // Opposite order, but one side gives up after a while: a timed wait is not a
            // deadlock.
            let timed_out = Arc::new(AtomicUsize::new(0));
            let both = Arc::new(Barrier::new(2));
            let (a2, b2, both2, timed) = (a.clone(), b.clone(), both.clone(), timed_out.clone());
            let patient = fibra::spawn(move || {
                let _b = b2.lock();
                both2.wait().unwrap();
                if a2.lock_timeout(Duration::from_millis(20)).is_err() {
                    timed.fetch_add(1, Ordering::SeqCst);
                }
            });
            {
                let _a = a.lock();
                both.wait().unwrap();
                drop(b.lock());
            }
            patient.join().unwrap();
            assert_eq!(timed_out.load(Ordering::SeqCst), 1);
            let total = *a.lock() + *b.lock();
            total
        });
        assert_eq!(total, 2 * 50 * 40);
    }
}

#[test]
fn the_dump_shows_a_parked_fiber_with_the_line_of_its_wait_and_its_owner() {
    for workers in WORKER_COUNTS {
        runtime(workers, Deadlock::Panic).block_on(|| {
            let lock = Arc::new(Mutex::new(()));
            let held = lock.lock();
            let took = line!() - 1;
            let waits = Arc::new(AtomicUsize::new(0));
            let (l, w) = (lock.clone(), waits.clone());
            let waiter = fibra::Builder::new()
                .name("waiter")
                .spawn(move || {
                    w.store(line!() as usize + 1, Ordering::SeqCst);
                    drop(l.lock());
                })
                .unwrap();
            let id = waiter.fiber().id().as_u64();
            while !parked_on_mutex(id) {
                fibra::yield_now();
            }
            let dump = fibra::dump();
            let info = dump.fiber(id).unwrap();
            let wait = info.wait.as_ref().unwrap();
            assert_eq!(wait.line as usize, waits.load(Ordering::SeqCst));
            assert!(wait.site.starts_with(&at(wait.line)), "{}", wait.site);
            assert_eq!(wait.owner, Some(fibra::current().id().as_u64()));
            assert!(wait.owner_took_at.as_ref().unwrap().starts_with(&at(took)));
            assert!(!wait.timed);
            assert_eq!(info.name.as_deref(), Some("waiter"));
            let text = dump.to_string();
            assert!(
                text.contains(&format!("fiber {id} \"waiter\" [parked on mutex")),
                "{text}"
            );
            assert!(text.contains(&format!(
                "    waits for mutex {:#x} at {}",
                wait.object, wait.site
            )));
            let json = serde_json::to_value(&dump).unwrap();
            let fibers = json["fibers"].as_array().unwrap();
            let entry = fibers.iter().find(|f| f["id"] == id).unwrap();
            assert_eq!(entry["state"], "parked");
            assert_eq!(entry["wait"]["kind"], "mutex");
            assert_eq!(entry["wait"]["line"], wait.line);
            drop(held);
            waiter.join().unwrap();
            assert!(
                fibra::dump().fiber(id).is_none(),
                "a finished fiber is not listed"
            );
        });
    }
}

#[test]
fn the_dump_shows_joins_sleeps_and_parks_at_their_lines() {
    runtime(2, Deadlock::Panic).block_on(|| {
        let sleeper = fibra::spawn(|| fibra::sleep(Duration::from_secs(3600)));
        let sleep_line = line!() - 1;
        let sleeper_id = sleeper.fiber().id().as_u64();
        let joiner = fibra::spawn(move || sleeper.join().unwrap_err().is_cancelled());
        let join_line = line!() - 1;
        let parker = fibra::spawn(|| fibra::park());
        let park_line = line!() - 1;
        let barrier = Arc::new(Barrier::new(2));
        let other = barrier.clone();
        let arrival = fibra::spawn(move || other.wait().is_ok());
        let barrier_line = line!() - 1;
        let expected = [
            (sleeper_id, fibra::wait::WaitKind::Sleep, sleep_line, true),
            (
                joiner.fiber().id().as_u64(),
                fibra::wait::WaitKind::Join,
                join_line,
                false,
            ),
            (
                parker.fiber().id().as_u64(),
                fibra::wait::WaitKind::Park,
                park_line,
                false,
            ),
            (
                arrival.fiber().id().as_u64(),
                fibra::wait::WaitKind::Barrier,
                barrier_line,
                false,
            ),
        ];
        let seen = |dump: &fibra::Dump| {
            expected.iter().all(|&(id, kind, _, _)| {
                dump.fiber(id)
                    .and_then(|f| f.wait.as_ref())
                    .is_some_and(|w| w.kind == kind)
            })
        };
        let mut dump = fibra::dump();
        while !seen(&dump) {
            fibra::sleep(Duration::from_millis(1));
            dump = fibra::dump();
        }
        for (id, _, line, timed) in expected {
            let wait = dump.fiber(id).unwrap().wait.clone().unwrap();
            assert_eq!(wait.line, line, "{dump}");
            assert_eq!(wait.timed, timed);
        }
        let join = dump.fiber(expected[1].0).unwrap().wait.clone().unwrap();
        assert_eq!(join.owner, Some(sleeper_id));
        assert_eq!(dump.holds.len(), 1, "the sleeper's timer: {dump}");
        assert_eq!(dump.holds[0].fiber, Some(sleeper_id));
        parker.fiber().unpark();
        parker.join().unwrap();
        barrier.wait().unwrap();
        arrival.join().unwrap();
        std::mem::forget(joiner);
    });
}

#[test]
fn main_blocked_on_a_channel_nobody_else_holds_is_reported_as_all_asleep() {
    const TEST: &str = "main_blocked_on_a_channel_nobody_else_holds_is_reported_as_all_asleep";
    if in_child(TEST) {
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let (writer, reader) = fibra::chan::bounded::<u32>(1);
            let _nobody_sends = writer;
            let _never = reader.recv();
        });
        unreachable!("the main fiber unwinds from its recv");
    }
    for workers in WORKER_COUNTS {
        let workers = workers.to_string();
        let output = run_child(
            TEST,
            &[("FIBRA_DEADLOCK", "panic"), ("FIBRA_WORKERS", &workers)],
        );
        let stderr = fibra_testing::assert_all_asleep_reported(&output);
        assert!(stderr.contains("fibra dump: 1 fibers"), "{stderr}");
        assert!(
            stderr.contains("\"main\" [parked on channel recv, "),
            "{stderr}"
        );
    }
}

#[test]
fn waits_something_outside_the_fibers_can_end_are_not_reported_as_all_asleep() {
    const TEST: &str = "waits_something_outside_the_fibers_can_end_are_not_reported_as_all_asleep";
    if in_child(TEST) {
        let later = Duration::from_millis(200);
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            // A plain thread holding a writer, sending after a while.
            let (writer, reader) = fibra::chan::bounded(1);
            let sender = std::thread::spawn(move || {
                std::thread::sleep(later);
                writer.send(1).unwrap();
            });
            assert_eq!(reader.recv(), Some(1));
            sender.join().unwrap();

            // A tokio task unparking the main fiber later.
            let unparked = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (me, flag) = (fibra::current(), unparked.clone());
            tokio::spawn(async move {
                tokio::time::sleep(later).await;
                flag.store(true, Ordering::SeqCst);
                me.unpark();
            });
            while !unparked.load(Ordering::SeqCst) {
                fibra::park();
            }

            // A plain thread waiting for a timer of the process's fallback driver (the
            // driver of timed waits outside every runtime), unparking the main fiber after it.
            let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (me, flag) = (fibra::current(), fired.clone());
            let waiter = std::thread::spawn(move || {
                let deadline = std::time::Instant::now() + later;
                futures::executor::block_on(fibra::wait::TaskTimer::at(deadline));
                flag.store(true, Ordering::SeqCst);
                me.unpark();
            });
            while !fired.load(Ordering::SeqCst) {
                fibra::park();
            }
            waiter.join().unwrap();

            // A timer, and a job on the blocking pool.
            fibra::sleep(later);
            fibra::blocking(move || std::thread::sleep(later));

            // A fiber parked in accept, and a thread that connects later.
            let listener = fibra::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let acceptor = fibra::spawn(move || listener.accept().is_ok());
            let connector = std::thread::spawn(move || {
                std::thread::sleep(later);
                std::net::TcpStream::connect(address).is_ok()
            });
            assert!(acceptor.join().unwrap());
            assert!(connector.join().unwrap());
        });
        return;
    }
    passes_with_no_deadlock_reported(TEST);
}

/// A plain thread waits, through the tokio handle a fiber sees, for a timer on the runtime's
/// own driver, then sends what the main fiber waits for: the driver ends the thread's wait,
/// which is an untimed futex wait like any other (before, it was taken for blocked for good
/// and the main fiber was unwound from its receive, a false "all fibers are asleep").
#[test]
fn a_thread_waiting_for_a_timer_of_the_runtimes_driver_is_not_taken_for_blocked() {
    const TEST: &str =
        "a_thread_waiting_for_a_timer_of_the_runtimes_driver_is_not_taken_for_blocked";
    if in_child(TEST) {
        let received = fibra::Runtime::builder().build().unwrap().block_on(|| {
            let tokio = tokio::runtime::Handle::current();
            let (writer, reader) = fibra::chan::bounded(1);
            let sender = std::thread::spawn(move || {
                tokio.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
                writer.send(7).unwrap();
            });
            let received = reader.recv();
            sender.join().unwrap();
            received
        });
        assert_eq!(received, Some(7));
        return;
    }
    passes_with_no_deadlock_reported(TEST);
}

/// A plain thread blocked in a fibra receive is blocked for good when only the fibers could
/// send to it and they are all asleep: here the main fiber waits for what the thread would
/// send after its receive.
#[test]
fn a_thread_blocked_in_a_fibra_receive_nobody_can_answer_is_part_of_all_asleep() {
    const TEST: &str =
        "a_thread_blocked_in_a_fibra_receive_nobody_can_answer_is_part_of_all_asleep";
    if in_child(TEST) {
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let (_to_thread, thread_receives) = fibra::chan::bounded::<u32>(1);
            let (writer, reader) = fibra::chan::bounded::<u32>(1);
            std::thread::spawn(move || {
                let _never = thread_receives.recv();
                drop(writer);
            });
            let _never = reader.recv();
        });
        unreachable!("the main fiber unwinds from its recv");
    }
    for workers in WORKER_COUNTS {
        let workers = workers.to_string();
        let output = fibra_testing::run_child_within(
            TEST,
            &[("FIBRA_DEADLOCK", "panic"), ("FIBRA_WORKERS", &workers)],
            Duration::from_secs(60),
        );
        let stderr = fibra_testing::assert_all_asleep_reported(&output);
        assert!(
            stderr.contains("\"main\" [parked on channel recv, "),
            "{stderr}"
        );
    }
}

/// Runs child test `test` on 1 and 2 workers under `Deadlock::Panic`: it passes, and no
/// deadlock is reported.
fn passes_with_no_deadlock_reported(test: &str) {
    for workers in [1, 2] {
        let workers = workers.to_string();
        let output = run_child(
            test,
            &[("FIBRA_DEADLOCK", "panic"), ("FIBRA_WORKERS", &workers)],
        );
        fibra_testing::assert_passed(&output);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("deadlock"), "{stderr}");
    }
}

/// Two plain threads take turns, one waking the other and then blocking, while the main
/// fiber waits for what one of them sends: read one after the other, both could look blocked
/// for good though one had just been woken (a false report, before, in about one run in
/// three of this test).
#[test]
fn threads_that_wake_each_other_are_not_taken_for_blocked() {
    const TEST: &str = "threads_that_wake_each_other_are_not_taken_for_blocked";
    if in_child(TEST) {
        const ROUNDS: u32 = 2_000;
        let received = fibra::Runtime::builder().build().unwrap().block_on(|| {
            let (to_main, from_b) = fibra::chan::bounded::<u32>(1);
            let (to_b, b_turns) = std::sync::mpsc::channel::<u32>();
            let (to_c, c_turns) = std::sync::mpsc::channel::<()>();
            let b = std::thread::spawn(move || {
                while let Ok(round) = b_turns.recv() {
                    let busy = std::time::Instant::now();
                    while busy.elapsed() < Duration::from_millis(1) {
                        std::hint::spin_loop();
                    }
                    to_main.send(round).unwrap();
                    to_c.send(()).unwrap();
                }
            });
            let c = std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    to_b.send(round).unwrap();
                    c_turns.recv().unwrap();
                }
            });
            let mut received = 0;
            while from_b.recv().is_some() {
                received += 1;
            }
            b.join().unwrap();
            c.join().unwrap();
            received
        });
        assert_eq!(received, ROUNDS);
        return;
    }
    let output = run_child(TEST, &[("FIBRA_DEADLOCK", "panic"), ("FIBRA_WORKERS", "1")]);
    fibra_testing::assert_passed(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("deadlock"), "{stderr}");
}

#[test]
fn a_lock_whose_holder_parks_for_good_is_reported_as_all_asleep() {
    const TEST: &str = "a_lock_whose_holder_parks_for_good_is_reported_as_all_asleep";
    if in_child(TEST) {
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let lock = Arc::new(Mutex::new(()));
            let held = lock.clone();
            let holder = fibra::spawn(move || {
                let _guard = held.lock();
                loop {
                    fibra::park();
                }
            });
            while !lock.is_locked() {
                fibra::sleep(Duration::from_millis(1));
            }
            let _never = lock.lock();
            drop(holder);
        });
        unreachable!("the main fiber unwinds from its lock");
    }
    let output = run_child(TEST, &[("FIBRA_DEADLOCK", "panic")]);
    let stderr = fibra_testing::assert_all_asleep_reported(&output);
    assert!(stderr.contains("[parked on mutex"), "{stderr}");
    assert!(stderr.contains("[parked on park"), "{stderr}");
}

#[test]
fn a_cycle_whose_last_fiber_is_woken_spuriously_is_still_reported() {
    // Every suspension in an owned wait notes a check: one dropped because its fiber was
    // awake at the look must not lose the cycle.
    let n = runtime(1, Deadlock::Report).block_on(|| {
        let a = Arc::new(Mutex::new(()));
        let b = Arc::new(Mutex::new(()));
        let both = Arc::new(Barrier::new(2));
        let spawn = |mine: Arc<Mutex<()>>, theirs: Arc<Mutex<()>>, both: Arc<Barrier>| {
            fibra::spawn(move || {
                let _mine = mine.lock();
                both.wait().unwrap();
                drop(theirs.lock());
            })
        };
        let first = spawn(a.clone(), b.clone(), both.clone());
        let second = spawn(b.clone(), a.clone(), both.clone());
        for _ in 0..3 {
            fibra::yield_now();
        }
        for _ in 0..500 {
            second.fiber().unpark();
            fibra::yield_now();
        }
        // Idle looks run the notes; give them a hundred chances.
        for _ in 0..100 {
            if deadlocks_reported() > 0 {
                break;
            }
            fibra::sleep(Duration::from_millis(1));
        }
        let n = deadlocks_reported();
        std::mem::forget((first, second));
        n
    });
    assert_eq!(n, 1, "the cycle was not reported");
}

static DROPPED_IN_FIBER: AtomicUsize = AtomicUsize::new(0);
static DROPPED_ELSEWHERE: AtomicUsize = AtomicUsize::new(0);

/// Counts where it is dropped.
struct Witness;

impl Drop for Witness {
    fn drop(&mut self) {
        let count = if fibra::wait::in_fiber() {
            &DROPPED_IN_FIBER
        } else {
            &DROPPED_ELSEWHERE
        };
        count.fetch_add(1, Ordering::SeqCst);
    }
}

fibra::fiber_local! {
    static WITNESS: Option<Witness> = None;
}

#[test]
fn a_listed_fiber_drops_its_values_in_the_fiber_as_it_finishes() {
    // A fiber that waited on a mutex and finished before its worker's next look: its worker
    // may still list it for a cycle check and hold its last reference, but its values went
    // in the fiber, as it finished, not in the worker's loop that drops the listing.
    runtime(1, Deadlock::Panic).block_on(|| {
        let mutex = Arc::new(Mutex::new(()));
        let guard = mutex.lock();
        let theirs = mutex.clone();
        let child = WITNESS.scope(Some(Witness), || fibra::spawn(move || drop(theirs.lock())));
        fibra::yield_now();
        drop(guard);
        child.join().unwrap();
        for _ in 0..500 {
            fibra::yield_now();
        }
    });
    assert_eq!(DROPPED_ELSEWHERE.load(Ordering::SeqCst), 0);
    assert_eq!(DROPPED_IN_FIBER.load(Ordering::SeqCst), 1);
}

/// Reads the data it borrows as it drops: a drop after the data is gone would read freed
/// memory.
struct ReadsOnDrop<'a> {
    data: &'a [u64],
    sum: &'a AtomicUsize,
}

impl Drop for ReadsOnDrop<'_> {
    fn drop(&mut self) {
        let sum: u64 = self.data.iter().sum();
        self.sum.store(sum as usize, Ordering::SeqCst);
    }
}

/// A global deadlock under `Panic` while the main fiber's scope waits for its child (a
/// shielded wait): the child unwinds first, reading what it borrows from the main fiber's
/// frame, and only then does the scope end, re-raising the child's `Deadlocked`. (Before, the
/// main fiber alone was doomed, and unwound out of the wait with the child still parked on
/// borrowed data.) In a child process, as the other global checks: a test harness's threads
/// could still wake a fiber, for all the check can tell.
#[test]
fn a_global_deadlock_unwinds_a_scopes_child_before_the_scope_ends() {
    const TEST: &str = "a_global_deadlock_unwinds_a_scopes_child_before_the_scope_ends";
    if in_child(TEST) {
        let sum = AtomicUsize::new(0);
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let data: Vec<u64> = (0..1000).collect();
            let ended = panic::catch_unwind(AssertUnwindSafe(|| {
                fibra::scope(|s| {
                    s.spawn(|| {
                        let _reads = ReadsOnDrop {
                            data: &data,
                            sum: &sum,
                        };
                        loop {
                            fibra::park();
                        }
                    });
                });
            }));
            let payload = ended.expect_err("the scope re-raises its child's panic");
            assert!(payload.downcast_ref::<Deadlocked>().is_some());
            assert_eq!(
                sum.load(Ordering::SeqCst),
                499_500,
                "the child read the data as it unwound, before the scope ended"
            );
        });
        return;
    }
    passes_in_children_under_the_panic_policy(TEST);
}

/// A fiber found in a global deadlock while it waits inside a shield is not unwound, and its
/// verdict does not outlive that wait: here the other fiber's unwinding gives it the mutex it
/// waited for, and it goes on, through later waits, without a `Deadlocked` of its own.
#[test]
fn a_shielded_waiter_freed_by_the_others_unwinding_goes_on_without_a_stale_verdict() {
    const TEST: &str =
        "a_shielded_waiter_freed_by_the_others_unwinding_goes_on_without_a_stale_verdict";
    if in_child(TEST) {
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let mutex = Arc::new(Mutex::new(()));
            let (never, waits) = fibra::chan::bounded::<()>(0);
            let holder = {
                let mutex = mutex.clone();
                fibra::spawn(move || {
                    let _held = mutex.lock();
                    waits.recv();
                })
            };
            while !mutex.is_locked() {
                fibra::yield_now();
            }
            // Every fiber asleep: this one in the lock, the holder in the receive.
            fibra::shield(|| drop(mutex.lock()));
            fibra::sleep(Duration::from_millis(1));
            let payload = holder.join().unwrap_err().into_panic();
            assert!(payload.is::<Deadlocked>());
            drop(never);
        });
        return;
    }
    passes_in_children_under_the_panic_policy(TEST);
}

/// A fiber that catches its `Deadlocked` and deadlocks again among the same fibers is a new
/// deadlock: reported and unwound again (before, the check took it for the one it had
/// reported, and the program hung silently).
#[test]
fn a_second_global_deadlock_among_the_same_fibers_is_reported_again() {
    const TEST: &str = "a_second_global_deadlock_among_the_same_fibers_is_reported_again";
    if in_child(TEST) {
        fibra::Runtime::builder().build().unwrap().block_on(|| {
            let (writer, reader) = fibra::chan::bounded::<u32>(1);
            let _nobody_sends = writer;
            for _ in 0..3 {
                let caught = panic::catch_unwind(AssertUnwindSafe(|| reader.recv()));
                assert!(caught.expect_err("a deadlock").is::<Deadlocked>());
            }
            assert_eq!(deadlocks_reported(), 3);
        });
        return;
    }
    passes_in_children_under_the_panic_policy(TEST);
}

/// Runs `test` in a child process under `Deadlock::Panic` on each worker count, and checks
/// that it passed.
fn passes_in_children_under_the_panic_policy(test: &str) {
    for workers in WORKER_COUNTS {
        let workers = workers.to_string();
        let output = run_child(
            test,
            &[("FIBRA_DEADLOCK", "panic"), ("FIBRA_WORKERS", &workers)],
        );
        fibra_testing::assert_passed(&output);
    }
}
