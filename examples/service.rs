//! A job service in one process: a producer, a pool of workers over a bounded channel,
//! per-job timeouts, a progress ticker, and a cancel token that stops everything.
//!
//! - The producer submits an endless stream of jobs; every seventh job is "slow" and outlives
//!   its timeout.
//! - Four workers take jobs from one channel; each job runs under `fibra::timeout`.
//! - The main fiber collects outcomes with `select!` over the results channel, a ticker and an
//!   overall deadline. Once it has enough it cancels the token, which unwinds the producer and
//!   the workers wherever they wait; the service's scope then reports why it ended.
//!
//! Run it with `cargo run --example service`; it ends by itself in well under a second.

use fibra::chan;
use fibra::{CancelCause, CancelToken, ScopeOptions};
use std::time::Duration;

const WANTED: usize = 40;
const WORKERS: usize = 4;
const JOB_TIMEOUT: Duration = Duration::from_millis(20);

/// What happened to one job.
enum Outcome {
    Done(u64),
    TimedOut(u64),
}

/// The work itself: blocking-style code that waits through fibra.
fn process(job: u64) -> u64 {
    let slow = job % 7 == 6;
    fibra::sleep(if slow {
        Duration::from_secs(3600)
    } else {
        Duration::from_millis(1 + job % 3)
    });
    job * job
}

/// Runs the producer and the workers until `stop` is cancelled.
fn service(stop: CancelToken, results: chan::Writer<Outcome>) -> Result<(), fibra::Cancelled> {
    let (jobs_tx, jobs_rx) = chan::bounded::<u64>(WORKERS);
    fibra::scope_with(ScopeOptions::new().token(stop), |s| {
        s.spawn(move || {
            for job in 0.. {
                // Parks while the workers are busy: the channel's capacity is the backlog.
                if jobs_tx.send(job).is_err() {
                    break;
                }
            }
        });
        for _ in 0..WORKERS {
            let (jobs_rx, results) = (jobs_rx.clone(), results.clone());
            s.spawn(move || {
                for job in jobs_rx.iter() {
                    let outcome = match fibra::timeout(JOB_TIMEOUT, || process(job)) {
                        Ok(value) => Outcome::Done(value),
                        Err(_elapsed) => Outcome::TimedOut(job),
                    };
                    if results.send(outcome).is_err() {
                        break;
                    }
                }
            });
        }
    })
}

fn main() {
    let (done, timed_out, total) = fibra::run(|| {
        let stop = CancelToken::new();
        let (results_tx, results_rx) = chan::bounded(WORKERS);
        let running = fibra::spawn({
            let stop = stop.clone();
            move || service(stop, results_tx)
        });

        let ticker = chan::tick(Duration::from_millis(10));
        let deadline = chan::close_after(Duration::from_secs(10));
        let (mut done, mut timed_out, mut total) = (0, 0, 0);
        while done + timed_out < WANTED {
            fibra::select! {
                recv(results_rx) -> Some(outcome) => match outcome {
                    Outcome::Done(value) => {
                        done += 1;
                        total += value;
                    }
                    Outcome::TimedOut(job) => {
                        println!("job {job} timed out");
                        timed_out += 1;
                    }
                },
                recv(ticker) -> _ => println!("progress: {done} done, {timed_out} timed out"),
                recv(deadline) -> None => {
                    eprintln!("deadline passed before {WANTED} outcomes");
                    break;
                }
            }
        }

        stop.cancel();
        let ended = running.join().expect("the service did not panic");
        assert_eq!(ended.unwrap_err().cause(), CancelCause::Token);
        (done, timed_out, total)
    });
    println!(
        "stopped after {done} jobs done (results summing to {total}) and {timed_out} timed out"
    );
    assert_eq!(done + timed_out, WANTED);
}
