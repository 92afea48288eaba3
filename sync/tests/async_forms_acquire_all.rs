//! acquire_all_async: all or none across semaphores, nothing held while it waits, nothing held
//! after it is dropped at any point, and fibers and tokio tasks on either side.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra_sync::{acquire_all_async, Event, Semaphore};
use fibra_testing::{let_others_run, on_each_worker_count, poll_once};
use std::sync::Arc;
use std::task::Poll;

fn counts(permits: &[fibra_sync::Permit<'_>]) -> Vec<usize> {
    permits.iter().map(|p| p.count()).collect()
}

#[test]
fn acquire_all_async_owns_its_request_list_and_takes_everything() {
    let (a, b) = (Semaphore::new(2), Semaphore::new(1));
    let requests = vec![(&a, 1), (&b, 1), (&a, 1)];
    let mut all = acquire_all_async(&requests);
    drop(requests);
    let Poll::Ready(permits) = poll_once(&mut all) else {
        panic!("every permit was free")
    };
    assert_eq!(counts(&permits), [1, 1, 1]);
    assert_eq!((a.available_permits(), b.available_permits()), (0, 0));
    drop(permits);
    assert_eq!((a.available_permits(), b.available_permits()), (2, 1));
}

/// Each step of a wait for `x` while `y` is free: after the round that missed `x`, while
/// queued on it, and once handed its permit, the future holds nothing of `y`.
#[test]
fn acquire_all_async_holds_nothing_while_it_waits() {
    let (x, y) = (Semaphore::new(1), Semaphore::new(1));
    let holding = x.acquire();
    let mut all = acquire_all_async(&[(&x, 1), (&y, 1)]);
    assert!(
        poll_once(&mut all).is_pending(),
        "x is held: the round misses"
    );
    assert_eq!(y.available_permits(), 1);
    assert!(poll_once(&mut all).is_pending(), "queued on x");
    assert_eq!(y.available_permits(), 1);
    drop(holding); // handed to the queued future
    assert_eq!(x.available_permits(), 0);
    let Poll::Ready(permits) = poll_once(&mut all) else {
        panic!("x was handed over and y is free")
    };
    assert_eq!(counts(&permits), [1, 1]);
    drop(permits);
    assert_eq!((x.available_permits(), y.available_permits()), (1, 1));
}

/// Dropped in each state it can be in, the future holds nothing afterwards, and a permit a
/// semaphore had handed it goes to that semaphore's next waiter.
#[test]
fn a_dropped_acquire_all_async_holds_nothing_and_passes_grants_on() {
    let (x, y) = (Semaphore::new(1), Semaphore::new(1));
    let free = |x: &Semaphore, y: &Semaphore| (x.available_permits(), y.available_permits());

    // Before its first poll.
    let holding = x.acquire();
    drop(acquire_all_async(&[(&x, 1), (&y, 1)]));
    drop(holding);
    assert_eq!(free(&x, &y), (1, 1));

    // After a round that missed, before it queued.
    let holding = x.acquire();
    let mut all = acquire_all_async(&[(&y, 1), (&x, 1)]);
    assert!(poll_once(&mut all).is_pending());
    drop(all);
    drop(holding);
    assert_eq!(free(&x, &y), (1, 1));

    // Queued: it leaves the queue, so the release finds nobody waiting.
    let holding = x.acquire();
    let mut all = acquire_all_async(&[(&y, 1), (&x, 1)]);
    assert!(poll_once(&mut all).is_pending());
    assert!(poll_once(&mut all).is_pending());
    drop(all);
    drop(holding);
    assert_eq!(free(&x, &y), (1, 1));

    // Handed x's permit but not polled again: the permit goes to x's next waiter.
    let holding = x.acquire();
    let mut all = acquire_all_async(&[(&y, 1), (&x, 1)]);
    assert!(poll_once(&mut all).is_pending());
    assert!(poll_once(&mut all).is_pending());
    let mut next = x.acquire_async();
    assert!(poll_once(&mut next).is_pending());
    drop(holding);
    drop(all);
    let Poll::Ready(next) = poll_once(&mut next) else {
        panic!("the dropped future's permit went on")
    };
    drop(next);
    assert_eq!(free(&x, &y), (1, 1));

    // Holding x's permit from its wait when the next round misses y: it gives x back.
    let holding = x.acquire();
    let mut all = acquire_all_async(&[(&y, 1), (&x, 1)]);
    assert!(poll_once(&mut all).is_pending());
    assert!(poll_once(&mut all).is_pending());
    let y_held = y.acquire();
    drop(holding);
    assert!(poll_once(&mut all).is_pending(), "y is held now");
    assert_eq!(free(&x, &y), (1, 0));
    assert!(poll_once(&mut all).is_pending(), "queued on y");
    drop(all);
    drop(y_held);
    assert_eq!(free(&x, &y), (1, 1));
}

/// A fiber releases what a tokio task's `acquire_all_async` waits for.
#[test]
fn a_tokio_task_acquires_all_that_a_fiber_releases() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let (a, b) = (Arc::new(Semaphore::new(1)), Arc::new(Semaphore::new(2)));
        let held = b.acquire_n(2);
        let task = tokio.spawn({
            let (a, b) = (a.clone(), b.clone());
            async move { counts(&acquire_all_async(&[(&*a, 1), (&*b, 2)]).await) }
        });
        let_others_run();
        drop(held);
        assert_eq!(fibra_runtime::block_on(task).unwrap(), [1, 2]);
        assert_eq!((a.available_permits(), b.available_permits()), (1, 2));
    });
}

/// A tokio task releases what a fiber's `acquire_all_async` waits for.
#[test]
fn a_fiber_acquires_all_that_a_tokio_task_releases() {
    let tokio = fibra_testing::tokio_multi_thread();
    on_each_worker_count(|_| {
        let (a, b) = (Arc::new(Semaphore::new(1)), Arc::new(Semaphore::new(2)));
        let (taken, release) = (Arc::new(Event::new()), Arc::new(Event::new()));
        let task = tokio.spawn({
            let (b, taken, release) = (b.clone(), taken.clone(), release.clone());
            async move {
                let permit = b.acquire_n_async(2).await;
                taken.set();
                release.wait_async().await;
                drop(permit);
            }
        });
        taken.wait();
        let fiber = {
            let (a, b) = (a.clone(), b.clone());
            fibra_runtime::spawn(move || {
                counts(&fibra_runtime::block_on(acquire_all_async(&[
                    (&*a, 1),
                    (&*b, 2),
                ])))
            })
        };
        let_others_run();
        release.set();
        fibra_runtime::block_on(task).unwrap();
        assert_eq!(fiber.join().unwrap(), [1, 2]);
        assert_eq!((a.available_permits(), b.available_permits()), (1, 2));
    });
}
