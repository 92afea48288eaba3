//! Two classic concurrency problems, written as blocking code in fibers.
//!
//! - **The sleeping barber**: a barber, a waiting room with a few chairs, and customers who
//!   arrive at random moments; a customer who finds every chair taken leaves. The waiting room
//!   is a bounded channel (`try_send` fails when it is full); the barber sleeps in `recv` when
//!   it is empty; each customer waits for the end of the haircut on a rendezvous channel.
//! - **The dining philosophers**: five philosophers, five forks (`fibra::sync::Mutex`), and a
//!   `fibra::sync::Semaphore` that seats at most four at the table, so they never deadlock.
//!
//! Run it with `cargo run --example classic`; it ends by itself.

use fibra::chan;
use fibra::sync::{Mutex, Semaphore};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const CUSTOMERS: u64 = 30;
const CHAIRS: usize = 3;
const PHILOSOPHERS: usize = 5;
const MEALS: usize = 20;

/// A small pseudo-random delay, the same on every run.
fn delay(seed: u64) -> Duration {
    Duration::from_micros(200 + seed.wrapping_mul(2_654_435_761) % 1_500)
}

/// Returns how many customers got a haircut and how many left.
fn sleeping_barber() -> (usize, usize) {
    // A customer in the waiting room, with the channel on which they hear "done".
    let (room_tx, room_rx) = chan::bounded::<(u64, chan::Writer<()>)>(CHAIRS);
    let turned_away = AtomicUsize::new(0);
    let served = fibra::scope(|s| {
        let barber = s.spawn(move || {
            let mut served = 0;
            // The barber sleeps in `recv` while the room is empty; the loop ends when the
            // shop closes (every customer has come) and the room is empty.
            for (customer, done) in room_rx.iter() {
                fibra::sleep(delay(customer * 3));
                done.send(()).expect("the customer waits in the chair");
                served += 1;
            }
            served
        });
        for customer in 0..CUSTOMERS {
            let room_tx = room_tx.clone();
            let turned_away = &turned_away;
            s.spawn(move || {
                fibra::sleep(Duration::from_micros(customer * 1_500) + delay(customer));
                let (done_tx, done_rx) = chan::bounded(0);
                match room_tx.try_send((customer, done_tx)) {
                    Ok(()) => {
                        done_rx.recv().expect("the barber finishes the haircut");
                    }
                    Err(_full) => {
                        turned_away.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        drop(room_tx);
        barber.join().expect("the barber did not panic")
    });
    (served, turned_away.into_inner())
}

/// Returns how many meals were eaten.
fn dining_philosophers() -> usize {
    let forks: Vec<Mutex<()>> = (0..PHILOSOPHERS).map(|_| Mutex::new(())).collect();
    // With one seat fewer than philosophers, someone at the table can always take both forks.
    let seats = Semaphore::new(PHILOSOPHERS - 1);
    let meals = AtomicUsize::new(0);
    fibra::scope(|s| {
        for seat in 0..PHILOSOPHERS {
            let (forks, seats, meals) = (&forks, &seats, &meals);
            s.spawn(move || {
                let left = &forks[seat];
                let right = &forks[(seat + 1) % PHILOSOPHERS];
                for meal in 0..MEALS {
                    fibra::sleep(delay((seat * MEALS + meal) as u64)); // think
                    let _seat = seats.acquire();
                    let _left = left.lock();
                    let _right = right.lock();
                    meals.fetch_add(1, Ordering::Relaxed);
                    fibra::sleep(delay(meal as u64)); // eat, holding both forks
                }
            });
        }
    });
    meals.into_inner()
}

fn main() {
    fibra::run(|| {
        let (served, left) = sleeping_barber();
        println!("sleeping barber: {served} haircuts, {left} customers found no chair");
        assert_eq!(served + left, CUSTOMERS as usize);

        let meals = dining_philosophers();
        println!("dining philosophers: {meals} meals, no deadlock");
        assert_eq!(meals, PHILOSOPHERS * MEALS);
    });
}
