//! `diag_overhead`: what recording wait sites costs. fibra's own workloads, with the recording
//! on (system `fibra`) and compiled out (system `fibra_nodiag`); the ratio line is
//! `fibra / fibra_nodiag`, ns per operation (target: at most 1.05).
//!
//! Variants: `chan_pingpong_1w` and `chan_pingpong_2w` (the `chan_pingpong` workload, every
//! blocked operation recording a receive or send wait), `mutex_contended` (the fair variant of
//! `mutex_contended`: holders recorded on every lock, waits on every contended one),
//! `mutex_handoff_1w` (four fibers on one worker taking turns at a fair mutex, each yielding
//! while it holds it: every lock waits on an owned mutex, the same work in every run, where
//! `mutex_contended` falls into a convoy in some runs and not in others), `mutex_uncontended`
//! (the `mutex_uncontended` workload: lock and unlock with nobody else about, the holder
//! recorded at every lock) and `yield_pingpong` (every `fibra::park` recording a park).
//!
//! ## `mutex_contended`'s two lines
//!
//! A `mutex_contended` round's time is set mostly by how many of its hand-offs cross between
//! the two workers, from under 1 % to 80 % of them, which the order the fibers first queued in
//! decides (see `mutex_contended`'s docs): about 300 ns per pair without crossings, 1 900 with
//! 80 %, in either build. Five or seven rounds of each build draw different mixes, so the ratio
//! of their medians swung from 0.7 to 2.3 between runs though recording costs a few
//! instructions a pair. Each round of this variant therefore also reports the share of its
//! parked fibers that were woken from the other worker, each build runs
//! 21 rounds, and besides the usual lines (medians, metric `ns_per_op`) the bench prints
//! lines of metric `ns_per_op_at_mean_crossing`: each build's least-squares line of time over
//! share, read at the mean share of all 42 rounds, so both builds are compared at the same mix
//! of crossings. That comparison is fair because the share is drawn by timing, not by the
//! build: in 14 rounds of each build (load average 3) the shares spread alike, from 0.002 to
//! 0.81, and the two fitted lines were 300 + 1 634 × share (recording) and 269 + 1 691 ×
//! share (not). The first full run with the fit (load average 3.3, another engineer's
//! benchmarks beside it): medians 1 130 against 512 ns, ratio 2.209 (the mixes: 10 of
//! `fibra_nodiag`'s 21 rounds had under 1 % crossed against 4 of `fibra`'s); at the mean
//! crossing 1.014. A second run on a quiet machine (load average 1.2, commit 14763fe) gave
//! 1.318 on the medians and 1.165 at the mean crossing: there, rounds with the same share
//! differed threefold (479 against 1 539 ns at 0.70 crossed), as the idle worker caught a
//! crossing hand-off while it spun or had gone to sleep first. The share alone does not
//! account for the time, so the fit does not settle the comparison either. The same run put
//! `chan_pingpong_1w` at 1.159 while callgrind counts the two builds 2 % apart (279.9 M
//! against 274.3 M instructions for 200 000 round trips; the `nodiag` build now inlines the
//! blocked path into `recv`, the recording build does not, and making it do so left the wall
//! gap near 8 %): at this size the ratio follows code placement more than recording.
//!
//! ## Two builds in one run
//!
//! The recording is compiled out by the `nodiag` feature of this crate (it turns on
//! `fibra-runtime`'s `nodiag`: published waits, lock holders and with them the cycle checks
//! become no-ops), used by nothing else. A process holds one build, so every round runs in a
//! child process: `fibra` rounds in a child copy of this binary, `fibra_nodiag` rounds in the
//! `nodiag` build of it, which must sit beside this binary's target directory:
//!
//! ```text
//! cargo build --release -p fibra-bench --features nodiag --target-dir target/nodiag
//! cargo run --release -p fibra-bench --bin fibra-compare -- diag_overhead
//! ```
//!
//! (for `target/release/fibra-compare` it is `target/nodiag/release/fibra-compare`). Both
//! systems run in fresh processes alike, alternating, and each child reports whether it
//! records, which the parent checks. Without the `nodiag` build the bench prints a skip line
//! on stderr and nothing else; so it does when run from the `nodiag` build itself. Rebuild the
//! `nodiag` binary after changing the source: the bench cannot tell a stale one.
//!
//! ## Measured
//!
//! `--quick`, 2026-12-03, on the shared 2-core machine (medians of 7 alternating rounds,
//! `fibra / fibra_nodiag`): at a load average near 2, `chan_pingpong_1w` 1.001,
//! `chan_pingpong_2w` 0.991, `mutex_contended` 1.002, `yield_pingpong` 1.251 (126.4 vs 101.0
//! ns per round trip); at a load average near 9, after the start time of a wait came from the
//! worker thread's own clock: `chan_pingpong_1w` 0.922, `mutex_contended` 0.986,
//! `yield_pingpong` 1.264 (128.5 vs 101.7 ns), `chan_pingpong_2w` meaningless (its rounds
//! ranged from 0.55 to 56 µs per trip in both builds).
//!
//! Instruction counts (callgrind, 100 000 round trips, one worker) before the channel and sync
//! sites / after / with recording compiled out: the `chan_pingpong` shape (capacity 1, no
//! parks) 141.45 M / 142.03 M (+0.4 %); the `select2` shape (two producers, capacity 1)
//! 126.49 M / 128.68 M (+1.7 %); a rendezvous ping-pong that parks on every operation
//! 419.85 M / 434.43 M (+3.5 %); `yield_pingpong` 90.85 M / 89.93 M / 82.33 M (+9.2 % over
//! `nodiag`). In `yield_pingpong` the recording is a sequence-locked publish and clear (about
//! 38 instructions per park) yet costs a quarter of the round trip: in a trial build without
//! the sequence counter's four stores the median was 1.05× (at a load average near 10, so
//! roughly), so the sequence lock is the next thing to make cheaper.
//!
//! 2026-12-05, after a park's record became one store of the sequence each way and a
//! published wait's small fields one word (an unowned wait: five stores): two `--quick` runs at
//! a load average near 1.7, `fibra / fibra_nodiag`: `chan_pingpong_1w` 0.970 / 0.982,
//! `chan_pingpong_2w` 0.998 / 1.102, `yield_pingpong` 1.045 / 1.063, `mutex_contended`
//! 1.016 / 1.460 (its rounds fall into two modes, about 35 ns and about 1 100 ns per pair, in
//! both builds, so its median says little). `yield_pingpong` alone, 15 alternated child runs
//! of 2 000 000 round trips: median 1.070, paired median 1.055; callgrind 90.68 M vs 87.68 M
//! instructions per 100 000 round trips (+3.4 %). A profile puts most of both builds' park
//! in one mispredicted return after the switch back; the rest of the gap is spread over the
//! scheduler loop rather than the recording's stores.
//! After the run order took the front of its queue with `pop_front` (both builds 5 % fewer
//! instructions): `yield_pingpong` 1.049 / 1.045 in two `--quick` runs, 1.091 as the median of
//! 15 alternated child runs (186.0 vs 170.4 ns per round trip) at a load average near 0.5.
//!
//! 2026-12-05, evening, with the `mutex_handoff_1w` variant added: it showed the cycle check
//! that ran at every park on an owned wait (two walks of the owners, the fiber table, a global
//! lock) costing a contended handoff a third of its time: callgrind 167.7 M vs 133.6 M
//! instructions per 100 000 handoffs (+25.6 %), wall 1.36× (median of 9 alternated child runs,
//! load average near 3). With the check noted at the park and run by the worker only for waits
//! still on at its next look: 148.0 M vs 131.9 M (+12.2 %), wall 1.12× (329.8 vs 294.6 ns per
//! handoff); `yield_pingpong` in the same builds 1.047× (219.6 vs 209.7 ns, 11 alternated
//! runs).
//!
//! Then, with the cheaper scheduler loop, at a load average near 1: two `--quick` runs,
//! `chan_pingpong_1w` 0.997 / 0.989, `chan_pingpong_2w` 1.013 / 0.741, `mutex_contended`
//! 1.069 / 1.217, `mutex_handoff_1w` 1.071 / 1.093, `yield_pingpong` 1.079 / 1.084; one full
//! run: `chan_pingpong_1w` 1.000, `chan_pingpong_2w` 0.984, `mutex_contended` 1.134 (both
//! builds in their convoy mode, about 2 µs a pair), `mutex_handoff_1w` 1.081 (308.9 vs 285.7
//! ns), `yield_pingpong` 1.046 (195.2 vs 186.6 ns). What `yield_pingpong`'s gap is not: a trial
//! build that published no wait fields at all (only the sequence's two stores) ran as slowly as
//! the full recording (median 197.9 vs 196.7 ns, `nodiag` 186.9, 11 alternated runs); the two
//! builds lay out the park path differently (profiles put the extra samples on the same
//! returns and branches of `park_fiber_with`, whose code is the same), so the remaining cost is
//! the shape of the generated code rather than the stores.
//!
//! After a review found that a note could outlive its wait (keeping a finished fiber's last
//! reference, so its values were dropped in the worker's loop) and that a spurious wake could
//! lose a cycle, a note is made at every suspension in an owned wait and ended when the fiber
//! resumes (a slab insert and remove, and the reference taken before the fiber commits to
//! park). That put `mutex_handoff_1w` back up: 1.214× (352.1 vs 290.1 ns, median of 9
//! alternated child runs, load average near 1.6), callgrind 161.1 M vs 130.6 M instructions per
//! 100 000 handoffs (+23 %, the notes' bookkeeping about 180 of those 305 instructions). One
//! full run: `chan_pingpong_1w` 1.030, `chan_pingpong_2w` 1.008, `mutex_contended` 0.694,
//! `mutex_handoff_1w` 1.222, `yield_pingpong` 0.998.
//!
//! With a fiber listed once with its worker instead of a note per suspension (its bindings
//! drop as it finishes, so a listing may outlive it), and the periodic look at most once per
//! coarse-clock tick: callgrind 137.9 M vs 130.9 M instructions per 100 000 handoffs (+5.4 %,
//! 70 per handoff). Three full runs at a load average near 1.6, `fibra / fibra_nodiag`:
//! `chan_pingpong_1w` 0.998 / 0.995 / 1.018, `chan_pingpong_2w` 0.962 / 0.925 / 0.958,
//! `mutex_contended` 0.897 / 2.097 / 1.064, `mutex_handoff_1w` 1.061 / 1.045 / 1.046,
//! `yield_pingpong` 1.069 / 1.065 / 1.064. `mutex_contended`'s rounds still fall into modes
//! (about 30, 200, 400 and 4 000 ns a pair in both builds, after where the 1 000 fibers
//! started): alternated child runs in the same mode were within a few per cent of each other
//! (211 vs 202, 207 vs 210, 252 vs 253 ns), so its median ratio says which modes the rounds
//! fell into.
//!
//! 2026-12-06: ending an owned wait no longer takes the record's pin (a locked
//! compare-and-swap on every contended lock) unless a reader is looking (an asymmetric fence:
//! the reader pays a `membarrier`); `fibra::park`'s cancellation point after the wake uses the
//! fiber its wait was published for instead of reading the thread's state again; and
//! `with_worker` is `#[inline]`: the wake path (`dispatch`, `push_ready`, `with_worker`) had
//! been inlined differently in the two builds (the same source in other codegen units), which
//! cost `yield_pingpong` about 12 instructions a round trip outside the recording. Callgrind
//! per 100 000 operations, `fibra` / `fibra_nodiag`: `yield_pingpong` before 90.04 M /
//! 86.44 M (+36 instructions a round trip, +4.2 %), after 85.65 M / 83.26 M (+24, +2.9 %; the
//! park's own recording is now 12 instructions: five field stores, the sequence's two);
//! `mutex_handoff_1w` before 131.97 M / 124.45 M (+75 a handoff), after 131.28 M / 123.27 M
//! (+80: no fewer instructions, but no locked one). Full runs, before / after, at a load
//! average near 4.5: `chan_pingpong_1w` 1.047 / 0.934, `chan_pingpong_2w` 1.249 / 0.955,
//! `mutex_contended` 1.103 / 9.405 (its modes), `mutex_handoff_1w` 1.059 / 0.993,
//! `yield_pingpong` 1.154 / 1.054; near 7, after the pin change alone: `mutex_handoff_1w`
//! 1.043 and 1.062 / 1.035, `yield_pingpong` 1.149 and 1.116 / 1.039. Three more full runs
//! after, at a load average near 2.5: `mutex_handoff_1w` 1.092 / 1.061 / 1.083,
//! `yield_pingpong` 1.042 / 1.035 / 1.033, `chan_pingpong_1w` 1.023 / 0.998 / 1.036; two of
//! the build before at the same load: `mutex_handoff_1w` 1.002 / 0.989, `yield_pingpong`
//! 1.066 / 1.036. So `yield_pingpong` is near the target, and `mutex_handoff_1w` shows no
//! gain from the missing locked instruction: 11 alternated child runs of the `fibra` builds
//! alone, after vs before, were 0.996 (paired 1.004) for `mutex_handoff_1w` and 0.970
//! (paired 0.936) for `yield_pingpong`, while the `nodiag` build got about 1 % faster too
//! (the inlining), so its ratio moved by no more than the noise.
//!
//! 2026-12-06, later, with the `mutex_uncontended` variant added. Callgrind, `fibra` /
//! `fibra_nodiag`, per 100 000 operations (`mutex_uncontended`: per 1 000 000 pairs), before:
//! `mutex_handoff_1w` 134.09 M / 127.36 M (+67 instructions a handoff, +5.3 %),
//! `mutex_uncontended` 62.85 M / 46.78 M (+16 a pair: the holder's thread-local lookup was
//! compiled as a call in this loop, its null test, two stores, and the release's store),
//! `yield_pingpong` 90.19 M / 87.68 M (+25 a round trip). After a wait site came with its
//! shape and owner packed (publishing is six plain stores, no branches on the owner), the
//! deadlock check's flag was read from the published wait instead of stored at every publish
//! and clear, and one load told the end of a holder's wait whether readers look:
//! `mutex_handoff_1w` 131.22 M / 127.14 M (+41, +3.2 %), `mutex_uncontended` 62.86 M /
//! 46.77 M (unchanged), `yield_pingpong` 89.56 M / 87.73 M (+18, +2.1 %). Tried and dropped
//! for `mutex_uncontended`: the holder's recording out of line (69.80 M: the call's frame cost
//! more than the inlined lookup), and the running fiber's id kept in the thread-local beside
//! its pointer (58.74 M, +12 a pair, but `yield_pingpong` 90.47 M: three more instructions
//! at every resume). Wall clock on the shared machine was noise-bound: `mutex_uncontended`
//! before 1.034 (paired 1.020; 11 alternated child runs of 10 000 000 pairs, load average near
//! 5.6); `mutex_handoff_1w` before 1.002 (paired 1.018), after 0.986 (paired 0.962; 11
//! alternated child runs each, load average near 8). `mutex_contended`'s rounds still fall into
//! its modes (7 alternated child runs of 100 000 pairs, before / after: 34 to 1 869 ns a pair
//! in both), so the cycle checks' pass skipping resources that lead to a fiber not waiting has
//! no wall figure here. In callgrind (100 000 pairs, convoy mode, where a slowed-down run makes
//! about 64 000 to 85 000 checks) a check cost 162 instructions before, with three locked
//! instructions on the checked fiber's lines (its reference count up and down, the record's
//! pin) and a read through the holder, and costs 191 after, with none of those: the set of
//! marked resources is looked up instead (in a fair convoy the holder is mostly empty, the lock
//! handed to a waiter that has not run yet, so the walk stopped at the first fiber before too).
//! Whether that is cheaper on the machine (a convoy's checks miss the cache on every
//! fiber's record) is not measured.
//!
//! Then, at a load average near 0.7, 11 alternated child runs per pair of builds (median ratio,
//! paired median), before / after the publish and clear changes: `mutex_handoff_1w` 1.061
//! (1.061; 261.4 vs 246.4 ns) / 0.976 (0.995; 265.1 vs 271.5 ns) and again 0.965 (0.964);
//! `mutex_uncontended` 1.028 (1.019) / 1.026 (1.023); `yield_pingpong` 1.088 (1.074) / 1.007
//! (0.996). Part of the handoff's change is the `nodiag` build's layout: alternated with each
//! other, the two `nodiag` builds ran at 0.970 (after slower) and the two `fibra` builds at
//! 1.035 (after faster), though their instruction counts moved by 0.2 % and 2.1 %. One full
//! run (`fibra-compare diag_overhead`, same load): `chan_pingpong_1w` 1.034,
//! `chan_pingpong_2w` 0.998, `mutex_contended` 2.288 (its modes), `mutex_handoff_1w` 0.973,
//! `mutex_uncontended` 1.016, `yield_pingpong` 0.919.
//!
//! 2026-12-07: `mutex_uncontended` had gone to 1.45 in a full run and 1.36 in 8 alternated
//! child runs of 20 000 000 pairs (11.7 against 8.6 ns a pair): a profile showed `Mutex::lock`
//! inlined into the loop in the `nodiag` build and called, with a frame of five saved
//! registers, in the recording one, whose holder bookkeeping had made it larger than the
//! inliner's limit. `lock` is `#[inline]` now (its wait was already a call): 10 alternated
//! child runs of 50 000 000 pairs, medians 7.15 against 6.91 ns, 1.035.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::report::{self, Case, Metric, Outcome};
use crate::rounds::{compare, Contender};
use crate::{chan_pingpong, child, mutex_contended, mutex_uncontended, runtimes, yield_pingpong};

/// The first word of this bench's child jobs.
pub const JOB: &str = "diag_overhead";
/// Rounds per system (each is a child process).
const ROUNDS: usize = 7;
/// What a child prints first: whether its build records wait sites.
const RECORDING: &str = if cfg!(feature = "nodiag") {
    "off"
} else {
    "on"
};

/// Rounds per system of a variant whose rounds report their crossings: the fit needs more.
const CROSSING_ROUNDS: usize = 21;

/// A round of a workload: does the given number of operations, returns how long they took.
#[derive(Clone, Copy)]
enum Workload {
    Plain(fn(u64) -> Duration),
    /// A workload on two workers whose time depends on how many of its wakes crossed between
    /// them, which timing decides and recording does not (see the module docs): it also
    /// returns that share.
    Crossing(fn(u64) -> (Duration, f64)),
}

/// The variants: name, operations per round in a full run, and the workload.
const VARIANTS: [(&str, u64, Workload); 6] = [
    (
        "chan_pingpong_1w",
        1_000_000,
        Workload::Plain(|trips| chan_pingpong::fibra(1, trips)),
    ),
    (
        "chan_pingpong_2w",
        1_000_000,
        Workload::Plain(|trips| chan_pingpong::fibra(2, trips)),
    ),
    (
        "mutex_contended",
        1_000_000,
        Workload::Crossing(|pairs| {
            let (elapsed, crossings) = mutex_contended::fibra_crossings(true, pairs);
            (elapsed, crossings.share())
        }),
    ),
    (
        "mutex_handoff_1w",
        1_000_000,
        Workload::Plain(mutex_handoff),
    ),
    (
        "mutex_uncontended",
        10_000_000,
        Workload::Plain(mutex_uncontended::fibra),
    ),
    (
        "yield_pingpong",
        1_000_000,
        Workload::Plain(yield_pingpong::fibra),
    ),
];

/// Fibers taking turns at the `mutex_handoff_1w` mutex.
const HANDOFF_FIBERS: u64 = 4;

/// `mutex_handoff_1w`: fibers on one worker taking turns at a fair mutex, each yielding while
/// it holds the lock, so that every other fiber's `lock` waits on an owned mutex (the wait
/// recorded with its owner and checked for a cycle) and every unlock hands the lock over. The
/// same work in every run, unlike `mutex_contended`, whose fibers on two workers fall into a
/// convoy in some runs and not in others.
fn mutex_handoff(pairs: u64) -> Duration {
    runtimes::fibra(1).block_on(move || {
        let mutex = fibra::sync::Mutex::new(0u64);
        let start = Instant::now();
        fibra::scope(|s| {
            for _ in 0..HANDOFF_FIBERS {
                s.spawn(|| {
                    for _ in 0..pairs / HANDOFF_FIBERS {
                        let mut count = mutex.lock();
                        *count += 1;
                        fibra::yield_now();
                    }
                });
            }
        });
        let elapsed = start.elapsed();
        assert_eq!(mutex.into_inner(), pairs / HANDOFF_FIBERS * HANDOFF_FIBERS);
        elapsed
    })
}

/// Runs the bench (each round in a child process) and prints its JSON lines, or a skip line.
pub fn run(quick: bool) {
    if cfg!(feature = "nodiag") {
        eprintln!("{JOB}: skipped: this is the nodiag build; run the default build");
        return;
    }
    let nodiag = match nodiag_binary() {
        Ok(path) => path,
        Err(path) => {
            eprintln!(
                "{JOB}: skipped: no nodiag build at {} (cargo build --release -p fibra-bench \
                 --features nodiag --target-dir target/nodiag)",
                path.display()
            );
            return;
        }
    };
    let this = std::env::current_exe().expect("path of the running binary");
    for (variant, full, workload) in VARIANTS {
        let ops = if quick { full / 10 } else { full };
        let case = Case {
            bench: JOB,
            variant,
            metric: Metric::NsPerOp,
        };
        let job = format!("{JOB} {variant} {ops}");
        match workload {
            Workload::Plain(_) => {
                let mut contenders = [
                    Contender::new("fibra", || in_child(&this, &job, "on").0),
                    Contender::new("fibra_nodiag", || in_child(&nodiag, &job, "off").0),
                ];
                compare(&case, ROUNDS, &mut contenders);
            }
            Workload::Crossing(_) => compare_crossing(&case, &job, [&this, &nodiag]),
        }
    }
}

/// Runs a [`Workload::Crossing`] variant: alternated rounds of both builds, then the JSON lines
/// of the medians, then those of each build's fitted time at the crossing share of all rounds
/// (see the module docs).
fn compare_crossing(case: &Case, job: &str, builds: [&std::path::Path; 2]) {
    let systems = [("fibra", "on"), ("fibra_nodiag", "off")];
    let mut rounds: [Vec<(f64, f64)>; 2] = Default::default();
    for round in 1..=CROSSING_ROUNDS {
        for ((exe, (system, recording)), rounds) in builds.iter().zip(systems).zip(&mut rounds) {
            let (value, share) = in_child(exe, job, recording);
            let share = share.expect("a crossing workload reports its share");
            eprintln!(
                "{JOB}/{} round {round}/{CROSSING_ROUNDS} {system}: {value:.2} ns_per_op, \
                 {share:.3} of the wakes crossed",
                case.variant
            );
            rounds.push((value, share));
        }
    }
    let outcome = |system, value| Outcome {
        system,
        value,
        runs: CROSSING_ROUNDS,
    };
    let medians: Vec<Outcome> = systems
        .iter()
        .zip(&rounds)
        .map(|(&(system, _), rounds)| {
            let values: Vec<f64> = rounds.iter().map(|&(value, _)| value).collect();
            outcome(system, report::median(&values))
        })
        .collect();
    let shares: Vec<f64> = rounds.iter().flatten().map(|&(_, share)| share).collect();
    let mean_share = shares.iter().sum::<f64>() / shares.len() as f64;
    let fitted: Vec<Outcome> = systems
        .iter()
        .zip(&rounds)
        .map(|(&(system, _), rounds)| outcome(system, fitted_at(rounds, mean_share)))
        .collect();
    let at_mean = Case {
        metric: Metric::NsPerOpAtMeanCrossing,
        ..*case
    };
    for line in report::lines(case, &medians)
        .into_iter()
        .chain(report::lines(&at_mean, &fitted))
    {
        println!("{line}");
    }
}

/// The least-squares line through `points` (value over share), read at `share`; the mean
/// value when every point has the same share.
fn fitted_at(points: &[(f64, f64)], share: f64) -> f64 {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|&(_, x)| x).sum::<f64>() / n;
    let mean_y = points.iter().map(|&(y, _)| y).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|&(_, x)| (x - mean_x).powi(2)).sum();
    if sxx == 0.0 {
        return mean_y;
    }
    let sxy: f64 = points
        .iter()
        .map(|&(y, x)| (x - mean_x) * (y - mean_y))
        .sum();
    mean_y + sxy / sxx * (share - mean_x)
}

/// Where the `nodiag` build of this binary should be (module docs): `Ok` if it is there.
fn nodiag_binary() -> Result<PathBuf, PathBuf> {
    let this = std::env::current_exe().expect("path of the running binary");
    let profile_dir = this.parent().expect("the binary is in a directory");
    let profile = profile_dir.file_name().expect("a profile directory");
    let target = profile_dir.parent().expect("a target directory");
    let name = this.file_name().expect("a file name");
    let path = target.join("nodiag").join(profile).join(name);
    match path.is_file() {
        true => Ok(path),
        false => Err(path),
    }
}

/// One round of `job` in the build at `exe`, which must report recording `recording`: ns per
/// operation, and the share of crossed wakes for a [`Workload::Crossing`].
fn in_child(exe: &std::path::Path, job: &str, recording: &str) -> (f64, Option<f64>) {
    let out = child::run_binary(exe, job);
    let number = |text: &str| -> f64 {
        text.parse()
            .unwrap_or_else(|_| panic!("child printed `{out}`, not numbers"))
    };
    let (reported, value, share) = match out.split_whitespace().collect::<Vec<_>>()[..] {
        [reported, value] => (reported, number(value), None),
        [reported, value, share] => (reported, number(value), Some(number(share))),
        _ => panic!("child printed `{out}`, not `<recording> <ns per op> [<share>]`"),
    };
    assert_eq!(
        reported,
        recording,
        "{} records wait sites: {reported}, expected {recording}",
        exe.display()
    );
    (value, share)
}

/// The child side: runs the job `diag_overhead <variant> <ops>` and prints whether this build
/// records wait sites, then ns per operation.
pub fn run_child(job: &str) -> ExitCode {
    let parsed = match job.split_whitespace().collect::<Vec<_>>()[..] {
        [JOB, variant, ops] => VARIANTS
            .iter()
            .find(|(name, _, _)| *name == variant)
            .zip(ops.parse::<u64>().ok().filter(|&n| n > 0)),
        _ => None,
    };
    let Some((&(_, _, workload), ops)) = parsed else {
        eprintln!("fibra-compare: bad child job `{job}`");
        return ExitCode::from(2);
    };
    let per_op = |elapsed: Duration| elapsed.as_nanos() as f64 / ops as f64;
    match workload {
        Workload::Plain(workload) => println!("{RECORDING} {:.3}", per_op(workload(ops))),
        Workload::Crossing(workload) => {
            let (elapsed, share) = workload(ops);
            println!("{RECORDING} {:.3} {share:.4}", per_op(elapsed));
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_reads_the_line_through_the_rounds_at_the_given_share() {
        // Exactly on the line 300 + 1 600 × share.
        let rounds = [(300.0, 0.0), (1100.0, 0.5), (1500.0, 0.75)];
        assert!((fitted_at(&rounds, 0.25) - 700.0).abs() < 1e-9);
        // Scattered, the line of least squares: 1.25 + 1.0 × share through these.
        let scattered = [(1.0, 0.0), (4.0, 2.0), (3.0, 2.0), (5.0, 4.0)];
        assert!((fitted_at(&scattered, 4.0) - 5.25).abs() < 1e-9);
        // Every round at one share: their mean, wherever it is read.
        assert_eq!(fitted_at(&[(10.0, 0.3), (20.0, 0.3)], 0.9), 15.0);
    }

    #[test]
    fn a_child_job_runs_its_variant_and_a_bad_one_is_refused() {
        assert_eq!(
            run_child("diag_overhead yield_pingpong 100"),
            ExitCode::SUCCESS
        );
        assert_eq!(run_child("diag_overhead nonesuch 100"), ExitCode::from(2));
        assert_eq!(
            run_child("diag_overhead yield_pingpong 0"),
            ExitCode::from(2)
        );
    }
}
