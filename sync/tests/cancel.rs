//! Cancellation: a fiber cancelled while it waits unwinds out of the wait, leaves
//! the queue, and passes on whatever it had been granted; guards it held are released.

#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_runtime::{scope_with, CancelToken, Scope, ScopeOptions};
use fibra_sync::{Condvar, Mutex, Semaphore};
use fibra_testing::on_each_worker_count;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `waiters` in a scope that is cancelled once they have all started waiting.
fn cancel_while_waiting<'env>(
    started: &AtomicUsize,
    waiters: usize,
    spawn: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>),
) {
    let token = CancelToken::new();
    let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
        spawn(s);
        while started.load(Ordering::SeqCst) < waiters {
            fibra_runtime::yield_now();
        }
        // Give them time to park; correctness does not depend on it.
        fibra_runtime::sleep(std::time::Duration::from_millis(2));
        token.cancel();
        fibra_runtime::checkpoint();
    });
    assert!(outcome.is_err(), "the scope was cancelled");
}

#[test]
fn cancelled_lock_waiters_leave_the_queue() {
    on_each_worker_count(|_| {
        for mutex in [Mutex::new(0), Mutex::new_unfair(0)] {
            let held = mutex.lock();
            let started = AtomicUsize::new(0);
            cancel_while_waiting(&started, 3, |s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        started.fetch_add(1, Ordering::SeqCst);
                        *mutex.lock() += 1;
                    });
                }
            });
            // Had a cancelled waiter stayed queued, the unlock would hand the lock to nobody.
            drop(held);
            assert_eq!(*mutex.try_lock().expect("free after the unlock"), 0);
        }
    });
}

#[test]
fn a_cancelled_holder_releases_and_the_waiters_go_on() {
    on_each_worker_count(|_| {
        let mutex = Mutex::new(0);
        let started = AtomicUsize::new(0);
        fibra_runtime::scope(|outer| {
            // Waiters outside the cancelled scope, queued behind the doomed holder.
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    outer.spawn(|| {
                        while started.load(Ordering::SeqCst) == 0 {
                            fibra_runtime::yield_now();
                        }
                        *mutex.lock() += 1;
                    })
                })
                .collect();
            cancel_while_waiting(&started, 1, |s| {
                s.spawn(|| {
                    let _guard = mutex.lock();
                    started.fetch_add(1, Ordering::SeqCst);
                    fibra_runtime::sleep(std::time::Duration::from_secs(3600));
                });
            });
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
        assert_eq!(*mutex.lock(), 3);
    });
}

#[test]
fn a_cancelled_large_request_gives_back_its_partial_grant() {
    on_each_worker_count(|_| {
        let sem = Semaphore::new(1);
        let started = AtomicUsize::new(0);
        cancel_while_waiting(&started, 1, |s| {
            s.spawn(|| {
                started.fetch_add(1, Ordering::SeqCst);
                // Collects the one permit at the head of the queue, then waits for a second.
                sem.acquire_n(2).forget();
            });
        });
        assert_eq!(sem.available_permits(), 1);
        assert_eq!(sem.try_acquire_n(1).map(|p| p.count()), Some(1));
    });
}

#[test]
fn a_cancelled_condvar_waiter_leaves_the_queue() {
    on_each_worker_count(|_| {
        let (lock, cv) = (Mutex::new(false), Condvar::new());
        let started = AtomicUsize::new(0);
        fibra_runtime::scope(|outer| {
            let survivor = outer.spawn(|| {
                let guard = cv.wait_while(lock.lock(), |ready| !*ready);
                assert!(*guard);
            });
            cancel_while_waiting(&started, 1, |s| {
                s.spawn(|| {
                    let guard = lock.lock();
                    started.fetch_add(1, Ordering::SeqCst);
                    drop(cv.wait(guard));
                });
            });
            *lock.lock() = true;
            cv.notify_one();
            survivor.join().unwrap();
        });
        assert!(*lock.lock());
    });
}
