//! `park`/`unpark` semantics, fiber wakers, and the same waits on plain threads.

use fibra_runtime::{current, park, spawn_local, wait};
use fibra_testing::on;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn unpark_before_park_returns_at_once() {
    on(1, || {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        // Queued behind us on the only worker: it cannot run before we suspend.
        let other = spawn_local(move || flag.store(true, Ordering::SeqCst));
        current().unpark();
        park();
        assert!(
            !ran.load(Ordering::SeqCst),
            "park suspended although a token was waiting"
        );
        other.join().unwrap();
    });
}

#[test]
fn repeated_unparks_coalesce_into_one_token() {
    on(1, || {
        let me = current();
        me.unpark();
        me.unpark();
        me.unpark();
        park(); // consumes the one token
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let waker = me.clone();
        let other = spawn_local(move || {
            flag.store(true, Ordering::SeqCst);
            waker.unpark();
        });
        park(); // no token left: must wait for the other fiber
        assert!(
            ran.load(Ordering::SeqCst),
            "a second token survived the coalescing"
        );
        other.join().unwrap();
    });
}

#[test]
fn a_fiber_waker_unparks_the_fiber() {
    on(2, || {
        let done = Arc::new(AtomicBool::new(false));
        let waker = wait::current_waker();
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            flag.store(true, Ordering::SeqCst);
            waker.wake();
        });
        while !done.load(Ordering::SeqCst) {
            park();
        }
        thread.join().unwrap();
    });
}

#[test]
fn park_current_blocks_a_plain_thread_until_woken() {
    let woken = Arc::new(AtomicUsize::new(0));
    let waker = wait::current_waker();
    let flag = woken.clone();
    assert!(!wait::in_fiber());
    let thread = std::thread::spawn(move || {
        flag.store(1, Ordering::SeqCst);
        waker.wake();
    });
    while woken.load(Ordering::SeqCst) == 0 {
        wait::park_current();
    }
    thread.join().unwrap();
}

#[test]
fn ping_pong_between_fibers_on_different_workers_loses_no_wake() {
    for workers in [1, 2, 4] {
        on(workers, || {
            const ROUNDS: usize = 5_000;
            let turn = Arc::new(AtomicUsize::new(0));
            let main = current();
            let t = turn.clone();
            let other = fibra_runtime::spawn(move || {
                for round in 0..ROUNDS {
                    while t.load(Ordering::Acquire) != 2 * round + 1 {
                        park();
                    }
                    t.store(2 * round + 2, Ordering::Release);
                    main.unpark();
                }
            });
            let peer = other.fiber().clone();
            for round in 0..ROUNDS {
                turn.store(2 * round + 1, Ordering::Release);
                peer.unpark();
                while turn.load(Ordering::Acquire) != 2 * round + 2 {
                    park();
                }
            }
            other.join().unwrap();
            assert_eq!(turn.load(Ordering::SeqCst), 2 * ROUNDS);
        });
    }
}

#[test]
#[should_panic(expected = "fibra::park() called outside a fiber")]
fn park_outside_a_runtime_panics() {
    park();
}
