//! Model-checks the hint protocol: once a fiber's scope is marked cancelled, the hint ends up
//! raised whatever the interleaving with the fiber's own clear-then-look.

use super::*;
use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;

/// A scope's `cancelled` flag, as `CancelScope` marks and reads it.
fn mark(scope: &AtomicBool) {
    scope.store(true, Ordering::Release);
}

fn is_marked(scope: &AtomicBool) -> bool {
    scope.load(Ordering::Acquire)
}

/// The fiber's slow path (`check_hinted`): clear, look, re-raise if still cancelled.
fn look(hint: &CancelHint, scope: &AtomicBool) -> bool {
    hint.take();
    let cancelled = is_marked(scope);
    if cancelled {
        hint.raise();
    }
    cancelled
}

#[test]
fn loom_a_cancel_racing_with_a_stale_hint_clear_is_not_lost() {
    model(|| {
        let hint = Arc::new(CancelHint::new());
        let scope = Arc::new(AtomicBool::new(false));
        // A stale raise from a scope the fiber has left.
        hint.raise();
        let canceller = {
            let (hint, scope) = (hint.clone(), scope.clone());
            thread::spawn(move || {
                mark(&scope);
                hint.raise();
            })
        };
        look(&hint, &scope);
        canceller.join().unwrap();
        assert!(
            hint.is_raised(),
            "the cancellation of the fiber's scope was hidden"
        );
    });
}

#[test]
fn loom_a_take_synchronises_with_every_earlier_raise() {
    // The fiber's scope is cancelled by one thread while another raises the hint for an
    // unrelated scope: the fiber's take may read the second raise, yet must still see the
    // first thread's mark.
    model(|| {
        let hint = Arc::new(CancelHint::new());
        let scope = Arc::new(AtomicBool::new(false));
        let other = Arc::new(AtomicBool::new(false));
        let cancellers: Vec<_> = [scope.clone(), other.clone()]
            .into_iter()
            .map(|target| {
                let hint = hint.clone();
                thread::spawn(move || {
                    mark(&target);
                    hint.raise();
                })
            })
            .collect();
        // The fiber at a cancellation point: fast path, then the slow one if raised.
        if hint.is_raised() {
            look(&hint, &scope);
        }
        for canceller in cancellers {
            canceller.join().unwrap();
        }
        assert!(
            hint.is_raised(),
            "the cancellation of the fiber's scope was hidden"
        );
    });
}

#[test]
fn loom_a_raise_before_a_wake_is_seen_after_it() {
    // The tree raises the hint, then wakes the fiber (modelled by a release/acquire flag, as
    // the latch's dispatch is): the fiber's first fast-path load after waking sees the raise.
    model(|| {
        let hint = Arc::new(CancelHint::new());
        let scope = Arc::new(AtomicBool::new(false));
        let woken = Arc::new(AtomicBool::new(false));
        let canceller = {
            let (hint, scope, woken) = (hint.clone(), scope.clone(), woken.clone());
            thread::spawn(move || {
                mark(&scope);
                hint.raise();
                woken.store(true, Ordering::Release);
            })
        };
        if woken.load(Ordering::Acquire) {
            assert!(hint.is_raised(), "a woken fiber missed the raise");
            assert!(look(&hint, &scope), "the raise came before the mark");
        }
        canceller.join().unwrap();
    });
}

/// Explores every interleaving with at most 3 preemptions (loom's `LOOM_MAX_PREEMPTIONS`
/// overrides it).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(f);
}
