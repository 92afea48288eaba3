//! The self-contained HTML report.

use crate::report::Report;

impl Report {
    /// A self-contained HTML page (inline SVG, no scripts or fonts from the network).
    pub fn html(&self) -> String {
        format!("<!doctype html><pre>{}</pre>", self.summary())
    }
}
