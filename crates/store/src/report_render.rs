//! Rendering a `Report` as an aligned text table, JSON, or CSV — each returned as a String.
//!
//! Renderers neutralise what could harm the reader: control characters (terminal escape
//! injection) in tables, and leading `= + - @` (spreadsheet formula injection) in CSV.
//! They do not print; the CLI decides where the text goes.

use std::fmt::Write;

use crate::error::Result;
use crate::report::{Report, ReportRow};

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// Aligned columns for a terminal.
    Table,
    /// Pretty JSON of the whole report.
    Json,
    /// RFC 4180 CSV with a header row.
    Csv,
}

/// The latency columns are the calls' own time (toolgate and the tool); the wait columns are the time calls
/// spent waiting for a human, over the `waited` calls that did.
const HEADERS: [&str; 11] = [
    "group",
    "count",
    "succeeded",
    "success_rate",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "waited",
    "wait_p50_ms",
    "wait_p95_ms",
    "top_reasons",
];
/// Where the reasons are, the one free-text column besides the group.
const REASONS: usize = HEADERS.len() - 1;

impl Report {
    /// Renders in `format`.
    pub fn render(&self, format: ReportFormat) -> Result<String> {
        match format {
            ReportFormat::Table => Ok(self.render_table()),
            ReportFormat::Json => self.render_json(),
            ReportFormat::Csv => Ok(self.render_csv()),
        }
    }

    /// Aligned text table, one line per group.
    pub fn render_table(&self) -> String {
        let mut header = HEADERS.map(str::to_owned);
        header[0] = self.group_by.as_str().to_owned();
        let mut lines = vec![header.to_vec()];
        lines.extend(self.rows.iter().map(|r| {
            let mut cells = cells(r, format!("{:.1}%", r.success_rate * 100.0));
            cells[0] = printable(&cells[0]);
            cells[REASONS] = printable(&cells[REASONS]);
            cells
        }));
        let mut widths = [0usize; HEADERS.len()];
        for line in &lines {
            for (w, c) in widths.iter_mut().zip(line) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for line in &lines {
            let mut text = String::new();
            for (i, (c, w)) in line.iter().zip(widths).enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                // Numbers right-aligned, text left-aligned.
                if (1..REASONS).contains(&i) {
                    let _ = write!(text, "{c:>w$}");
                } else {
                    let _ = write!(text, "{c:<w$}");
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }

    /// Pretty JSON of the whole report.
    pub fn render_json(&self) -> Result<String> {
        let mut s = serde_json::to_string_pretty(self)?;
        s.push('\n');
        Ok(s)
    }

    /// CSV with a header row; `top_reasons` is `CODE:n;CODE:n`.
    pub fn render_csv(&self) -> String {
        let mut out = HEADERS.join(",");
        out.push_str("\r\n");
        for r in &self.rows {
            let cells = cells(r, format!("{:.4}", r.success_rate));
            let quoted: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&quoted.join(","));
            out.push_str("\r\n");
        }
        out
    }
}

fn cells(r: &ReportRow, rate: String) -> Vec<String> {
    let ms = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let reasons: Vec<String> = r
        .top_reasons
        .iter()
        .map(|rc| format!("{}:{}", rc.reason_code, rc.count))
        .collect();
    vec![
        r.key.clone(),
        r.count.to_string(),
        r.succeeded.to_string(),
        rate,
        ms(r.p50_ms),
        ms(r.p95_ms),
        ms(r.p99_ms),
        r.waited.to_string(),
        ms(r.wait_p50_ms),
        ms(r.wait_p95_ms),
        reasons.join(";"),
    ]
}

/// Replaces control characters so a crafted server name cannot drive the terminal.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Quotes per RFC 4180 and defuses spreadsheet formulas with a leading apostrophe.
fn csv_cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@']) && s != "-" {
        format!("'{s}")
    } else {
        s.to_owned()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{GroupBy, ReasonCount};
    use pretty_assertions::assert_eq;

    fn report() -> Report {
        Report {
            group_by: GroupBy::Server,
            since: None,
            rows: vec![
                ReportRow {
                    key: "fs".into(),
                    count: 4,
                    succeeded: 3,
                    success_rate: 0.75,
                    top_reasons: vec![ReasonCount {
                        reason_code: "RULE_ALLOW".into(),
                        count: 4,
                    }],
                    p50_ms: Some(10),
                    p95_ms: Some(40),
                    p99_ms: Some(40),
                    waited: 2,
                    wait_p50_ms: Some(61_000),
                    wait_p95_ms: Some(95_000),
                },
                ReportRow {
                    key: "=cmd,\"x\"\u{1b}".into(),
                    count: 1,
                    succeeded: 0,
                    success_rate: 0.0,
                    top_reasons: vec![],
                    p50_ms: None,
                    p95_ms: None,
                    p99_ms: None,
                    waited: 0,
                    wait_p50_ms: None,
                    wait_p95_ms: None,
                },
            ],
        }
    }

    #[test]
    fn table_is_aligned() {
        let expected = "\
server     count  succeeded  success_rate  p50_ms  p95_ms  p99_ms  waited  wait_p50_ms  wait_p95_ms  top_reasons
fs             4          3         75.0%      10      40      40       2        61000        95000  RULE_ALLOW:4
=cmd,\"x\"?      1          0          0.0%       -       -       -       0            -            -
";
        assert_eq!(report().render_table(), expected);
    }

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let csv = report().render_csv();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "group,count,succeeded,success_rate,p50_ms,p95_ms,p99_ms,waited,wait_p50_ms,wait_p95_ms,top_reasons"
        );
        assert_eq!(
            lines[1],
            "fs,4,3,0.7500,10,40,40,2,61000,95000,RULE_ALLOW:4"
        );
        assert_eq!(
            lines[2],
            "\"'=cmd,\"\"x\"\"\u{1b}\",1,0,0.0000,-,-,-,0,-,-,"
        );
    }

    #[test]
    fn json_round_trips_as_value() {
        let v: serde_json::Value = serde_json::from_str(&report().render_json().unwrap()).unwrap();
        assert_eq!(v["rows"][0]["p95_ms"], 40);
        assert_eq!(v["group_by"], "server");
    }
}
