//! Model-checks `Turns`: callers use the value one at a time (loom's cell reports two at once),
//! and a caller that waits for its turn is handed it: none sleeps through the hand-over.

use super::*;
use loom::sync::Arc;
use loom::thread;

#[test]
fn loom_callers_take_turns_and_every_waiter_gets_one() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(|| {
        let turns = Arc::new(Turns::new(0u32));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let turns = turns.clone();
                thread::spawn(move || turns.with(|count| *count += 1))
            })
            .collect();
        turns.with(|count| *count += 1);
        for other in others {
            other.join().unwrap();
        }
        let turns = Arc::try_unwrap(turns).unwrap_or_else(|_| unreachable!("every caller ended"));
        assert_eq!(turns.into_inner(), 3);
    });
}
