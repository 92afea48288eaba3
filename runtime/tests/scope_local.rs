//! `Scope::spawn_local`: a scoped child on the caller's worker, which may borrow what is not
//! `Sync` and return what is not `Send`, and which the scope waits for like any child.

use fibra_runtime::{current_worker, scope, sleep, yield_now};
use fibra_testing::{on_each_worker_count, Counted};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[test]
fn local_children_run_on_the_callers_worker_and_borrow_what_is_not_sync() {
    on_each_worker_count(|_| {
        let here = current_worker();
        let log = RefCell::new(Vec::new());
        let count = Cell::new(0);
        scope(|s| {
            for n in 0..20 {
                let (log, count) = (&log, &count);
                s.spawn_local(move || {
                    assert_eq!(current_worker(), here);
                    yield_now(); // interleave with the others
                    log.borrow_mut().push(n);
                    count.set(count.get() + 1);
                });
            }
        });
        assert_eq!(count.get(), 20);
        let mut log = log.into_inner();
        log.sort();
        assert_eq!(log, (0..20).collect::<Vec<_>>());
    });
}

#[test]
fn a_local_child_returns_what_is_not_send_through_its_join() {
    on_each_worker_count(|_| {
        let shared = Rc::new(5);
        let value = scope(|s| {
            let shared = &shared;
            s.spawn_local(move || Rc::clone(shared)).join().unwrap()
        });
        assert_eq!(*value, 5);
        assert_eq!(Rc::strong_count(&shared), 2);
    });
}

#[test]
fn the_scope_waits_for_its_local_children_and_reraises_their_panics() {
    on_each_worker_count(|_| {
        let dropped = AtomicUsize::new(0);
        scope(|s| {
            let dropped = &dropped;
            s.spawn_local(move || {
                sleep(Duration::from_millis(2));
                drop(Counted(dropped));
            });
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 1);

        let raised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            scope(|s| {
                s.spawn_local(|| panic!("local child"));
            })
        }));
        let payload = raised.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"local child"));
    });
}

#[test]
fn spawn_local_on_a_scope_from_a_plain_thread_panics_naming_it() {
    on_each_worker_count(|_| {
        scope(|s| {
            let message = std::thread::scope(|threads| {
                let thread = threads.spawn(|| {
                    s.spawn_local(|| ());
                });
                let payload = thread.join().unwrap_err();
                payload.downcast_ref::<String>().cloned().unwrap()
            });
            assert_eq!(
                message,
                "fibra::Scope::spawn_local() called outside a fiber"
            );
        });
    });
}

#[test]
fn a_builder_names_a_local_child() {
    on_each_worker_count(|_| {
        let here = current_worker();
        let not_send = Rc::new(());
        let (name, worker) = scope(|s| {
            let not_send = &not_send;
            fibra_runtime::Builder::new()
                .name("local")
                .spawn_scoped_local(s, move || {
                    let _borrowed = Rc::clone(not_send);
                    let me = fibra_runtime::current();
                    (me.name().map(str::to_owned), current_worker())
                })
                .unwrap()
                .join()
                .unwrap()
        });
        assert_eq!(name.as_deref(), Some("local"));
        assert_eq!(worker, here);
    });
}

#[test]
fn spawn_local_on_a_scope_from_a_fiber_of_another_runtime_panics_naming_it() {
    on_each_worker_count(|_| {
        scope(|s| {
            let other = fibra_testing::runtime(1);
            let message = std::thread::scope(|threads| {
                let thread = threads.spawn(|| other.block_on(|| drop(s.spawn_local(|| ()))));
                let payload = thread.join().unwrap_err();
                payload.downcast_ref::<String>().cloned().unwrap()
            });
            assert_eq!(
                message,
                "fibra::Scope::spawn_local() called from a fiber of another runtime than the \
                 scope's"
            );
        });
    });
}
