//! Unwinding cancellation, failure in scopes, detach, the structured helpers and fiber-locals.

use fibra_runtime::{
    blocking, detach, parallel_chunks, parallel_map, parallel_map_limited, park, race, scope,
    scope_with, shield, sleep, Builder, CancelCause, CancelGroup, CancelToken, Runtime,
    ScopeOptions,
};
use fibra_testing::{on, Counted};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_token_unwinds_ten_thousand_parked_sleeping_and_joining_children() {
    for workers in [1, 2, 4] {
        let (outcome, dropped, started) = on(workers, || {
            let token = CancelToken::new();
            let dropped = AtomicUsize::new(0);
            let started = AtomicUsize::new(0);
            let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
                for i in 0..10_000 {
                    let (dropped, started) = (&dropped, &started);
                    s.spawn(move || {
                        let _guard = Counted(dropped);
                        started.fetch_add(1, Ordering::SeqCst);
                        match i % 3 {
                            0 => loop {
                                park();
                            },
                            1 => sleep(HOUR),
                            _ => {
                                fibra_runtime::spawn(|| sleep(HOUR)).join().unwrap();
                            }
                        }
                    });
                }
                while started.load(Ordering::SeqCst) < 10_000 {
                    fibra_runtime::yield_now();
                }
                token.cancel();
                loop {
                    park(); // until the cancellation unwinds the body too
                }
            });
            (outcome, dropped.into_inner(), started.into_inner())
        });
        assert_eq!(
            outcome.unwrap_err().cause(),
            CancelCause::Token,
            "{workers} workers"
        );
        assert_eq!(started, 10_000);
        assert_eq!(
            dropped, 10_000,
            "{workers} workers: every guard dropped once"
        );
    }
}

#[test]
fn a_token_cancels_its_scope_before_its_cancel_returns() {
    for workers in [1, 2, 4] {
        let outcome = on(workers, || {
            let token = CancelToken::new();
            scope_with(ScopeOptions::new().token(token.clone()), |_| {
                // From the scope's own body: cancelled at once, on this thread.
                token.cancel();
                assert!(fibra_runtime::is_cancelled());
                fibra_runtime::checkpoint();
                unreachable!("the checkpoint after the cancel unwinds");
            })
        });
        assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
        let outcome = on(workers, || {
            let token = CancelToken::new();
            scope_with(ScopeOptions::new().token(token.clone()), |_| {
                // From a plain thread: marked by the time that thread has been joined (a
                // short block of the worker, not a cancellation point).
                let canceller = token.clone();
                std::thread::spawn(move || canceller.cancel())
                    .join()
                    .unwrap();
                assert!(fibra_runtime::is_cancelled());
            })
        });
        assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
    }
}

#[test]
fn a_cancellation_reaches_a_scope_tree_deeper_than_the_cancellers_stack_could_recurse() {
    // Each level is a fiber whose scope holds the next one: a chain of 2 000 nested scopes,
    // cancelled from a fiber with the smallest stack.
    const DEPTH: usize = 2_000;
    fn nest(depth: usize, reached: &AtomicUsize, dropped: &AtomicUsize) {
        let _guard = Counted(dropped);
        reached.fetch_add(1, Ordering::SeqCst);
        if depth > 1 {
            scope(|s| {
                s.spawn(move || nest(depth - 1, reached, dropped));
                loop {
                    park();
                }
            })
        }
        loop {
            park();
        }
    }
    for workers in [1, 2, 4] {
        let (outcome, dropped) = on(workers, || {
            let token = CancelToken::new();
            let (reached, dropped) = (AtomicUsize::new(0), AtomicUsize::new(0));
            let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
                let (reached, dropped) = (&reached, &dropped);
                s.spawn(move || nest(DEPTH, reached, dropped));
                while reached.load(Ordering::SeqCst) < DEPTH {
                    fibra_runtime::yield_now();
                }
                let canceller = Builder::new()
                    .stack_size(16 * 1024)
                    .spawn(move || token.cancel())
                    .unwrap();
                let _ = canceller.join();
                loop {
                    park();
                }
            });
            (outcome, dropped.into_inner())
        });
        assert_eq!(
            outcome.unwrap_err().cause(),
            CancelCause::Token,
            "{workers} workers"
        );
        assert_eq!(
            dropped, DEPTH,
            "{workers} workers: every level unwound once"
        );
    }
}

#[test]
fn children_of_a_cancelled_scope_that_have_not_started_never_run() {
    for workers in [1, 2, 4] {
        let (outcome, ran, dropped) = on(workers, || {
            let token = CancelToken::new();
            let (ran, dropped) = (AtomicUsize::new(0), AtomicUsize::new(0));
            let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
                token.cancel();
                // Spawning is no cancellation point: the body spawns every child, each into
                // the cancelled scope, whichever worker would start it.
                for _ in 0..1000 {
                    let (ran, guard) = (&ran, Counted(&dropped));
                    s.spawn(move || {
                        let _guard = guard;
                        ran.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            (outcome, ran.into_inner(), dropped.into_inner())
        });
        assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
        assert_eq!(ran, 0, "{workers} workers: a cancelled child started");
        assert_eq!(
            dropped, 1000,
            "{workers} workers: closures lost or dropped twice"
        );
    }
}

#[test]
fn timeout_and_deadline_each_fire() {
    on(2, || {
        let by_timeout = scope_with(ScopeOptions::new().timeout(Duration::from_millis(5)), |s| {
            s.spawn(|| sleep(HOUR));
        });
        assert_eq!(by_timeout.unwrap_err().cause(), CancelCause::Deadline);
        let deadline = Instant::now() + Duration::from_millis(5);
        let by_deadline = scope_with(ScopeOptions::new().deadline(deadline), |_| sleep(HOUR));
        assert_eq!(by_deadline.unwrap_err().cause(), CancelCause::Deadline);
        assert!(Instant::now() >= deadline, "cancelled before its deadline");
        assert!(fibra_runtime::timeout(Duration::from_millis(2), || sleep(HOUR)).is_err());
        assert_eq!(fibra_runtime::timeout(HOUR, || 3), Ok(3));
    });
}

#[test]
fn an_inner_scope_catches_its_own_cancellation_and_passes_an_outer_one_through() {
    on(2, || {
        let inner_token = CancelToken::new();
        let outer_token = CancelToken::new();
        let inner_returned = AtomicBool::new(false);
        let outer = scope_with(ScopeOptions::new().token(outer_token.clone()), |_| {
            inner_token.cancel();
            let own = scope_with(ScopeOptions::new().token(inner_token.clone()), |_| loop {
                park();
            });
            assert_eq!(own.unwrap_err().cause(), CancelCause::Token);
            // Now the outer one, from inside another inner scope.
            let passed = scope_with(ScopeOptions::new().timeout(HOUR), |s| {
                s.spawn(|| outer_token.cancel());
                loop {
                    park();
                }
            });
            inner_returned.store(true, Ordering::SeqCst);
            passed
        });
        assert_eq!(outer.unwrap_err().cause(), CancelCause::Token);
        assert!(
            !inner_returned.load(Ordering::SeqCst),
            "the outer cancellation stopped at the inner scope"
        );
    });
}

#[test]
fn shield_finishes_its_body_under_cancellation() {
    on(1, || {
        let token = CancelToken::new();
        token.cancel();
        let cleaned = AtomicBool::new(false);
        let outcome = scope_with(ScopeOptions::new().token(token), |_| {
            shield(|| {
                sleep(Duration::from_millis(2));
                assert!(!fibra_runtime::is_cancelled());
                cleaned.store(true, Ordering::SeqCst);
            });
            assert!(fibra_runtime::check_cancel().is_err());
            fibra_runtime::checkpoint();
        });
        assert!(outcome.is_err());
        assert!(cleaned.load(Ordering::SeqCst));
    });
}

#[test]
fn a_panic_in_one_of_a_thousand_children_cancels_the_rest_and_is_raised_once() {
    for workers in [1, 2, 4] {
        let (payload, dropped) = on(workers, || {
            let dropped = AtomicUsize::new(0);
            let payload = panic::catch_unwind(AssertUnwindSafe(|| {
                scope(|s| {
                    for i in 0..1_000 {
                        // Moved in: a child cancelled before it starts is dropped unstarted.
                        let guard = Counted(&dropped);
                        s.spawn(move || {
                            let _guard = guard;
                            if i == 500 {
                                panic!("child 500");
                            }
                            sleep(HOUR);
                        });
                    }
                });
            }))
            .unwrap_err();
            (payload, dropped.into_inner())
        });
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"child 500"),
            "{workers} workers"
        );
        assert_eq!(dropped, 1_000);
    }
}

#[test]
fn scope_with_re_raises_a_childs_panic_rather_than_returning_it() {
    on(2, || {
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            scope_with(ScopeOptions::new().timeout(HOUR), |s| {
                s.spawn(|| panic!("boom"));
                loop {
                    park();
                }
            })
        }));
        assert_eq!(outcome.unwrap_err().downcast_ref::<&str>(), Some(&"boom"));
    });
}

#[test]
fn race_returns_the_winner_after_every_loser_dropped() {
    on(2, || {
        let dropped = AtomicUsize::new(0);
        let dropped_ref = &dropped;
        let racers: Vec<Box<dyn FnOnce() -> usize + Send + '_>> = (0..10)
            .map(|i| -> Box<dyn FnOnce() -> usize + Send + '_> {
                // Moved in: a loser cancelled before it starts is dropped unstarted.
                let guard = Counted(dropped_ref);
                Box::new(move || {
                    let _guard = guard;
                    if i != 7 {
                        sleep(HOUR);
                    }
                    i
                })
            })
            .collect();
        assert_eq!(race(racers), 7);
        assert_eq!(dropped.load(Ordering::SeqCst), 10);
    });
}

#[test]
fn parallel_map_keeps_the_input_order() {
    on(2, || {
        let doubled = parallel_map(0..100_000u64, |x| x * 2);
        assert_eq!(doubled.len(), 100_000);
        assert!(doubled.iter().enumerate().all(|(i, &x)| x == 2 * i as u64));
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let limited = parallel_map_limited(0..1_000u32, 3, |x| {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            fibra_runtime::yield_now();
            in_flight.fetch_sub(1, Ordering::SeqCst);
            x + 1
        });
        assert_eq!(limited, (1..=1_000).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3);
    });
}

/// Every item once, in input order, over a few fibers (not one per item): on 1, 2 and 4
/// workers, for lengths that split evenly and unevenly, and for none.
#[test]
fn parallel_chunks_maps_every_item_in_order_in_a_few_fibers() {
    fibra_testing::on_each_worker_count(|workers| {
        for len in [0u64, 1, 7, 1_000, 100_003] {
            let fibers = Mutex::new(std::collections::HashSet::new());
            let mapped = parallel_chunks(0..len, |x| {
                fibers.lock().unwrap().insert(fibra_runtime::current().id());
                x * 3
            });
            assert_eq!(mapped, (0..len).map(|x| x * 3).collect::<Vec<_>>());
            let fibers = fibers.into_inner().unwrap().len();
            assert!(fibers <= 4 * workers, "{fibers} fibers for {len} items");
            assert_eq!(fibers == 0, len == 0);
        }
    });
}

/// An item that blocks parks only its fiber and holds up only the rest of its block: the
/// other fibers map every other block meanwhile. A block is a sixteenth of a fiber's share
/// (8 fibers on 2 workers) and at most 64 KiB of items: 1 item of 80, 79 of 10 000, and 16
/// of 10 000 items of 4 KiB.
#[test]
fn parallel_chunks_blocks_only_the_blocked_block() {
    for (len, block) in [(80u64, 1), (10_000, 79)] {
        only_the_blocked_block(len, block, |x| x, |&x| x);
    }
    only_the_blocked_block(10_000, 16, |x| [x; 512], |items| items[0]);
}

/// `parallel_chunks` over `len` items made by `item` (`index` tells an item's index), the
/// first of which waits until every item outside its block of `block` items is mapped.
fn only_the_blocked_block<T: Send>(
    len: u64,
    block: usize,
    item: fn(u64) -> T,
    index: fn(&T) -> u64,
) {
    on(2, || {
        let others = len as usize - block;
        let done = AtomicUsize::new(0);
        let mapped = parallel_chunks((0..len).map(item), |x| {
            if index(&x) == 0 {
                // A bounded wait, far longer than the others take even on a loaded machine
                // (4 KiB items are slow to move): a chunking that serialized them would fail.
                for _ in 0..10_000_000 {
                    if done.load(Ordering::SeqCst) == others {
                        break;
                    }
                    fibra_runtime::yield_now();
                }
                assert_eq!(done.load(Ordering::SeqCst), others, "{len} items");
            }
            done.fetch_add(1, Ordering::SeqCst);
            index(&x)
        });
        assert_eq!(mapped, (0..len).collect::<Vec<_>>());
    });
}

/// An iterator whose `next` parks its fiber (its length known, so it is not collected
/// first): the other fibers wait for their turn at it as fibers, so the parked one runs again
/// on its worker, on 1, 2 and 4 workers.
#[test]
fn parallel_chunks_takes_items_from_an_iterator_that_parks() {
    fibra_testing::on_each_worker_count(|_| {
        let items = (0..200u64).inspect(|_| {
            fibra_runtime::sleep(std::time::Duration::from_micros(100));
        });
        assert_eq!(
            parallel_chunks(items, |x| x + 1),
            (1..=200).collect::<Vec<_>>()
        );
    });
}

/// An iterator whose size hint is exact but wrong, in either direction, and one whose length
/// is not known: every item is mapped once, in order.
#[test]
fn parallel_chunks_maps_iterators_whose_length_is_wrong_or_unknown() {
    /// Yields `0..yields` while claiming exactly `claims` items.
    struct Lying {
        next: u64,
        yields: u64,
        claims: usize,
    }
    impl Iterator for Lying {
        type Item = u64;
        fn next(&mut self) -> Option<u64> {
            (self.next < self.yields).then(|| {
                self.next += 1;
                self.next - 1
            })
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.claims, Some(self.claims))
        }
    }
    fibra_testing::on_each_worker_count(|_| {
        for (yields, claims) in [(5_000, 3_000), (3_000, 5_000), (10, 0), (0, 10)] {
            let lying = Lying {
                next: 0,
                yields,
                claims,
            };
            let mapped = parallel_chunks(lying, |x| x + 1);
            assert_eq!(
                mapped,
                (1..=yields).collect::<Vec<_>>(),
                "{yields} as {claims}"
            );
        }
        let evens = parallel_chunks((0..10_000u64).filter(|x| x % 2 == 0), |x| x / 2);
        assert_eq!(evens, (0..5_000).collect::<Vec<_>>());
    });
}

/// A panic drops every result made before it exactly once, and the items never mapped.
#[test]
fn parallel_chunks_drops_the_results_and_items_of_a_panicked_map() {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    static ITEMS: AtomicUsize = AtomicUsize::new(0);
    static ITEMS_DROPPED: AtomicUsize = AtomicUsize::new(0);
    #[derive(Debug)]
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }
    struct Item(u32);
    impl Drop for Item {
        fn drop(&mut self) {
            ITEMS_DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }
    for workers in [1, 2, 4] {
        on(workers, || {
            let items = (0..20_000u32).map(|x| {
                ITEMS.fetch_add(1, Ordering::SeqCst);
                Item(x)
            });
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                parallel_chunks(items, |item| {
                    if item.0 == 7_777 {
                        panic!("item 7777");
                    }
                    MADE.fetch_add(1, Ordering::SeqCst);
                    Counted
                })
            }));
            assert_eq!(
                outcome.unwrap_err().downcast_ref::<&str>(),
                Some(&"item 7777")
            );
        });
        assert!(MADE.load(Ordering::SeqCst) > 0);
        assert_eq!(DROPPED.load(Ordering::SeqCst), MADE.load(Ordering::SeqCst));
        assert_eq!(
            ITEMS_DROPPED.load(Ordering::SeqCst),
            ITEMS.load(Ordering::SeqCst)
        );
    }
}

/// A map over `0..100` with the item function it is given, as `parallel_map` and
/// `parallel_chunks` both are.
type Map = fn(std::ops::Range<u32>, &(dyn Fn(u32) + Sync)) -> Vec<()>;

#[test]
fn parallel_map_and_chunks_re_raise_the_first_panic_and_cancel_the_rest() {
    let maps: [(&str, Map); 2] = [
        ("parallel_map", |items, f| parallel_map(items, f)),
        ("parallel_chunks", |items, f| parallel_chunks(items, f)),
    ];
    for (name, map) in maps {
        on(2, || {
            let ran_past = AtomicUsize::new(0);
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                map(0..100, &|x| {
                    if x == 0 {
                        panic!("item 0");
                    }
                    sleep(HOUR);
                    ran_past.fetch_add(1, Ordering::SeqCst);
                })
            }));
            let payload = outcome.unwrap_err();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"item 0"), "{name}");
            assert_eq!(ran_past.load(Ordering::SeqCst), 0, "{name}");
        });
    }
}

#[test]
fn a_detached_panic_is_logged_and_run_waits_for_detached_fibers() {
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    // `with_default` installs the subscriber for this thread only: with one worker, every
    // fiber runs here (applications install a global subscriber instead).
    tracing::subscriber::with_default(subscriber, || {
        on(1, move || {
            detach(|| panic!("detached failure"));
            detach(move || {
                sleep(Duration::from_millis(5));
                flag.store(true, Ordering::SeqCst);
            });
        });
    });
    assert!(
        finished.load(Ordering::SeqCst),
        "run returned before a detached fiber finished"
    );
    let log = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("ERROR"), "{log}");
    assert!(
        log.contains("detached fiber panicked: fiber panicked: detached failure"),
        "{log}"
    );
    assert!(
        log.contains("cancel.rs:"),
        "the spawn location is logged: {log}"
    );
}

#[test]
fn the_shutdown_timeout_cancels_detached_fibers_that_outlive_it() {
    let unwound = Arc::new(AtomicBool::new(false));
    let flag = unwound.clone();
    Runtime::builder()
        .workers(1)
        .shutdown_timeout(Duration::from_millis(5))
        .build()
        .unwrap()
        .block_on(move || {
            detach(move || {
                struct SetOnDrop(Arc<AtomicBool>);
                impl Drop for SetOnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = SetOnDrop(flag);
                sleep(HOUR);
            });
        });
    assert!(unwound.load(Ordering::SeqCst));
}

#[test]
fn fiber_locals_are_inherited_as_snapshots_and_isolated() {
    fibra_runtime::fiber_local! {
        static TAG: &'static str = "none";
    }
    on(2, || {
        assert_eq!(TAG.get(), "none");
        TAG.scope("parent", || {
            let child = fibra_runtime::spawn(|| {
                let inherited = TAG.get();
                TAG.scope("child", fibra_runtime::yield_now);
                (inherited, TAG.get())
            });
            let siblings = scope(|s| {
                let a = s.spawn(|| {
                    TAG.scope("a", || {
                        fibra_runtime::yield_now();
                        TAG.get()
                    })
                });
                let b = s.spawn(|| {
                    TAG.scope("b", || {
                        fibra_runtime::yield_now();
                        TAG.get()
                    })
                });
                (a.join().unwrap(), b.join().unwrap())
            });
            assert_eq!(siblings, ("a", "b"));
            assert_eq!(child.join().unwrap(), ("parent", "parent"));
            assert_eq!(TAG.get(), "parent");
        });
        assert_eq!(TAG.get(), "none");
    });
}

#[test]
fn a_fibers_own_bindings_drop_while_it_is_still_in_its_cancel_scope() {
    static SAW_CANCELLED: AtomicUsize = AtomicUsize::new(0);
    struct Binding;
    impl Drop for Binding {
        fn drop(&mut self) {
            if fibra_runtime::is_cancelled() {
                SAW_CANCELLED.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    fibra_runtime::fiber_local! {
        static OWN: Option<Binding> = Some(Binding);
    }
    on(1, || {
        let token = CancelToken::new();
        let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
            s.spawn(|| {
                OWN.with(|own| assert!(own.is_some()));
                // No cancellation point follows: the body returns, then its bindings drop.
                token.cancel();
            });
        });
        assert!(outcome.is_err());
    });
    assert_eq!(SAW_CANCELLED.load(Ordering::SeqCst), 1);
}

#[test]
fn a_fibers_own_bindings_drop_in_it_before_its_joiner_sees_the_result() {
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    static IN_FIBER: AtomicUsize = AtomicUsize::new(0);
    struct Binding;
    impl Drop for Binding {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
            if fibra_runtime::wait::in_fiber() {
                IN_FIBER.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    fibra_runtime::fiber_local! {
        static OWN: Option<Binding> = Some(Binding);
    }
    for workers in [1, 2, 4] {
        DROPPED.store(0, Ordering::SeqCst);
        IN_FIBER.store(0, Ordering::SeqCst);
        on(workers, || {
            let children: Vec<_> = (0..8)
                .map(|_| fibra_runtime::spawn(|| OWN.with(|own| assert!(own.is_some()))))
                .collect();
            // Handles that keep each child's fiber alive past its end.
            let kept: Vec<_> = children.iter().map(|child| child.fiber().clone()).collect();
            for (joined, child) in children.into_iter().enumerate() {
                child.join().unwrap();
                assert!(
                    DROPPED.load(Ordering::SeqCst) > joined,
                    "dropped before the join"
                );
            }
            drop(kept);
        });
        assert_eq!(IN_FIBER.load(Ordering::SeqCst), 8, "dropped in the fibers");
    }
}

/// A fiber cancelled before it started has no end of its own: its bindings still go before
/// its joiner sees `Cancelled`, not when the last handle to the fiber goes.
#[test]
fn the_bindings_of_a_fiber_cancelled_unstarted_drop_before_its_joiner_sees_it() {
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    struct Binding;
    impl Drop for Binding {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }
    fibra_runtime::fiber_local! {
        static SHARED: Option<Arc<Binding>> = None;
    }
    for workers in [1, 2, 4] {
        DROPPED.store(0, Ordering::SeqCst);
        on(workers, || {
            let (child, kept) = SHARED.scope(Some(Arc::new(Binding)), || {
                let child = fibra_runtime::spawn(|| SHARED.with(|_| ()));
                let kept = child.fiber().clone();
                child.abort();
                (child, kept)
            });
            // Only the child's snapshot holds the binding now.
            assert!(child.join().unwrap_err().is_cancelled());
            assert_eq!(DROPPED.load(Ordering::SeqCst), 1, "dropped before the join");
            drop(kept);
        });
    }
}

#[test]
fn one_token_cancels_a_tokio_task_and_a_fiber_scope() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let token = CancelToken::new();
    let task_token = token.clone();
    let task = tokio.spawn(async move {
        tokio::select! {
            () = task_token.cancelled() => "cancelled",
            () = tokio::time::sleep(HOUR) => "slept",
        }
    });
    let outcome = on(2, move || {
        scope_with(ScopeOptions::new().token(token.clone()), |s| {
            s.spawn(move || token.cancel());
            sleep(HOUR);
        })
    });
    assert_eq!(outcome.unwrap_err().cause(), CancelCause::Token);
    assert_eq!(tokio.block_on(task).unwrap(), "cancelled");
}

#[test]
fn a_cancelled_blocking_wait_drops_the_queued_job_and_discards_the_running_one() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let (d, r, rel) = (dropped.clone(), ran.clone(), release.clone());
    Runtime::builder()
        .workers(2)
        .blocking_threads(1)
        .build()
        .unwrap()
        .block_on(move || {
            let token = CancelToken::new();
            let started = Arc::new(AtomicBool::new(false));
            let outcome = scope_with(ScopeOptions::new().token(token.clone()), |s| {
                let (r1, rel1, started1) = (r.clone(), rel.clone(), started.clone());
                s.spawn(move || {
                    blocking(move || {
                        started1.store(true, Ordering::SeqCst);
                        while !rel1.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        r1.fetch_add(1, Ordering::SeqCst);
                    })
                });
                while !started.load(Ordering::SeqCst) {
                    fibra_runtime::yield_now();
                }
                let (d2, r2) = (d.clone(), r.clone());
                let unwound = Arc::new(AtomicBool::new(false));
                let unwound2 = unwound.clone();
                s.spawn(move || {
                    struct SetOnDrop(Arc<AtomicBool>);
                    impl Drop for SetOnDrop {
                        fn drop(&mut self) {
                            self.0.store(true, Ordering::SeqCst);
                        }
                    }
                    let _unwound = SetOnDrop(unwound2);
                    struct CountDrop(Arc<AtomicUsize>);
                    impl Drop for CountDrop {
                        fn drop(&mut self) {
                            self.0.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    let guard = CountDrop(d2);
                    blocking(move || {
                        let _guard = guard;
                        r2.fetch_add(1, Ordering::SeqCst);
                    })
                });
                fibra_runtime::yield_now();
                token.cancel();
                // Let the running job finish only once the queued job's fiber has unwound.
                shield(|| {
                    while !unwound.load(Ordering::SeqCst) {
                        fibra_runtime::yield_now();
                    }
                });
                rel.store(true, Ordering::SeqCst);
                loop {
                    park();
                }
            });
            assert!(outcome.is_err());
        });
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "only the job that was running ran"
    );
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the queued job was dropped unrun"
    );
}

/// A fiber's own scope sits inside the group it was spawned into, so cancelling the group
/// reaches the fiber through two scopes. The fiber here runs cancellation points on another
/// worker at the very moment of the cancel; it must never see its hint raised before its own
/// scope is marked, or it would lower the hint for good and sleep through the cancellation.
/// (Two workers at least: the canceller spins until another worker has taken the fiber.)
#[test]
fn a_group_cancel_racing_with_the_fibers_checkpoints_is_never_lost() {
    for workers in [2, 4] {
        on(workers, || race_group_cancels(workers));
    }
}

fn race_group_cancels(workers: usize) {
    {
        for round in 0..300 {
            let group = CancelGroup::new();
            let running = Arc::new(AtomicBool::new(false));
            let fiber = {
                let (group, running) = (group.clone(), running.clone());
                Builder::new()
                    .spawn_in(&group.clone(), move || {
                        running.store(true, Ordering::SeqCst);
                        while !group.is_cancelled() {
                            fibra_runtime::checkpoint();
                        }
                        // Only the cancellation's wake-up ends this.
                        loop {
                            park();
                        }
                    })
                    .unwrap()
            };
            while !running.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            group.cancel();
            let outcome = fiber.join();
            assert!(
                outcome.is_err_and(|error| error.is_cancelled()),
                "round {round} under {workers} workers"
            );
        }
    }
}

/// A fiber cancelled before it started is dropped with the fiber-locals it was given; a
/// panic in one of their drops is contained like any other drop the worker makes (it aborted
/// the process before: the drop ran outside the containment). In a child process, as an
/// abort would end the test binary.
#[test]
fn a_panic_dropping_an_unstarted_fibers_locals_is_contained() {
    const TEST: &str = "a_panic_dropping_an_unstarted_fibers_locals_is_contained";
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a fiber-local's drop panics");
        }
    }
    fibra_runtime::fiber_local! {
        static LOCAL: Option<PanicsOnDrop> = None;
    }
    if fibra_testing::in_child(TEST) {
        on(1, || {
            let cancelled = CancelGroup::new();
            cancelled.cancel();
            // The handle goes at once, and the binding as the scope ends: the fiber holds the
            // last reference to the value when the worker drops it, during the sleep.
            LOCAL.scope(Some(PanicsOnDrop), || {
                drop(Builder::new().spawn_in(&cancelled, || ()).unwrap());
            });
            sleep(Duration::from_millis(1));
        });
        println!("the runtime went on");
        return;
    }
    let output = fibra_testing::run_child(TEST, &[]);
    assert!(
        output.status.success(),
        "{:?}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("the runtime went on"));
}

/// A fiber whose slice ends at a `checkpoint` yields there; cancelled before it runs again, it
/// unwinds from that checkpoint instead of running on to its next one.
#[test]
fn a_fiber_cancelled_while_it_yields_at_a_checkpoint_unwinds_from_it() {
    on(1, || {
        let steps = Arc::new(AtomicUsize::new(0));
        let looping = {
            let steps = steps.clone();
            fibra_runtime::spawn(move || loop {
                fibra_runtime::checkpoint();
                steps.fetch_add(1, Ordering::SeqCst);
            })
        };
        // Runs the loop until its slice ends, inside a checkpoint.
        fibra_runtime::yield_now();
        let before = steps.load(Ordering::SeqCst);
        assert!(before > 0, "the loop ran");
        looping.abort();
        assert!(looping.join().is_err());
        assert_eq!(
            steps.load(Ordering::SeqCst),
            before,
            "no step after the cancel"
        );
    });
}

/// A fiber-local value whose drop panics, dropped as its fiber finishes: the fiber's joiner
/// gets that panic rather than waiting for ever.
#[test]
fn a_fiber_local_whose_drop_panics_fails_the_join() {
    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a fiber-local's drop failed");
        }
    }

    fibra_runtime::fiber_local! {
        static LOCAL: Option<PanicsOnDrop> = Some(PanicsOnDrop);
    }
    for workers in [1, 2, 4] {
        on(workers, || {
            let child = fibra_runtime::spawn(|| LOCAL.with(|local| local.is_some()));
            let error = child.join().expect_err("the drop's panic");
            let payload = error.into_panic();
            assert_eq!(
                payload.downcast_ref::<&str>(),
                Some(&"a fiber-local's drop failed")
            );
        });
    }
}

/// A fiber cancelled before it starts is dropped unstarted; a captured value whose drop
/// panics fails its join with that panic rather than hanging it.
#[test]
fn a_captured_value_whose_drop_panics_fails_the_join_of_an_unstarted_fiber() {
    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a captured value's drop failed");
        }
    }

    on(1, || {
        let captured = PanicsOnDrop;
        let child = fibra_runtime::spawn(move || drop(captured));
        child.abort();
        let error = child.join().expect_err("the drop's panic");
        assert_eq!(
            error.into_panic().downcast_ref::<&str>(),
            Some(&"a captured value's drop failed")
        );
    });
}

#[test]
fn a_map_cancelled_from_outside_unwinds_with_the_cancellation_not_a_panic() {
    let maps: [(&str, Map); 3] = [
        ("parallel_map", |items, f| parallel_map(items, f)),
        ("parallel_map_limited", |items, f| {
            parallel_map_limited(items, 2, f)
        }),
        ("parallel_chunks", |items, f| parallel_chunks(items, f)),
    ];
    for (name, map) in maps {
        for workers in fibra_testing::WORKER_COUNTS {
            let returned = AtomicBool::new(false);
            let outcome = on(workers, || {
                let token = CancelToken::new();
                scope_with(ScopeOptions::new().token(token.clone()), |_| {
                    map(0..8, &|x| {
                        if x == 0 {
                            token.cancel();
                        }
                        sleep(HOUR);
                    });
                    returned.store(true, Ordering::SeqCst);
                })
            });
            assert_eq!(
                outcome.map_err(|cancelled| cancelled.cause()),
                Err(CancelCause::Token),
                "{name}, {workers} workers"
            );
            assert!(
                !returned.load(Ordering::SeqCst),
                "{name}, {workers} workers"
            );
        }
    }
}

#[test]
fn parallel_map_limited_takes_no_item_after_a_panic_cancelled_its_fibers() {
    for workers in fibra_testing::WORKER_COUNTS {
        let item_one_started = AtomicBool::new(false);
        let mapped_after = AtomicUsize::new(0);
        let outcome = on(workers, || {
            panic::catch_unwind(AssertUnwindSafe(|| {
                parallel_map_limited(0..100u32, 2, |x| match x {
                    0 => {
                        while !item_one_started.load(Ordering::SeqCst) {
                            fibra_runtime::yield_now();
                        }
                        panic!("item 0");
                    }
                    // Ends only once the panic has cancelled its fiber, with no cancellation
                    // point on the way: the fiber's next item is where it must stop.
                    1 => {
                        item_one_started.store(true, Ordering::SeqCst);
                        while !fibra_runtime::is_cancelled() {
                            fibra_runtime::yield_now();
                        }
                    }
                    _ => {
                        mapped_after.fetch_add(1, Ordering::SeqCst);
                    }
                })
            }))
        });
        let payload = outcome.unwrap_err();
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"item 0"),
            "{workers} workers"
        );
        assert_eq!(mapped_after.load(Ordering::SeqCst), 0, "{workers} workers");
    }
}
