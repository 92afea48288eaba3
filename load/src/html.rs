//! The self-contained HTML report: tables and inline SVG plots, nothing from the network.

use std::fmt::Write;

use crate::report::{Model, Report};
use crate::summary::{show_bytes, show_duration};

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 220.0;
const MARGIN: f64 = 52.0;

/// An axis label: `0.25`, `12.5`, `102.5k`, `1.2M`.
fn compact(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line chart of `points` with labelled x ticks; y starts at 0.
fn chart(title: &str, y_unit: &str, points: &[(f64, f64)], x_ticks: &[(f64, String)]) -> String {
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">"#,
        escape(title)
    );
    let x_max = points
        .iter()
        .map(|p| p.0)
        .fold(f64::MIN, f64::max)
        .max(1e-9);
    let x_min = points
        .iter()
        .map(|p| p.0)
        .fold(f64::MAX, f64::min)
        .min(x_max);
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.1;
    let (plot_w, plot_h) = (WIDTH - 2.0 * MARGIN, HEIGHT - 2.0 * MARGIN);
    let x = |v: f64| MARGIN + (v - x_min) / (x_max - x_min).max(1e-9) * plot_w;
    let y = |v: f64| HEIGHT - MARGIN - v / y_max * plot_h;
    let _ = write!(
        svg,
        r##"<rect x="{MARGIN}" y="{MARGIN}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##
    );
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{MARGIN}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            WIDTH - MARGIN,
            MARGIN - 4.0,
            y(v) + 3.0,
            compact(v),
            y = y(v),
        );
    }
    for (at, label) in x_ticks {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
            x(*at),
            HEIGHT - MARGIN + 14.0,
            escape(label)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="12" y="{:.1}" font-size="10" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        HEIGHT / 2.0,
        HEIGHT / 2.0,
        escape(y_unit)
    );
    let line: Vec<String> = points
        .iter()
        .map(|(px, py)| format!("{:.1},{:.1}", x(*px), y(*py)))
        .collect();
    let _ = write!(
        svg,
        r##"<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{}"/></svg></figure>"##,
        line.join(" ")
    );
    svg
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut html = String::from("<table>");
    if head.iter().any(|h| !h.is_empty()) {
        html.push_str("<tr>");
        for h in head {
            let _ = write!(html, "<th>{}</th>", escape(h));
        }
        html.push_str("</tr>");
    }
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            let _ = write!(html, "<td>{}</td>", escape(cell));
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

impl Report {
    /// A self-contained HTML page: the summary numbers, the latency percentile curve (log
    /// scale), RPS and p99 over time, status, error, step and check tables (inline SVG, no
    /// script, font or style from the network).
    pub fn html(&self) -> String {
        let stats = &self.stats;
        let latency = &stats.latency;
        let mut page = String::new();
        let _ = write!(
            page,
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>fibra-load: {}</title>\
             <style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse;margin:1em 0}}\
             td,th{{border:1px solid #ccc;padding:4px 10px;text-align:right}}th{{background:#f4f4f4}}\
             figure{{margin:1em 0}}figcaption{{font-weight:bold}}</style></head><body>\
             <h1>fibra-load report</h1><p>{}</p>",
            escape(&self.target),
            escape(&self.target),
        );
        let mut summary = vec![
            vec!["Requests".into(), stats.requests.to_string()],
            vec!["Duration".into(), format!("{:.2}s", self.duration_s)],
            vec!["Requests/sec".into(), format!("{:.1}", self.rps)],
            vec![
                "Success".into(),
                format!("{:.2}%", 100.0 * (1.0 - self.error_rate)),
            ],
            vec!["Failed".into(), stats.failed().to_string()],
            vec!["Bytes in".into(), show_bytes(stats.bytes_in as f64)],
            vec!["Bytes out".into(), show_bytes(stats.bytes_out as f64)],
            vec!["VUs (max)".into(), self.vus_max.to_string()],
        ];
        if self.model == Model::Open {
            summary.push(vec!["Late starts".into(), self.late_starts.to_string()]);
            summary.push(vec!["Missed starts".into(), self.missed_starts.to_string()]);
        }
        if self.interrupted {
            summary.push(vec!["Interrupted".into(), "yes".into()]);
        }
        page.push_str("<h2>Summary</h2>");
        page.push_str(&table(&["", ""], &summary));
        let quantiles: Vec<Vec<String>> = [
            ("mean", latency.mean()),
            ("p50", latency.quantile(0.5)),
            ("p90", latency.quantile(0.9)),
            ("p95", latency.quantile(0.95)),
            ("p99", latency.quantile(0.99)),
            ("p99.9", latency.quantile(0.999)),
            ("max", latency.max()),
        ]
        .iter()
        .map(|(name, d)| vec![name.to_string(), show_duration(*d)])
        .collect();
        page.push_str("<h2>Latency</h2>");
        page.push_str(&table(&["", "latency"], &quantiles));
        // x = number of nines: 0 -> p0, 1 -> p90, 2 -> p99, ...
        let curve: Vec<(f64, f64)> = (0..=100)
            .map(|i| {
                let nines = f64::from(i) / 20.0;
                let q = 1.0 - 10f64.powf(-nines);
                (nines, latency.quantile(q).as_secs_f64() * 1e3)
            })
            .collect();
        let ticks: Vec<(f64, String)> = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, l.to_string()))
            .collect();
        page.push_str(&chart(
            "Latency by percentile (log scale)",
            "ms",
            &curve,
            &ticks,
        ));
        // The last second is usually cut short by the end of the run: scale it to its length,
        // and leave it out when it is only the requests that were in flight at the end.
        let seconds: Vec<(f64, f64)> = stats
            .series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let length = (self.duration_s - i as f64).min(1.0);
                (length >= 0.1).then(|| (i as f64, s.requests as f64 / length))
            })
            .collect();
        let p99s: Vec<(f64, f64)> = stats
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.latency.quantile(0.99).as_secs_f64() * 1e3))
            .collect();
        let step = (stats.series.len() / 10).max(1);
        let time_ticks: Vec<(f64, String)> = (0..stats.series.len())
            .step_by(step)
            .map(|i| (i as f64, format!("{i}s")))
            .collect();
        page.push_str(&chart(
            "Requests per second",
            "req/s",
            &seconds,
            &time_ticks,
        ));
        page.push_str(&chart("p99 latency per second", "ms", &p99s, &time_ticks));
        let status: Vec<Vec<String>> = stats
            .status
            .iter()
            .map(|(code, n)| vec![code.to_string(), n.to_string()])
            .collect();
        page.push_str("<h2>Status codes</h2>");
        page.push_str(&table(&["status", "responses"], &status));
        if !stats.errors.is_empty() {
            let errors: Vec<Vec<String>> = stats
                .errors
                .iter()
                .map(|(kind, n)| vec![kind.name().to_string(), n.to_string()])
                .collect();
            page.push_str("<h2>Errors</h2>");
            page.push_str(&table(&["kind", "count"], &errors));
        }
        let steps: Vec<Vec<String>> = stats
            .steps
            .iter()
            .map(|s| {
                vec![
                    s.name.clone(),
                    s.count.to_string(),
                    s.errors.to_string(),
                    show_duration(s.latency.quantile(0.5)),
                    show_duration(s.latency.quantile(0.99)),
                    show_duration(s.latency.max()),
                ]
            })
            .collect();
        page.push_str("<h2>Steps</h2>");
        page.push_str(&table(
            &["step", "runs", "errors", "p50", "p99", "max"],
            &steps,
        ));
        if !stats.checks.is_empty() {
            let checks: Vec<Vec<String>> = stats
                .checks
                .iter()
                .map(|(name, c)| vec![name.clone(), c.pass.to_string(), c.fail.to_string()])
                .collect();
            page.push_str("<h2>Checks</h2>");
            page.push_str(&table(&["check", "passed", "failed"], &checks));
        }
        if !self.thresholds.is_empty() {
            let thresholds: Vec<Vec<String>> = self
                .thresholds
                .iter()
                .map(|t| {
                    vec![
                        t.threshold.clone(),
                        t.show_actual().unwrap_or_else(|| "not measured".into()),
                        if t.passed { "pass" } else { "FAIL" }.to_string(),
                    ]
                })
                .collect();
            page.push_str("<h2>Thresholds</h2>");
            page.push_str(&table(&["threshold", "actual", "result"], &thresholds));
        }
        page.push_str("</body></html>\n");
        page
    }
}
