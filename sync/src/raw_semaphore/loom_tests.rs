//! Model-checks the permit core: mutual exclusion, no lost wake-up (a lost one leaves a
//! modelled thread parked for good, which loom reports as a deadlock), handoff of permits a
//! dropped future had been granted, and partial grants to a large request.

use super::*;
use fibra_runtime::loom::sync::atomic::AtomicUsize;
use fibra_runtime::wait::WaitKind;
use loom::sync::Arc;
use loom::thread;
use std::task::Wake;

/// Two threads and the main thread each take the lock once through the blocking path; the
/// holders never overlap and every permit comes back.
fn exclusion(fair: bool) {
    model(move || {
        let sem = Arc::new(RawSemaphore::new(1, 1, fair));
        let inside = Arc::new(AtomicUsize::new(0));
        let critical = {
            let (sem, inside) = (sem.clone(), inside.clone());
            move || {
                sem.acquire(1, Deadline::NEVER, WaitSite::new(WaitKind::Semaphore, &()))
                    .unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
                inside.fetch_sub(1, Ordering::SeqCst);
                sem.release(1);
            }
        };
        let others: Vec<_> = (0..2).map(|_| thread::spawn(critical.clone())).collect();
        critical();
        for other in others {
            other.join().unwrap();
        }
        assert_eq!(sem.available(), 1);
    });
}

#[test]
fn loom_fair_lock_excludes_and_hands_off_without_losing_a_wake() {
    exclusion(true);
}

#[test]
fn loom_unfair_lock_excludes_and_wakes_a_waiter_for_every_release_it_needs() {
    exclusion(false);
}

/// A waker that does nothing: the future below is polled once and then dropped.
struct Noop;

impl Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

/// A future queues for the lock and is dropped, racing with the release that may grant it the
/// lock: whatever it was granted must reach the blocked thread behind it.
fn dropped_future_passes_on(fair: bool) {
    model(move || {
        let sem = Arc::new(RawSemaphore::new(1, 1, fair));
        assert!(sem.try_acquire(1));
        let dropper = {
            let sem = sem.clone();
            thread::spawn(move || {
                let waker = Waker::from(std::sync::Arc::new(Noop));
                let mut future = sem.acquire_async(1);
                let granted = Pin::new(&mut future)
                    .poll(&mut Context::from_waker(&waker))
                    .is_ready();
                drop(future);
                if granted {
                    sem.release(1);
                }
            })
        };
        let blocked = {
            let sem = sem.clone();
            thread::spawn(move || {
                sem.acquire(1, Deadline::NEVER, WaitSite::new(WaitKind::Semaphore, &()))
                    .unwrap();
                sem.release(1);
            })
        };
        sem.release(1);
        dropper.join().unwrap();
        blocked.join().unwrap();
        assert_eq!(sem.available(), 1);
    });
}

#[test]
fn loom_fair_dropped_future_hands_its_grant_on() {
    dropped_future_passes_on(true);
}

#[test]
fn loom_unfair_dropped_future_passes_its_wake_on() {
    dropped_future_passes_on(false);
}

#[test]
fn loom_fair_large_request_collects_partial_grants() {
    model(|| {
        // Two holders of one permit each; a request for both waits for both releases.
        let sem = Arc::new(RawSemaphore::new(2, 2, true));
        assert!(sem.try_acquire(1));
        assert!(sem.try_acquire(1));
        let holders: Vec<_> = (0..2)
            .map(|_| {
                let sem = sem.clone();
                thread::spawn(move || sem.release(1))
            })
            .collect();
        sem.acquire(2, Deadline::NEVER, WaitSite::new(WaitKind::Semaphore, &()))
            .unwrap();
        assert_eq!(sem.available(), 0);
        for holder in holders {
            holder.join().unwrap();
        }
        sem.release(2);
        assert_eq!(sem.available(), 2);
    });
}

/// Explores every interleaving with at most 3 preemptions (loom's `LOOM_MAX_PREEMPTIONS`
/// overrides it); deeper bounds take minutes.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(f);
}
