//! A fiber blocked in a latch, a wait group, an event, an event count, a semaphore or a
//! once-cell shows in the dump what it waits on and the line of its call.
#![cfg(not(loom))] // loom builds run only the models in the library

use fibra::sync::{CountDownLatch, Event, EventCount, OnceCell, Semaphore, WaitGroup};
use fibra::wait::WaitKind;
use fibra_testing::{on_each_worker_count, parked_wait};
use std::sync::Arc;

/// The address a dump shows as the object of a wait on `object`.
fn address<T>(object: &T) -> usize {
    object as *const T as usize
}

#[test]
fn latch_wait_group_and_event_waits_show_their_kind_object_and_line() {
    on_each_worker_count(|_| {
        let latch = Arc::new(CountDownLatch::new(1));
        let l = latch.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || l.wait()));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::CountDownLatch, line));
        assert_eq!(wait.object, address(&*latch));
        assert!(wait.site.starts_with(file!()), "{}", wait.site);
        latch.count_down();
        waiter.join().unwrap();

        let group = Arc::new(WaitGroup::new());
        group.add(1);
        let g = group.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || g.wait()));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::WaitGroup, line));
        assert_eq!(wait.object, address(&*group));
        group.done();
        waiter.join().unwrap();

        let event = Arc::new(Event::new());
        let e = event.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || e.wait()));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Event, line));
        assert_eq!(wait.object, address(&*event));
        event.set();
        waiter.join().unwrap();

        let count = Arc::new(EventCount::new());
        let c = count.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || c.await_value(1)));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::EventCount, line));
        count.advance();
        waiter.join().unwrap();
    });
}

#[test]
fn semaphore_acquires_show_the_line_of_the_call() {
    on_each_worker_count(|_| {
        let sem = Arc::new(Semaphore::new(0));
        let s = sem.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || s.acquire().forget()));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Semaphore, line));
        assert_eq!(wait.object, address(&*sem));
        sem.add_permits(1);
        waiter.join().unwrap();

        let s = sem.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || s.acquire_owned()));
        assert_eq!(parked_wait(waiter.fiber()).line, line);
        sem.add_permits(1);
        drop(waiter.join().unwrap());

        let s = sem.clone();
        let all = move || drop(fibra::sync::acquire_all(&[(&*s, 2)]));
        let (line, waiter) = (line!() - 1, fibra::spawn(all));
        assert_eq!(parked_wait(waiter.fiber()).line, line);
        sem.add_permits(2);
        waiter.join().unwrap();
    });
}

#[test]
fn a_caller_waiting_for_another_to_initialise_a_cell_shows_a_once_wait() {
    on_each_worker_count(|_| {
        let cell = Arc::new(OnceCell::new());
        let go = Arc::new(Event::new());
        let (c, g) = (cell.clone(), go.clone());
        let initialising = fibra::spawn(move || {
            *c.get_or_init(|| {
                g.wait();
                5
            })
        });
        assert_eq!(parked_wait(initialising.fiber()).kind, WaitKind::Event);
        let c = cell.clone();
        let (line, waiter) = (line!(), fibra::spawn(move || *c.get_or_init(|| 6)));
        let wait = parked_wait(waiter.fiber());
        assert_eq!((wait.kind, wait.line), (WaitKind::Once, line));
        go.set();
        assert_eq!(initialising.join().unwrap(), 5);
        assert_eq!(waiter.join().unwrap(), 5);
    });
}

/// A lock taken inside a later poll of `block_on` is recorded as a mutex wait while the fiber
/// waits for it, and the `block_on`'s own wait once the fiber parks there again, holding the
/// lock: no false cycle of the fiber with itself, and no wait left recorded after either.
#[test]
fn a_wait_inside_a_poll_of_block_on_is_recorded_as_itself_and_ends_with_it() {
    use std::future::poll_fn;
    use std::task::Poll;

    for workers in [1, 2] {
        let runtime = fibra::Runtime::builder()
            .workers(workers)
            .on_deadlock(fibra::Deadlock::Panic)
            .build()
            .unwrap();
        let handle = runtime.handle();
        let seen = runtime.block_on(|| {
            let lock = Arc::new(fibra::sync::Mutex::new(()));
            let (taken_tx, taken) = fibra::chan::bounded(1);
            let (waker_tx, wakers) = fibra::chan::bounded::<std::task::Waker>(1);
            let me = fibra::current();
            let holder = {
                let lock = lock.clone();
                fibra::spawn(move || {
                    let guard = lock.lock();
                    taken_tx.send(()).unwrap();
                    let inner = parked_wait(&me).kind;
                    drop(guard);
                    // Sent once the fiber holds the lock, from the poll that took it.
                    let waker = wakers.recv().unwrap();
                    let outer = parked_wait(&me).kind;
                    waker.wake();
                    [inner, outer]
                })
            };
            taken.recv().unwrap();
            let mut polls = 0;
            let mut guard = None;
            fibra::block_on(poll_fn(|cx| {
                polls += 1;
                match polls {
                    1 => {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                    2 => {
                        guard = Some(lock.lock());
                        waker_tx.send(cx.waker().clone()).unwrap();
                        Poll::Pending
                    }
                    _ => Poll::Ready(()),
                }
            }));
            drop(guard);
            let mine = fibra::dump().fiber(fibra::current().id().as_u64()).cloned();
            assert!(mine.unwrap().wait.is_none(), "no wait left recorded");
            holder.join().unwrap()
        });
        assert_eq!(
            seen,
            [WaitKind::Mutex, WaitKind::BlockOn],
            "{workers} workers"
        );
        assert_eq!(handle.metrics().deadlocks, 0, "{workers} workers");
    }
}
