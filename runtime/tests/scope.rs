//! Borrowing scopes: children borrow the parent's stack, results come back through joins, and
//! an unjoined child's panic is re-raised only after every sibling has finished.

use fibra_runtime::scope;
use fibra_testing::{on, Counted};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

#[test]
fn children_mutate_disjoint_slices_of_the_parents_vec() {
    for workers in [1, 2, 4] {
        on(workers, || {
            let mut data: Vec<u64> = (0..10_000).collect();
            scope(|s| {
                for (i, chunk) in data.chunks_mut(100).enumerate() {
                    s.spawn(move || {
                        for x in chunk.iter_mut() {
                            *x = *x * 2 + i as u64;
                        }
                    });
                }
            });
            let expected: Vec<u64> = (0..10_000u64).map(|x| x * 2 + x / 100).collect();
            assert_eq!(data, expected, "{workers} workers");
        });
    }
}

#[test]
fn joins_return_the_childrens_values_and_the_body_value_is_returned() {
    on(2, || {
        let words = ["one", "three", "eleven"];
        let (lengths, body) = scope(|s| {
            let handles: Vec<_> = words.iter().map(|w| s.spawn(move || w.len())).collect();
            let lengths: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            (lengths, "body")
        });
        assert_eq!(lengths, [3, 5, 6]);
        assert_eq!(body, "body");
    });
}

#[test]
fn a_childs_panic_is_re_raised_after_every_sibling_finished() {
    for workers in [1, 2, 4] {
        on(workers, || {
            // Counts the sibling's end: its run to the end, or its drop unstarted when the
            // panic's cancellation comes first.
            let sibling_done = AtomicUsize::new(0);
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                scope(|s| {
                    s.spawn(|| panic!("child failed"));
                    let done = Counted(&sibling_done);
                    s.spawn(move || {
                        // Gives the panicking child every chance to finish first.
                        for _ in 0..100 {
                            fibra_runtime::yield_now();
                        }
                        drop(done);
                    });
                })
            }));
            let payload = outcome.expect_err("the scope re-raises the child's panic");
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"child failed"));
            assert_eq!(
                sibling_done.load(Ordering::SeqCst),
                1,
                "the scope returned before the sibling finished ({workers} workers)"
            );
        });
    }
}

#[test]
fn the_first_of_several_panics_is_re_raised() {
    on(1, || {
        let first_done = AtomicBool::new(false);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            scope(|s| {
                s.spawn(|| {
                    while !first_done.load(Ordering::SeqCst) {
                        fibra_runtime::yield_now();
                    }
                    panic!("second")
                });
                s.spawn(|| {
                    first_done.store(true, Ordering::SeqCst);
                    panic!("first")
                });
            })
        }));
        // "second" panics only after "first" has, whichever of them starts first.
        assert_eq!(outcome.unwrap_err().downcast_ref::<&str>(), Some(&"first"));
    });
}

#[test]
fn a_joined_panic_is_the_callers_and_is_not_re_raised() {
    on(2, || {
        let value = scope(|s| {
            let child = s.spawn(|| panic!("handled"));
            // The panic cancels the body at its next cancellation point, so wait without one:
            // a join that finds the result ready returns it.
            while !child.is_finished() {
                fibra_runtime::yield_now();
            }
            let error = child.join().unwrap_err();
            assert!(error.is_panic());
            7
        });
        assert_eq!(value, 7);
    });
}

#[test]
fn a_panic_of_the_body_waits_for_children_and_wins() {
    on(2, || {
        let finished = AtomicUsize::new(0);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            scope(|s| {
                for _ in 0..10 {
                    // Counts each child's end: run to its end, or dropped unstarted once the
                    // sibling's panic cancelled it.
                    let done = Counted(&finished);
                    s.spawn(move || {
                        fibra_runtime::yield_now();
                        drop(done);
                    });
                }
                s.spawn(|| panic!("child"));
                panic!("body");
            })
        }));
        assert_eq!(outcome.unwrap_err().downcast_ref::<&str>(), Some(&"body"));
        assert_eq!(finished.load(Ordering::SeqCst), 10);
    });
}

#[test]
fn nested_scopes_and_scoped_builders_borrow_too() {
    on(2, || {
        let log = Mutex::new(Vec::new());
        scope(|outer| {
            outer.spawn(|| {
                scope(|inner| {
                    fibra_runtime::Builder::new()
                        .name("inner")
                        .spawn_scoped(inner, || {
                            let me = fibra_runtime::current();
                            log.lock().unwrap().push(me.name().unwrap().to_owned());
                        })
                        .unwrap();
                });
                log.lock().unwrap().push("outer child".to_owned());
            });
        });
        assert_eq!(*log.lock().unwrap(), ["inner", "outer child"]);
    });
}

#[test]
fn scoped_results_that_are_never_joined_are_dropped_before_the_scope_returns() {
    struct Flag<'a>(&'a AtomicUsize);
    impl Drop for Flag<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    on(2, || {
        let dropped = AtomicUsize::new(0);
        scope(|s| {
            for _ in 0..50 {
                s.spawn(|| Flag(&dropped));
            }
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 50);
    });
}

#[test]
#[should_panic(expected = "fibra::scope() called outside a fiber")]
fn scope_outside_a_runtime_panics() {
    scope(|_| ());
}
