//! The answer `run_code` gives: the run's value, projected so a model sees shapes, not walls (long arrays and
//! strings cut, each cut saying how much and how to get the rest), one short line on the calls it made, the
//! captured log, and how the run ended. The answer reaches the context at about its own size: a run that
//! returned and logged nothing adds a bounded summary (the call count, at most `FAILED_LISTED` calls without a
//! result, the time) to its value, not a list of every call nor the worker's sandbox layers (the run's
//! report keeps those; `toolgate doctor` shows which layers the machine offers).
//!
//! The text item is what a model reads: on a throw, a limit or a worker failure it opens with what ended the
//! run (and the result has `isError: true`); then the value (a string as itself, anything else as compact
//! JSON), a note when it was cut, the summary, the log. `structuredContent` carries the same for programs and
//! clients that read JSON: `result` (projected), `ended`, `calls` (`made`, `failed`, `first_failed`),
//! `elapsed_ms`, and only when they apply `log`, `log_truncated`, `truncated`. Every part is bounded. This module
//! only renders; the run decided everything it shows.

mod value;

use crate::run::{CallNote, LimitKind, RunEnd, RunReport};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// Characters of the value's text before it is cut.
pub const VALUE_CHARS: usize = 16_000;
/// Characters of the log shown.
pub const LOG_CHARS: usize = 4_000;
/// Calls without a result listed by name and error; the rest are counted.
pub const FAILED_LISTED: usize = 3;
/// Characters of the run's end message shown.
const MESSAGE_CHARS: usize = 300;
/// Characters of one failed call's error shown.
const CALL_ERROR_CHARS: usize = 120;

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

    // What the run did, in one bounded line: how many calls, the first few without a result (the rest counted),
    // and the time. Successful calls are not listed: they are numbered in order (`#1`…`#n`) for `recall`.
    let failed: Vec<&CallNote> = report.calls.iter().filter(|n| n.error.is_some()).collect();
    let summary = summary(report, &failed);
    if !summary.is_empty() {
        text.push_str("\n\n");
        text.push_str(&summary);
    }

    let log_cut = report.log.chars().count() > LOG_CHARS;
    let log = cut(&report.log, LOG_CHARS);
    if !log.is_empty() {
        text.push_str("\n\nlog:\n");
        text.push_str(log.trim_end_matches('\n'));
    }
    if log_cut || report.log_truncated {
        text.push_str("\n[The log was cut: it shows the first lines the program wrote; log less, or return what you need.]");
    }
    let mut calls = Map::new();
    calls.insert("made".to_owned(), json!(report.calls.len()));
    calls.insert("failed".to_owned(), json!(failed.len()));
    if !failed.is_empty() {
        let listed: Vec<Value> = failed
            .iter()
            .take(FAILED_LISTED)
            .map(|n| call_json(n))
            .collect();
        calls.insert("first_failed".to_owned(), Value::Array(listed));
    }
    structured.insert("calls".to_owned(), Value::Object(calls));
    if !log.is_empty() {
        structured.insert("log".to_owned(), Value::String(log));
    }
    if log_cut || report.log_truncated {
        structured.insert("log_truncated".to_owned(), Value::Bool(true));
    }
    if truncated {
        structured.insert("truncated".to_owned(), Value::Bool(true));
    }
    structured.insert(
        "elapsed_ms".to_owned(),
        json!(u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX)),
    );

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

/// `[6 calls, all ok · 3 ms]`, or `[120 calls, 12 without a result: #2 x__y refused: …; #3 x__z failed: …; … 10
/// more · 40 ms]`; empty for a run that made no call.
fn summary(report: &RunReport, failed: &[&CallNote]) -> String {
    let made = report.calls.len();
    if made == 0 {
        return String::new();
    }
    let ms = report.elapsed.as_millis();
    let plural = if made == 1 { "" } else { "s" };
    if failed.is_empty() {
        return format!("[{made} call{plural}, all ok · {ms} ms]");
    }
    let mut line = format!("[{made} call{plural}, {} without a result: ", failed.len());
    for (i, note) in failed.iter().take(FAILED_LISTED).enumerate() {
        if i > 0 {
            line.push_str("; ");
        }
        line.push_str(&call_line(note));
    }
    if failed.len() > FAILED_LISTED {
        let _ = write!(line, "; … {} more", failed.len() - FAILED_LISTED);
    }
    let _ = write!(line, " · {ms} ms]");
    line
}

/// `#2 x__y refused: POLICY_DENIED: …`, `#3 x__z failed: …`.
fn call_line(note: &CallNote) -> String {
    let error = note.error.as_deref().unwrap_or_default();
    match error.strip_prefix("CALL_FAILED: ") {
        Some(message) => format!(
            "#{} {} failed: {}",
            note.seq,
            note.name,
            cut(message, CALL_ERROR_CHARS)
        ),
        None => format!(
            "#{} {} refused: {}",
            note.seq,
            note.name,
            cut(error, CALL_ERROR_CHARS)
        ),
    }
}

fn call_json(note: &CallNote) -> Value {
    json!({
        "seq": note.seq, "name": note.name,
        "error": cut(note.error.as_deref().unwrap_or_default(), CALL_ERROR_CHARS)
    })
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
