//! `race!` and `race_with`: closures of different types race without boxing; the first to
//! finish wins and every loser is cancelled and dropped before the race returns.

use fibra_runtime::{race, race_with, sleep};
use fibra_testing::{on_each_worker_count, Counted};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn race_macro_takes_closures_of_different_types_and_drops_the_losers() {
    on_each_worker_count(|_| {
        let dropped = AtomicUsize::new(0);
        let label = String::from("borrowed");
        let winner = race!(
            // The guards are moved in: a loser cancelled before it starts is dropped unstarted.
            {
                let guard = Counted(&dropped);
                move || {
                    let _guard = guard;
                    sleep(HOUR);
                    String::from("slow")
                }
            },
            || label.clone(),
            {
                let guard = Counted(&dropped);
                move || -> String {
                    let _guard = guard;
                    sleep(HOUR);
                    unreachable!()
                }
            },
        );
        assert_eq!(winner, "borrowed");
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn race_with_enters_racers_in_a_loop_and_the_first_wins() {
    on_each_worker_count(|_| {
        let winner = race_with(|racers| {
            for n in 0..5u64 {
                racers.enter(move || {
                    if n != 3 {
                        sleep(HOUR);
                    }
                    n
                });
            }
            racers.enter(|| {
                sleep(HOUR);
                99
            });
        });
        assert_eq!(winner, 3);
    });
}

#[test]
#[should_panic(expected = "fibra::race_with() needs at least one racer")]
fn race_with_without_racers_panics() {
    fibra_testing::on(1, || race_with::<_, ()>(|_| ()));
}

#[test]
fn a_race_cancelled_from_outside_unwinds_its_caller() {
    on_each_worker_count(|_| {
        let token = fibra_runtime::CancelToken::new();
        let options = fibra_runtime::ScopeOptions::new().token(token.clone());
        let outcome = fibra_runtime::scope_with(options, |_| {
            race!(
                || {
                    token.cancel();
                    sleep(HOUR)
                },
                || sleep(HOUR),
            );
            unreachable!("the race was cancelled");
        });
        assert_eq!(
            outcome.unwrap_err().cause(),
            fibra_runtime::CancelCause::Token
        );
    });
}

#[test]
fn a_race_whose_body_panics_cancels_its_racers_and_re_raises_the_panic() {
    let dropped = fibra_testing::bounded(Duration::from_secs(60), || {
        let dropped = std::sync::Arc::new(AtomicUsize::new(0));
        let counter = dropped.clone();
        on_each_worker_count(move |workers| {
            let before = counter.load(Ordering::SeqCst);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                race_with(|racers| {
                    let guard = Counted(counter.clone());
                    racers.enter(move || {
                        let _guard = guard;
                        sleep(HOUR)
                    });
                    panic!("body");
                })
            }));
            let payload = outcome.unwrap_err();
            assert_eq!(
                payload.downcast_ref::<&str>(),
                Some(&"body"),
                "{workers} workers"
            );
            assert_eq!(
                counter.load(Ordering::SeqCst),
                before + 1,
                "{workers} workers"
            );
        });
        dropped.load(Ordering::SeqCst)
    });
    assert_eq!(dropped, fibra_testing::WORKER_COUNTS.len());
}
