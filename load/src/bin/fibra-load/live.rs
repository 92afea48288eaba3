//! The live display: an indicatif bar on a terminal, a plain line a second otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use fibra_load::Progress;
use indicatif::{ProgressBar, ProgressStyle};

fn show(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1.0 {
        format!("{:.0}us", ms * 1e3)
    } else {
        format!("{ms:.2}ms")
    }
}

pub(crate) enum Live {
    Quiet,
    Bar { bar: ProgressBar, by_requests: bool },
    Lines { next: Duration },
}

impl Live {
    /// `requests`: the planned request count when the run has no planned length.
    pub(crate) fn new(quiet: bool, planned: Option<Duration>, requests: Option<u64>) -> Live {
        if quiet {
            return Live::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return Live::Lines {
                next: Duration::from_secs(1),
            };
        }
        let (length, by_requests) = match (planned, requests) {
            (Some(planned), _) => (planned.as_millis() as u64, false),
            (None, Some(n)) => (n, true),
            (None, None) => (0, false),
        };
        let bar = ProgressBar::new(length);
        let template = if by_requests {
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} requests  {msg}"
        } else {
            "{spinner} [{elapsed_precise}] {bar:30} {eta} left  {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        Live::Bar { bar, by_requests }
    }

    pub(crate) fn update(&mut self, p: &Progress) {
        let mean = p.requests as f64 / p.elapsed.as_secs_f64().max(1e-3);
        match self {
            Live::Quiet => {}
            Live::Bar { bar, by_requests } => {
                bar.set_position(if *by_requests {
                    p.requests
                } else {
                    p.elapsed.as_millis() as u64
                });
                bar.set_message(format!(
                    "{:.0} req/s (mean {mean:.0})  p50 {}  p99 {}  errors {}  VUs {}",
                    p.rps,
                    show(p.p50),
                    show(p.p99),
                    p.failed,
                    p.vus
                ));
            }
            Live::Lines { next } => {
                if p.elapsed >= *next {
                    *next += Duration::from_secs(1);
                    eprintln!(
                        "[{:>6.1}s] {} requests  {:.0} req/s (mean {mean:.0})  \
                         p50 {}  p99 {}  errors {}  VUs {}",
                        p.elapsed.as_secs_f64(),
                        p.requests,
                        p.rps,
                        show(p.p50),
                        show(p.p99),
                        p.failed,
                        p.vus
                    );
                }
            }
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Live::Bar { bar, .. } = self {
            bar.finish_and_clear();
        }
    }
}
