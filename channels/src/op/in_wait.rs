//! Which operations a wait is using: while one is registered, claimers on other threads may
//! write its packet, so its owner must not touch it. The borrow that `op::wait` takes does not
//! ensure that by itself — an operation is not `Sync`, but fibers on one thread share it (one
//! fiber waits while another, holding an `Rc` or a `&'static` of the same operation, runs) —
//! so each operation carries a mark that the wait sets and every owner-side use checks.

use crate::op::operation::sealed::TOKEN;
use crate::op::Operation;
use std::cell::Cell;

/// Whether an operation is in a wait. Only its own thread reaches it (operations are not
/// `Sync`), and fibers on a thread never run at the same time, so a plain `Cell` will do.
#[derive(Debug, Default)]
pub struct WaitMark(Cell<bool>);

impl WaitMark {
    /// Panics unless the operation is out of any wait; `what` names the use. On every try of
    /// every operation, so the check is inlined and the panic is not.
    #[inline]
    pub(crate) fn assert_free(&self, what: &str) {
        if self.0.get() {
            in_a_wait(what);
        }
    }
}

#[cold]
#[inline(never)]
fn in_a_wait(what: &str) -> ! {
    panic!(
        "{what} on a channel operation that is in a wait (of another fiber on this thread): a \
         waiting operation belongs to its wait until the wait returns"
    );
}

/// The marks a wait has set; cleared on drop, also when unwinding.
pub(crate) struct InWait<'a> {
    ops: &'a [Option<&'a dyn Operation>],
    marked: usize,
}

impl<'a> InWait<'a> {
    /// Marks every operation of `ops` as in this wait. `Err(i)` when operation `i` has
    /// completed already (a receive holds its value, a send delivered): then nothing is
    /// marked and the wait has nothing to do.
    ///
    /// # Panics
    ///
    /// If an operation is in a wait already: listed twice in `ops`, or in another fiber's wait.
    pub(crate) fn enter(ops: &'a [Option<&'a dyn Operation>]) -> Result<Self, usize> {
        let mut in_wait = InWait { ops, marked: 0 };
        for (oper, op) in ops.iter().enumerate() {
            let Some(op) = op else { continue };
            let mark = &op.wait_mark().0;
            assert!(
                !mark.get(),
                "op::wait: operation {oper} is in a wait already (listed twice, or in \
                 another fiber's wait on this thread)"
            );
            mark.set(true);
            in_wait.marked = oper + 1;
            if op.has_completed(TOKEN) {
                return Err(oper);
            }
        }
        Ok(in_wait)
    }
}

impl Drop for InWait<'_> {
    fn drop(&mut self) {
        for op in self.ops[..self.marked].iter().flatten() {
            op.wait_mark().0.set(false);
        }
    }
}
