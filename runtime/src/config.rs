//! Runtime settings: what the builder was given, else the environment, else the defaults; a bad
//! value is reported in one line on stderr together with the fallback used.

use crate::diag::Deadlock;
use crate::stack::GuardMode;
use std::env;
use std::num::NonZeroUsize;
use std::thread;
use std::time::Duration;

/// Default usable stack of a spawned fiber.
pub(crate) const DEFAULT_STACK_SIZE: usize = 1 << 20;
/// Default usable stack of the main fiber.
pub(crate) const DEFAULT_MAIN_STACK_SIZE: usize = 8 << 20;
/// Default reductions per slice.
pub(crate) const DEFAULT_REDUCTIONS: u32 = 4000;
/// Default bound on blocking-pool threads.
pub(crate) const DEFAULT_BLOCKING_THREADS: usize = 64;
/// Default time a fiber may run in one slice, or a worker stay blocked in one, before the
/// monitor warns.
pub(crate) const DEFAULT_STUCK: Duration = Duration::from_millis(50);
/// Warm stacks a worker keeps per size class.
const DEFAULT_WARM_STACKS: usize = 4096;
const MAX_WORKERS: usize = 1024;

/// Settings after every source has been resolved.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) workers: usize,
    pub(crate) stack_size: usize,
    pub(crate) main_stack_size: usize,
    pub(crate) reductions: u32,
    pub(crate) warm_stacks: usize,
    pub(crate) blocking_threads: usize,
    /// How long `run` waits for detached fibers before cancelling them (`None`: for ever).
    pub(crate) shutdown_timeout: Option<std::time::Duration>,
    /// How stack guards are made: `FIBRA_STACK_GUARD` = `auto` (default), `madvise` or
    /// `mprotect` (the fallback for kernels before 6.13, forced for testing it).
    pub(crate) guard: GuardMode,
    /// Whether a panic in one of the runtime's fibers is reported with the fiber's name and id.
    pub(crate) panic_hook: bool,
    /// What a found deadlock does: builder, else `FIBRA_DEADLOCK`, else `Report`.
    pub(crate) deadlock: Deadlock,
    /// How long a slice may run before the monitor warns: builder, else `FIBRA_STUCK_MS`,
    /// else 50 ms.
    pub(crate) stuck: Duration,
    /// The signal that prints a dump (`FIBRA_DUMP_SIGNAL`), if any.
    pub(crate) dump_signal: Option<DumpSignal>,
    /// How long an idle worker leaves a lone unstarted fiber to its spawner's worker (see
    /// `sched::steal_grace`); only tests change it.
    pub(crate) steal_grace: Duration,
}

/// A signal `FIBRA_DUMP_SIGNAL` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DumpSignal {
    Quit,
    Usr1,
}

impl DumpSignal {
    fn parse(raw: &str) -> Option<DumpSignal> {
        match raw.to_ascii_uppercase().trim_start_matches("SIG") {
            "QUIT" => Some(DumpSignal::Quit),
            "USR1" => Some(DumpSignal::Usr1),
            _ => None,
        }
    }
}

/// What the builder was explicitly given.
#[derive(Clone, Debug, Default)]
pub(crate) struct Requested {
    pub(crate) workers: Option<usize>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) main_stack_size: Option<usize>,
    pub(crate) reductions: Option<u32>,
    pub(crate) warm_stacks: Option<usize>,
    pub(crate) blocking_threads: Option<usize>,
    pub(crate) shutdown_timeout: Option<std::time::Duration>,
    pub(crate) panic_hook: Option<bool>,
    pub(crate) deadlock: Option<Deadlock>,
    pub(crate) stuck: Option<Duration>,
    pub(crate) steal_grace: Option<Duration>,
}

impl Requested {
    /// Resolves every setting, reading the environment through `var`.
    pub(crate) fn resolve_with(&self, var: impl Fn(&str) -> Option<String>) -> Config {
        Config {
            workers: self.workers_with(&var),
            stack_size: self
                .stack_size
                .or_else(|| from_env(&var, "FIBRA_STACK_SIZE", parse_size, "1MiB"))
                .unwrap_or(DEFAULT_STACK_SIZE),
            main_stack_size: self
                .main_stack_size
                .or_else(|| from_env(&var, "FIBRA_MAIN_STACK_SIZE", parse_size, "8MiB"))
                .unwrap_or(DEFAULT_MAIN_STACK_SIZE),
            reductions: self.reductions.map_or(DEFAULT_REDUCTIONS, |r| r.max(1)),
            warm_stacks: self.warm_stacks.unwrap_or(DEFAULT_WARM_STACKS),
            blocking_threads: match self.blocking_threads {
                // The same mistake as `FIBRA_BLOCKING_THREADS=0`: reported alike, and the
                // default, as for `workers(0)`.
                Some(0) => {
                    report_ignored("blocking_threads(0)", "64");
                    DEFAULT_BLOCKING_THREADS
                }
                Some(threads) => threads,
                None => from_env(&var, "FIBRA_BLOCKING_THREADS", parse_count, "64")
                    .unwrap_or(DEFAULT_BLOCKING_THREADS),
            },
            shutdown_timeout: self.shutdown_timeout,
            guard: from_env(&var, "FIBRA_STACK_GUARD", parse_guard, "auto")
                .unwrap_or(GuardMode::Auto),
            panic_hook: self.panic_hook.unwrap_or(true),
            deadlock: self
                .deadlock
                .or_else(|| from_env(&var, "FIBRA_DEADLOCK", Deadlock::parse, "report"))
                .unwrap_or_default(),
            stuck: self
                .stuck
                .filter(|stuck| !stuck.is_zero())
                .or_else(|| from_env(&var, "FIBRA_STUCK_MS", parse_millis, "50 ms"))
                .unwrap_or(DEFAULT_STUCK),
            dump_signal: from_env(
                &var,
                "FIBRA_DUMP_SIGNAL",
                DumpSignal::parse,
                "no dump signal",
            ),
            steal_grace: self.steal_grace.unwrap_or(crate::sched::STEAL_GRACE),
        }
    }

    /// Resolves every setting from the process environment.
    pub(crate) fn resolve(&self) -> Config {
        self.resolve_with(|name| env::var(name).ok())
    }

    fn workers_with(&self, var: &impl Fn(&str) -> Option<String>) -> usize {
        let fallback = thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let fallback_text = format!("{fallback} (available parallelism)");
        // `workers(0)` and `FIBRA_WORKERS=0` are the same mistake: both get the default, and
        // the same report.
        let wanted = match self.workers {
            Some(0) => {
                report_ignored("workers(0)", &fallback_text);
                fallback
            }
            Some(n) => n,
            None => from_env(var, "FIBRA_WORKERS", parse_count, &fallback_text).unwrap_or(fallback),
        };
        if wanted > MAX_WORKERS {
            eprintln!("fibra: {wanted} workers is above the limit; using {MAX_WORKERS}");
        }
        wanted.clamp(1, MAX_WORKERS)
    }
}

/// Reads `name`; an unset variable is `None` silently, a bad one is `None` with a diagnostic.
fn from_env<T>(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    parse: fn(&str) -> Option<T>,
    fallback: &str,
) -> Option<T> {
    let raw = var(name)?;
    let parsed = parse(raw.trim());
    if parsed.is_none() {
        report_ignored(&format!("{name}={raw:?}"), fallback);
    }
    parsed
}

/// The one-line report of a setting that is not used, and what is used instead.
fn report_ignored(setting: &str, fallback: &str) {
    eprintln!("fibra: ignoring {setting}: not a valid value; using {fallback}");
}

fn parse_guard(raw: &str) -> Option<GuardMode> {
    match raw {
        "auto" => Some(GuardMode::Auto),
        "madvise" => Some(GuardMode::Madvise),
        "mprotect" => Some(GuardMode::Mprotect),
        _ => None,
    }
}

fn parse_millis(raw: &str) -> Option<Duration> {
    raw.parse()
        .ok()
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

fn parse_count(raw: &str) -> Option<usize> {
    raw.parse().ok().filter(|&n| n > 0)
}

/// Bytes, optionally with a binary suffix: `65536`, `64k`, `64KiB`, `2M`, `1G`.
fn parse_size(raw: &str) -> Option<usize> {
    let digits = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (number, suffix) = raw.split_at(digits);
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    let number: usize = number.parse().ok().filter(|&n| n > 0)?;
    number.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(requested: Requested, env: &[(&str, &str)]) -> Config {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        requested.resolve_with(|name| env.get(name).cloned())
    }

    #[test]
    fn builder_beats_env_beats_parallelism() {
        let both = Requested {
            workers: Some(3),
            ..Requested::default()
        };
        assert_eq!(resolve(both, &[("FIBRA_WORKERS", "5")]).workers, 3);
        assert_eq!(
            resolve(Requested::default(), &[("FIBRA_WORKERS", "5")]).workers,
            5
        );
        let parallelism = thread::available_parallelism()
            .unwrap()
            .get()
            .min(MAX_WORKERS);
        assert_eq!(resolve(Requested::default(), &[]).workers, parallelism);
    }

    #[test]
    fn bad_env_and_zero_fall_back() {
        let parallelism = thread::available_parallelism()
            .unwrap()
            .get()
            .min(MAX_WORKERS);
        for bad in ["zero", "0", "-2", ""] {
            let config = resolve(Requested::default(), &[("FIBRA_WORKERS", bad)]);
            assert_eq!(config.workers, parallelism, "FIBRA_WORKERS={bad:?}");
        }
        let zero = Requested {
            workers: Some(0),
            ..Requested::default()
        };
        assert_eq!(resolve(zero, &[]).workers, parallelism, "workers(0)");
    }

    #[test]
    fn workers_are_clamped_to_1024() {
        let many = Requested {
            workers: Some(5000),
            ..Requested::default()
        };
        assert_eq!(resolve(many, &[]).workers, 1024);
        assert_eq!(
            resolve(Requested::default(), &[("FIBRA_WORKERS", "4096")]).workers,
            1024
        );
    }

    #[test]
    fn stack_sizes_from_builder_env_and_defaults() {
        let config = resolve(Requested::default(), &[]);
        assert_eq!(config.stack_size, DEFAULT_STACK_SIZE);
        assert_eq!(config.main_stack_size, DEFAULT_MAIN_STACK_SIZE);
        let config = resolve(
            Requested::default(),
            &[
                ("FIBRA_STACK_SIZE", "256k"),
                ("FIBRA_MAIN_STACK_SIZE", "2MiB"),
            ],
        );
        assert_eq!(config.stack_size, 256 << 10);
        assert_eq!(config.main_stack_size, 2 << 20);
        let config = resolve(Requested::default(), &[("FIBRA_STACK_SIZE", "lots")]);
        assert_eq!(config.stack_size, DEFAULT_STACK_SIZE);
        let given = Requested {
            stack_size: Some(4096 * 20),
            ..Requested::default()
        };
        assert_eq!(
            resolve(given, &[("FIBRA_STACK_SIZE", "2M")]).stack_size,
            4096 * 20
        );
    }

    #[test]
    fn blocking_threads_from_builder_env_and_default() {
        assert_eq!(resolve(Requested::default(), &[]).blocking_threads, 64);
        let env = [("FIBRA_BLOCKING_THREADS", "8")];
        assert_eq!(resolve(Requested::default(), &env).blocking_threads, 8);
        let bad = [("FIBRA_BLOCKING_THREADS", "-1")];
        assert_eq!(resolve(Requested::default(), &bad).blocking_threads, 64);
        let given = Requested {
            blocking_threads: Some(3),
            ..Requested::default()
        };
        assert_eq!(resolve(given, &env).blocking_threads, 3);
        let zero = Requested {
            blocking_threads: Some(0),
            ..Requested::default()
        };
        assert_eq!(resolve(zero, &env).blocking_threads, 64);
    }

    #[test]
    fn guard_mode_from_env() {
        assert_eq!(resolve(Requested::default(), &[]).guard, GuardMode::Auto);
        let forced = resolve(Requested::default(), &[("FIBRA_STACK_GUARD", "mprotect")]);
        assert_eq!(forced.guard, GuardMode::Mprotect);
        let bad = resolve(Requested::default(), &[("FIBRA_STACK_GUARD", "none")]);
        assert_eq!(bad.guard, GuardMode::Auto);
    }

    #[test]
    fn the_stuck_threshold_from_builder_env_and_default() {
        assert_eq!(resolve(Requested::default(), &[]).stuck, DEFAULT_STUCK);
        let env = [("FIBRA_STUCK_MS", "200")];
        let from_env = resolve(Requested::default(), &env).stuck;
        assert_eq!(from_env, Duration::from_millis(200));
        for bad in ["0", "-5", "soon", "1.5"] {
            let config = resolve(Requested::default(), &[("FIBRA_STUCK_MS", bad)]);
            assert_eq!(config.stuck, DEFAULT_STUCK, "FIBRA_STUCK_MS={bad:?}");
        }
        let given = Requested {
            stuck: Some(Duration::from_millis(7)),
            ..Requested::default()
        };
        assert_eq!(resolve(given, &env).stuck, Duration::from_millis(7));
    }

    #[test]
    fn the_dump_signal_is_sigquit_or_sigusr1_else_none() {
        let signal = |raw: &str| resolve(Requested::default(), &[("FIBRA_DUMP_SIGNAL", raw)]);
        assert_eq!(signal("SIGQUIT").dump_signal, Some(DumpSignal::Quit));
        assert_eq!(signal("usr1").dump_signal, Some(DumpSignal::Usr1));
        assert_eq!(signal("SIGKILL").dump_signal, None);
        assert_eq!(resolve(Requested::default(), &[]).dump_signal, None);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("64 KiB"), Some(64 << 10));
        assert_eq!(parse_size("3G"), Some(3 << 30));
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("k"), None);
    }
}
