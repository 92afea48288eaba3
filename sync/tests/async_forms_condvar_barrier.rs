//! The async forms of Condvar and Barrier: when the wait begins, what dropping the future at
//! each of its states gives back, and fibers, tokio tasks and hand-polled futures as parties
//! of one condition variable or barrier.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{Barrier, BarrierError, Condvar, Event, Mutex};
use fibra_testing::{let_others_run, on, on_each_worker_count, poll_once, until_parked};
use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Wake, Waker};

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A hand-polled future and the count of its waker's wakes.
struct Polled<F> {
    future: F,
    count: Arc<Count>,
    waker: Waker,
}

impl<F: Future + Unpin> Polled<F> {
    fn new(future: F) -> Self {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        Polled {
            future,
            waker: Waker::from(count.clone()),
            count,
        }
    }

    fn poll(&mut self) -> Poll<F::Output> {
        std::pin::Pin::new(&mut self.future).poll(&mut Context::from_waker(&self.waker))
    }

    fn woken(&self) -> usize {
        self.count.0.load(Ordering::SeqCst)
    }
}

/// `future`, setting `pending` each time it returns pending: once set, the future has been
/// polled, so its wait has begun.
async fn signalling_pending<F: Future>(future: F, pending: &Event) -> F::Output {
    let mut future = pin!(future);
    poll_fn(|cx| {
        let polled = future.as_mut().poll(cx);
        if polled.is_pending() {
            pending.set();
        }
        polled
    })
    .await
}

#[test]
fn a_condvar_future_holds_the_guard_until_its_first_poll() {
    let (m, cv) = (Mutex::new(0), Condvar::new());
    let wait = cv.wait_async(m.lock());
    assert!(m.is_locked());
    drop(wait);
    assert!(!m.is_locked(), "dropped before its first poll, it unlocks");
    // It never joined: a notification now reaches nobody, and a later waiter waits.
    cv.notify_one();
    let mut wait = Polled::new(cv.wait_async(m.lock()));
    assert!(wait.poll().is_pending());
    assert!(!m.is_locked(), "the first poll releases the mutex");
}

#[test]
fn a_notification_sent_right_after_the_first_poll_is_not_lost() {
    let (m, cv) = (Mutex::new(0), Condvar::new());
    let mut wait = Polled::new(cv.wait_async(m.lock()));
    assert!(wait.poll().is_pending());
    *m.lock() = 1;
    cv.notify_one();
    assert_eq!(wait.woken(), 1);
    let Poll::Ready(guard) = wait.poll() else {
        panic!("notified and the mutex free: ready");
    };
    assert_eq!(*guard, 1);
}

#[test]
fn notify_one_wakes_exactly_one_of_two_async_waiters() {
    let (m, cv) = (Mutex::new(()), Condvar::new());
    let mut first = Polled::new(cv.wait_async(m.lock()));
    assert!(first.poll().is_pending());
    let mut second = Polled::new(cv.wait_async(m.lock()));
    assert!(second.poll().is_pending());
    cv.notify_one();
    assert_eq!((first.woken(), second.woken()), (1, 0));
    assert!(second.poll().is_pending());
    let Poll::Ready(guard) = first.poll() else {
        panic!("the notified waiter re-locks the free mutex");
    };
    drop(guard);
    assert_eq!(second.woken(), 0);
    cv.notify_one();
    assert_eq!(second.woken(), 1);
    assert!(second.poll().is_ready());
}

#[test]
fn a_condvar_future_dropped_while_queued_gives_its_place_back() {
    let (m, cv) = (Mutex::new(()), Condvar::new());
    let mut first = Polled::new(cv.wait_async(m.lock()));
    assert!(first.poll().is_pending());
    let mut second = Polled::new(cv.wait_async(m.lock()));
    assert!(second.poll().is_pending());
    drop(first);
    cv.notify_one();
    assert_eq!(second.woken(), 1);
    assert!(second.poll().is_ready());
}

#[test]
fn a_condvar_future_dropped_after_its_notification_before_its_next_poll_passes_it_on() {
    let (m, cv) = (Mutex::new(()), Condvar::new());
    let mut first = Polled::new(cv.wait_async(m.lock()));
    assert!(first.poll().is_pending());
    let mut second = Polled::new(cv.wait_async(m.lock()));
    assert!(second.poll().is_pending());
    cv.notify_one();
    assert_eq!((first.woken(), second.woken()), (1, 0));
    drop(first);
    assert_eq!(second.woken(), 1);
    assert!(second.poll().is_ready());
}

#[test]
fn a_condvar_future_dropped_while_relocking_passes_its_notification_on() {
    let (m, cv) = (Mutex::new(()), Condvar::new());
    let mut first = Polled::new(cv.wait_async(m.lock()));
    assert!(first.poll().is_pending());
    let mut second = Polled::new(cv.wait_async(m.lock()));
    assert!(second.poll().is_pending());
    let held = m.lock();
    cv.notify_one();
    assert!(first.poll().is_pending(), "queued for the held mutex");
    assert_eq!(second.woken(), 0);
    drop(first);
    assert_eq!(second.woken(), 1);
    assert!(second.poll().is_pending(), "the mutex is still held");
    drop(held);
    assert!(second.poll().is_ready());
    assert!(!m.is_locked());
}

#[test]
fn wait_while_async_checks_at_its_first_poll_and_after_every_wake() {
    let (m, cv) = (Mutex::new(0), Condvar::new());
    let checks = AtomicUsize::new(0);
    let mut wait = Polled::new(cv.wait_while_async(m.lock(), |n| {
        checks.fetch_add(1, Ordering::SeqCst);
        *n < 2
    }));
    assert_eq!(
        checks.load(Ordering::SeqCst),
        0,
        "nothing before the first poll"
    );
    assert!(wait.poll().is_pending());
    assert_eq!(checks.load(Ordering::SeqCst), 1);
    *m.lock() = 1;
    cv.notify_one();
    assert!(wait.poll().is_pending(), "woken, the condition still holds");
    assert_eq!(checks.load(Ordering::SeqCst), 2);
    *m.lock() = 2;
    cv.notify_one();
    let Poll::Ready(guard) = wait.poll() else {
        panic!("the condition no longer holds");
    };
    assert_eq!((*guard, checks.load(Ordering::SeqCst)), (2, 3));
    drop(guard);
    // A condition false at once resolves at the first poll, keeping the mutex locked.
    let mut at_once = Polled::new(cv.wait_while_async(m.lock(), |n| *n < 2));
    assert!(matches!(at_once.poll(), Poll::Ready(guard) if *guard == 2));
}

#[test]
fn fibers_and_async_waiters_are_notified_in_the_order_they_started_waiting() {
    on(1, || {
        let state = Arc::new((Mutex::new((0usize, Vec::new())), Condvar::new()));
        let waiters: Vec<_> = (0..6)
            .map(|i| {
                let state = state.clone();
                let fiber = fibra_runtime::spawn_local(move || {
                    let (lock, cv) = &*state;
                    // Each waiter takes one ticket, in wake order; every other one awaits.
                    let mut guard = if i % 2 == 0 {
                        cv.wait_while(lock.lock(), |(tickets, _)| *tickets == 0)
                    } else {
                        fibra_runtime::block_on(async {
                            let guard = lock.lock_async().await;
                            cv.wait_while_async(guard, |(tickets, _)| *tickets == 0)
                                .await
                        })
                    };
                    guard.0 -= 1;
                    guard.1.push(i);
                });
                let_others_run();
                fiber
            })
            .collect();
        let (lock, cv) = &*state;
        for _ in 0..6 {
            lock.lock().0 += 1;
            cv.notify_one();
            let_others_run();
        }
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(lock.lock().1, [0, 1, 2, 3, 4, 5]);
    });
}

#[test]
fn a_fiber_notifies_a_waiting_tokio_task() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let state = Arc::new((Mutex::new(false), Condvar::new(), Event::new()));
        let task = tokio.spawn({
            let state = state.clone();
            async move {
                let (lock, cv, waiting) = &*state;
                let guard = lock.lock_async().await;
                *signalling_pending(cv.wait_while_async(guard, |ready| !*ready), waiting).await
            }
        });
        let (lock, cv, waiting) = &*state;
        waiting.wait();
        *lock.lock() = true;
        cv.notify_one();
        assert!(fibra_runtime::block_on(task).unwrap());
    });
}

#[test]
fn a_tokio_task_notifies_waiting_fibers_blocking_and_awaiting() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let state = Arc::new((Mutex::new(false), Condvar::new()));
        let blocking = {
            let state = state.clone();
            fibra_runtime::spawn(move || {
                let (lock, cv) = &*state;
                *cv.wait_while(lock.lock(), |ready| !*ready)
            })
        };
        let awaiting = {
            let state = state.clone();
            fibra_runtime::spawn(move || {
                let (lock, cv) = &*state;
                fibra_runtime::block_on(async {
                    *cv.wait_while_async(lock.lock_async().await, |ready| !*ready)
                        .await
                })
            })
        };
        until_parked(blocking.fiber());
        until_parked(awaiting.fiber());
        let notifier = tokio.spawn(async move {
            let (lock, cv) = &*state;
            *lock.lock_async().await = true;
            cv.notify_all();
        });
        fibra_runtime::block_on(notifier).unwrap();
        assert!(blocking.join().unwrap());
        assert!(awaiting.join().unwrap());
    });
}

/// A fiber and a tokio task take turns, each waiting for the other's turn: a lost
/// notification would hang it.
#[test]
fn a_fiber_and_a_tokio_task_take_turns_without_losing_a_notification() {
    const TURNS: u32 = 500;
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let state = Arc::new((Mutex::new(0u32), Condvar::new()));
        let task = tokio.spawn({
            let state = state.clone();
            async move {
                let (turn, cv) = &*state;
                for _ in 0..TURNS {
                    let guard = turn.lock_async().await;
                    let mut guard = cv.wait_while_async(guard, |t| *t % 2 != 1).await;
                    *guard += 1;
                    cv.notify_one();
                }
            }
        });
        let (turn, cv) = &*state;
        for _ in 0..TURNS {
            let mut guard = cv.wait_while(turn.lock(), |t| *t % 2 != 0);
            *guard += 1;
            cv.notify_one();
        }
        fibra_runtime::block_on(task).unwrap();
        assert_eq!(*turn.lock(), 2 * TURNS);
    });
}

#[test]
fn tasks_of_a_current_thread_runtime_wait_on_each_other() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (turn, cv) = (Mutex::new(0u32), Condvar::new());
    tokio.block_on(async {
        let player = |me: u32| {
            let (turn, cv) = (&turn, &cv);
            async move {
                for _ in 0..100 {
                    let guard = turn.lock_async().await;
                    let mut guard = cv.wait_while_async(guard, |t| *t % 2 != me).await;
                    *guard += 1;
                    cv.notify_one();
                }
            }
        };
        tokio::join!(player(0), player(1));
    });
    assert_eq!(*turn.lock(), 200);
}

#[test]
fn condvar_futures_are_debug() {
    let (m, cv) = (Mutex::new(0), Condvar::new());
    let wait = cv.wait_async(m.lock());
    assert!(format!("{wait:?}").starts_with("CondvarWait"));
    drop(wait);
    let wait = cv.wait_while_async(m.lock(), |_| true);
    assert!(format!("{wait:?}").starts_with("CondvarWaitWhile"));
}

#[test]
fn a_barrier_future_arrives_at_its_first_poll() {
    let barrier = Barrier::new(2);
    let actions = AtomicUsize::new(0);
    let unpolled = barrier.wait_with_action_async(|| {
        actions.fetch_add(1, Ordering::SeqCst);
    });
    drop(unpolled);
    // Nobody arrived: the next two arrivals form the cycle, the barrier whole.
    let mut first = Polled::new(barrier.wait_async());
    assert!(first.poll().is_pending());
    let mut last = Polled::new(barrier.wait_with_action_async(|| {
        actions.fetch_add(1, Ordering::SeqCst);
    }));
    let Poll::Ready(Ok(led)) = last.poll() else {
        panic!("the last arrival completes the cycle in its first poll");
    };
    assert!(led.is_leader());
    assert_eq!((led.index(), actions.load(Ordering::SeqCst)), (1, 1));
    assert_eq!(first.woken(), 1);
    let Poll::Ready(Ok(first)) = first.poll() else {
        panic!("released");
    };
    assert_eq!((first.index(), first.is_leader()), (0, false));
    assert!(!barrier.is_broken());
}

#[test]
fn a_barrier_future_dropped_after_arriving_breaks_the_incomplete_cycle() {
    on(1, || {
        let barrier = Arc::new(Barrier::new(3));
        let fiber = {
            let barrier = barrier.clone();
            fibra_runtime::spawn_local(move || barrier.wait())
        };
        let_others_run();
        let mut task = Polled::new(barrier.wait_async());
        assert!(task.poll().is_pending());
        drop(task);
        assert!(barrier.is_broken());
        assert_eq!(fiber.join().unwrap(), Err(BarrierError::Broken));
    });
}

#[test]
fn a_barrier_future_dropped_after_its_cycle_completed_changes_nothing() {
    let barrier = Barrier::new(2);
    // Released, not polled again.
    let mut released = Polled::new(barrier.wait_async());
    assert!(released.poll().is_pending());
    assert!(barrier.wait().unwrap().is_leader());
    assert_eq!(released.woken(), 1);
    drop(released);
    assert!(!barrier.is_broken());
    // Complete but held by its leader's action: the future's party is not short.
    let mut complete = Polled::new(barrier.wait_async());
    assert!(complete.poll().is_pending());
    let leader = barrier.wait_with_action(move || drop(complete));
    assert!(leader.unwrap().is_leader());
    assert!(!barrier.is_broken());
    let mut next = Polled::new(barrier.wait_async());
    assert!(next.poll().is_pending());
    assert_eq!(barrier.wait().map(|r| r.index()), Ok(1));
    assert!(matches!(next.poll(), Poll::Ready(Ok(r)) if r.index() == 0));
}

#[test]
fn a_broken_barrier_reports_broken_to_async_waiters() {
    let barrier = Barrier::new(2);
    let mut waiting = Polled::new(barrier.wait_async());
    assert!(waiting.poll().is_pending());
    barrier.reset();
    assert_eq!(waiting.woken(), 1);
    assert_eq!(waiting.poll(), Poll::Ready(Err(BarrierError::Broken)));
    assert_eq!(
        barrier.wait_timeout(std::time::Duration::ZERO),
        Err(BarrierError::TimedOut)
    );
    assert_eq!(
        poll_once(&mut barrier.wait_async()),
        Poll::Ready(Err(BarrierError::Broken))
    );
}

#[test]
fn a_panicking_action_of_an_async_leader_breaks_the_barrier_and_propagates() {
    let barrier = Barrier::new(2);
    let mut waiting = Polled::new(barrier.wait_async());
    assert!(waiting.poll().is_pending());
    let mut leader = barrier.wait_with_action_async(|| panic!("the action failed"));
    assert!(catch_unwind(AssertUnwindSafe(|| poll_once(&mut leader))).is_err());
    assert!(barrier.is_broken());
    assert_eq!(waiting.poll(), Poll::Ready(Err(BarrierError::Broken)));
}

/// Fibers waiting and tokio tasks awaiting are the parties of the same cycles: one leader per
/// cycle, which alone runs the action, and indices 0 to parties - 1.
#[test]
fn fibers_and_tokio_tasks_complete_cycles_together() {
    const ROUNDS: usize = 4;
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let barrier = Arc::new(Barrier::new(4));
        let actions = Arc::new(AtomicUsize::new(0));
        let results = Arc::new(StdMutex::new(Vec::new()));
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let (barrier, actions, results) =
                    (barrier.clone(), actions.clone(), results.clone());
                tokio.spawn(async move {
                    for round in 0..ROUNDS {
                        let r = barrier
                            .wait_with_action_async(|| {
                                actions.fetch_add(1, Ordering::SeqCst);
                            })
                            .await
                            .unwrap();
                        let record = (round, r.index(), r.is_leader());
                        results.lock().unwrap().push(record);
                    }
                })
            })
            .collect();
        fibra_runtime::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for round in 0..ROUNDS {
                        let r = barrier
                            .wait_with_action(|| {
                                actions.fetch_add(1, Ordering::SeqCst);
                            })
                            .unwrap();
                        let record = (round, r.index(), r.is_leader());
                        results.lock().unwrap().push(record);
                    }
                });
            }
        });
        for task in tasks {
            fibra_runtime::block_on(task).unwrap();
        }
        let mut results = std::mem::take(&mut *results.lock().unwrap());
        results.sort();
        let expected: Vec<_> = (0..ROUNDS)
            .flat_map(|round| (0..4).map(move |i| (round, i, i == 3)))
            .collect();
        assert_eq!(results, expected);
        assert_eq!(actions.load(Ordering::SeqCst), ROUNDS);
    });
}

#[test]
fn barrier_futures_are_debug() {
    let barrier = Barrier::new(2);
    assert!(format!("{:?}", barrier.wait_async()).starts_with("BarrierWait"));
}
