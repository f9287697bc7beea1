//! The answer `run_code` gives: the run's value, projected so a model sees shapes, not walls (long arrays and
//! strings cut, each cut saying how much and how to get the rest), the numbered calls (`#n`, for `recall`), the
//! captured log, and how the run ended.
//!
//! The text item is what a model reads: on a throw, a limit or a worker failure it opens with what ended the
//! run (and the result has `isError: true`); then the value (a string as itself, anything else as compact
//! JSON), a note when it was cut, the calls, the log. `structuredContent` carries the same fields for programs
//! and clients that read JSON: `result` (projected), `ended`, `calls`, `log`, `truncated`, `elapsed_ms`,
//! `layers`. Every part is bounded. This module only renders; the run decided everything it shows.

mod value;

use crate::run::{CallNote, LimitKind, RunEnd, RunReport};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Characters of the value's text before it is cut.
pub const VALUE_CHARS: usize = 16_000;
/// Characters of the log shown.
pub const LOG_CHARS: usize = 4_000;
/// Calls listed one per line; the rest are counted.
pub const CALL_LINES: usize = 50;
/// Characters of one call's error or of the run's end message shown.
const MESSAGE_CHARS: usize = 300;

const CUT_NOTE: &str = "[The value was cut to fit: long arrays show their first items, long strings their \
first characters, deep nesting is elided. To get the rest, return a slice or a narrower value (e.g. \
`return rows.slice(20, 40)`), use `recall(n)` in a new program to reach call #n's full result, or \
`saveFile(name, JSON.stringify(value))`.]";

/// The `tools/call` result of `run_code` for `report`.
pub fn render(report: &RunReport) -> Value {
    let mut text = String::new();
    let mut structured = Map::new();
    let mut truncated = false;
    let is_error = match &report.end {
        RunEnd::Returned(v) => {
            let fitted = value::fit(v, VALUE_CHARS);
            text.push_str(&fitted.text);
            if fitted.cut {
                text.push_str("\n\n");
                text.push_str(CUT_NOTE);
            }
            truncated = fitted.cut;
            structured.insert("result".to_owned(), fitted.value);
            structured.insert("ended".to_owned(), json!({"kind": "returned"}));
            false
        }
        RunEnd::Threw { message } => {
            let message = cut(message, MESSAGE_CHARS);
            text.push_str(&format!("The program threw: {message}"));
            structured.insert(
                "ended".to_owned(),
                json!({"kind": "threw", "message": message}),
            );
            true
        }
        RunEnd::Limit { kind, message } => {
            let message = cut(message, MESSAGE_CHARS);
            let (name, what) = limit_name(*kind);
            text.push_str(&format!("The run was stopped at its {what}: {message}"));
            structured.insert(
                "ended".to_owned(),
                json!({"kind": "limit", "limit": name, "message": message}),
            );
            true
        }
        RunEnd::WorkerFailed { message } => {
            let message = cut(message, MESSAGE_CHARS);
            text.push_str(&format!("The code mode worker failed: {message}"));
            structured.insert(
                "ended".to_owned(),
                json!({"kind": "worker_failed", "message": message}),
            );
            true
        }
    };

    if !report.calls.is_empty() {
        text.push_str("\n\ncalls:");
        for note in report.calls.iter().take(CALL_LINES) {
            let _ = write!(text, "\n{}", call_line(note));
        }
        let rest = report.calls.get(CALL_LINES..).unwrap_or_default();
        if !rest.is_empty() {
            let failed = rest.iter().filter(|n| n.error.is_some()).count();
            let _ = write!(
                text,
                "\n… {} more calls (#{}–#{}), {failed} of them without a result; structuredContent lists them",
                rest.len(),
                rest.first().map_or(0, |n| n.seq),
                rest.last().map_or(0, |n| n.seq),
            );
        }
    }
    let calls: Vec<Value> = report.calls.iter().map(call_json).collect();
    structured.insert("calls".to_owned(), Value::Array(calls));

    let log_cut = report.log.chars().count() > LOG_CHARS;
    let log = cut(&report.log, LOG_CHARS);
    if !log.is_empty() {
        text.push_str("\n\nlog:\n");
        text.push_str(log.trim_end_matches('\n'));
    }
    if log_cut || report.log_truncated {
        text.push_str("\n[The log was cut: it shows the first lines the program wrote; log less, or return what you need.]");
    }
    structured.insert("log".to_owned(), Value::String(log));
    structured.insert(
        "log_truncated".to_owned(),
        Value::Bool(log_cut || report.log_truncated),
    );
    structured.insert("truncated".to_owned(), Value::Bool(truncated));
    structured.insert(
        "elapsed_ms".to_owned(),
        json!(u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX)),
    );
    let layers: Map<String, Value> = report
        .layers
        .iter()
        .map(|(name, state)| (name.clone(), Value::String(state.clone())))
        .collect();
    structured.insert("layers".to_owned(), Value::Object(layers));

    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
    })
}

/// The limit's name on the wire and in words.
fn limit_name(kind: LimitKind) -> (&'static str, &'static str) {
    match kind {
        LimitKind::WallClock => ("wall_clock", "wall-clock limit (sandbox.timeoutSeconds)"),
        LimitKind::Memory => ("memory", "memory limit"),
        LimitKind::Output => ("output", "output limit"),
        LimitKind::Calls => ("calls", "limit of calls per run"),
    }
}

/// `#1 files__list_directory ok`, `#2 x__y refused: POLICY_DENIED: …`, `#3 x__z failed: …`.
fn call_line(note: &CallNote) -> String {
    match &note.error {
        None => format!("#{} {} ok", note.seq, note.name),
        Some(error) => match error.strip_prefix("CALL_FAILED: ") {
            Some(message) => format!(
                "#{} {} failed: {}",
                note.seq,
                note.name,
                cut(message, MESSAGE_CHARS)
            ),
            None => format!(
                "#{} {} refused: {}",
                note.seq,
                note.name,
                cut(error, MESSAGE_CHARS)
            ),
        },
    }
}

fn call_json(note: &CallNote) -> Value {
    match &note.error {
        None => json!({"seq": note.seq, "name": note.name, "ok": true}),
        Some(error) => json!({
            "seq": note.seq, "name": note.name, "ok": false, "error": cut(error, MESSAGE_CHARS)
        }),
    }
}

/// `s` cut to `max` characters, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests;
