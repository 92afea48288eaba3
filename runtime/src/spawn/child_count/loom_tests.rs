//! Model-checks the child count: the owner never sees zero before every child's write to the
//! borrowed data is done (loom's `UnsafeCell` reports the race if it did), and never sleeps
//! through the last child's wake.

use super::*;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

#[test]
fn loom_a_scope_owner_sees_every_childs_borrowed_writes() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(|| {
        let count = Arc::new(ChildCount::new());
        // The data the children borrow from the owner's stack, one slot each.
        let borrowed = Arc::new([UnsafeCell::new(0u32), UnsafeCell::new(0u32)]);
        let owner = thread::current();
        let children: Vec<_> = (0..2)
            .map(|slot| {
                count.add();
                let (count, borrowed, owner) = (count.clone(), borrowed.clone(), owner.clone());
                thread::spawn(move || {
                    // SAFETY: (model) each child writes only its own slot, before `gone`.
                    borrowed[slot].with_mut(|value| unsafe { *value = slot as u32 + 1 });
                    if count.gone() {
                        owner.unpark();
                    }
                })
            })
            .collect();
        while !count.all_gone() {
            thread::park();
        }
        // The scope returns: the owner may use (and end) the borrowed data.
        let sum: u32 = borrowed
            .iter()
            // SAFETY: (model) every child is gone, so nothing else touches the slots.
            .map(|slot| slot.with(|value| unsafe { *value }))
            .sum();
        assert_eq!(sum, 3);
        for child in children {
            child.join().unwrap();
        }
    });
}
