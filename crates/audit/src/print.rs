//! An event printed as the canonical entries of its record (`"key":value`, sorted by key, joined by commas),
//! straight into two buffers the writer reuses from record to record: the entries whose keys sort before `hash`,
//! and the rest. `chain::seal_printed` hashes them and splices the hash in between. Every text field is
//! redacted, then capped, as it is printed (the redaction of short texts remembered per thread). This module
//! neither hashes nor writes files; `AuditEvent::to_record` (tests) builds the same record as an object, and a
//! test holds the two equal byte for byte.

use serde::Serialize;

use crate::event::{AuditEvent, MAX_FIELD_CHARS, MAX_RESOURCES, MAX_RESOURCE_CHARS};
use crate::redact::redact;
use crate::time::rfc3339;

/// Appended to a value cut at its cap.
pub(crate) const TRUNCATED: &str = "…[truncated]";
/// Layout version of a record.
pub(crate) const RECORD_VERSION: u64 = 1;

/// A record's entries, without `hash`: `before` holds the keys that sort before it (`actor` … `duration_ms`),
/// `after` the others. Each is the entries joined by commas, without braces.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    pub before: Vec<u8>,
    pub after: Vec<u8>,
}

/// Appends `"key":value` to `out` (after a comma unless it is the first entry). Every value printed here is a
/// string, a number, a list of strings or a digest whose fields serialise in sorted order (`bytes`, `sha256`),
/// so serde_json's own printing is canonical; keys are plain ASCII names, quoted as they are.
fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) {
    put_key(out, key);
    // Writing into a `Vec` cannot fail, nor can these values' serialisation.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Appends `"key":` (after a comma unless it is the first entry).
fn put_key(out: &mut Vec<u8>, key: &str) {
    if !out.is_empty() {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// `put` of a text field, redacted and capped.
fn put_text(out: &mut Vec<u8>, key: &str, text: Option<&str>) {
    if let Some(text) = text {
        with_field(text, MAX_FIELD_CHARS, |f| put(out, key, f));
    }
}

/// `put_text` of a field that is new on every call (a trace id, a request id): redacted without being
/// remembered, where it would only push out the texts that do repeat.
fn put_unique_text(out: &mut Vec<u8>, key: &str, text: Option<&str>) {
    if let Some(text) = text {
        capped(&redact(text), MAX_FIELD_CHARS, |f| put(out, key, f));
    }
}

/// `put` of a list of texts, each redacted and capped at `max_chars`.
fn put_texts<'a>(
    out: &mut Vec<u8>,
    key: &str,
    texts: impl Iterator<Item = &'a String>,
    max_chars: usize,
) {
    put_key(out, key);
    out.push(b'[');
    for (i, text) in texts.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        with_field(text, max_chars, |f| {
            let _ = serde_json::to_writer(&mut *out, f);
        });
    }
    out.push(b']');
}

impl AuditEvent {
    /// Prints the record with its chain fields `seq` and `prev` (everything but `hash`) into `out`, emptied
    /// first, in sorted key order.
    pub(crate) fn print_entries(&self, seq: u64, prev: &str, out: &mut Entries) {
        let (before, after) = (&mut out.before, &mut out.after);
        before.clear();
        after.clear();
        put_text(before, "actor", self.actor.as_deref());
        if let Some(d) = &self.arguments {
            put(before, "arguments", d);
        }
        if !self.credentials.is_empty() {
            put_texts(
                before,
                "credentials",
                self.credentials.iter(),
                MAX_FIELD_CHARS,
            );
        }
        put_text(before, "decision", self.decision.as_deref());
        if let Some(d) = self.duration_ms {
            put(before, "duration_ms", &d);
        }
        put(after, "kind", &self.kind);
        put_text(after, "operation", Some(&self.operation));
        put_text(after, "outcome", self.outcome.as_deref());
        put_unique_text(after, "parent_trace_id", self.parent_trace_id.as_deref());
        put(after, "prev", prev);
        put_text(after, "principal", self.principal.as_deref());
        put_text(after, "profile", Some(&self.profile));
        put_text(after, "reason_code", self.reason_code.as_deref());
        put_unique_text(after, "request_id", self.request_id.as_deref());
        let listed = self.resources.iter().take(MAX_RESOURCES);
        put_texts(after, "resources", listed, MAX_RESOURCE_CHARS);
        if self.resources.len() > MAX_RESOURCES {
            put(
                after,
                "resources_omitted",
                &((self.resources.len() - MAX_RESOURCES) as u64),
            );
        }
        if let Some(d) = &self.result {
            put(after, "result", d);
        }
        put_text(after, "rule_at", self.rule_at.as_deref());
        put_text(after, "rule_id", self.rule_id.as_deref());
        put(after, "seq", &seq);
        put_text(after, "server", Some(&self.server));
        put(after, "time", &rfc3339(self.time_ms));
        put(after, "time_ms", &self.time_ms);
        put_text(after, "tool", Some(&self.tool));
        put_unique_text(after, "trace_id", Some(&self.trace_id));
        put(after, "v", &RECORD_VERSION);
        if let Some(w) = self.wait_ms {
            put(after, "wait_ms", &w);
        }
    }
}

/// Texts up to this long have their redaction remembered.
pub(crate) const MEMO_TEXT_BYTES: usize = 128;
/// Remembered redactions per thread at most; the memory is forgotten whole when full.
pub(crate) const MEMO_ENTRIES: usize = 1024;

/// Calls `f` with `redact(text)`, remembered for short texts. Most fields repeat from record to record (server,
/// tool, operation, profile, decision, rule, outcome) and `redact` is a pure function, so a remembered answer is
/// the same answer for a hash lookup instead of every rule's scan. Bounded: `MEMO_ENTRIES` texts of
/// `MEMO_TEXT_BYTES` per thread. `f` must not print another field (it runs while the memory is borrowed).
fn with_redacted<R>(text: &str, f: impl FnOnce(&str) -> R) -> R {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static MEMO: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
    }
    if text.len() > MEMO_TEXT_BYTES {
        return f(&redact(text));
    }
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(known) = memo.get(text) {
            return f(known);
        }
        let red = redact(text);
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        let answer = f(&red);
        memo.insert(text.to_owned(), red);
        answer
    })
}

/// `redact(text)`, remembered on this thread for short texts as the record printer remembers them: for a text
/// that repeats from call to call (a tool's name) on a hot path outside the printer.
pub fn redact_remembered(text: &str) -> String {
    with_redacted(text, str::to_owned)
}

/// Calls `f` with `text` redacted, then capped at `max_chars`: capping first could cut a secret so it is no
/// longer recognised.
fn with_field<R>(text: &str, max_chars: usize, f: impl FnOnce(&str) -> R) -> R {
    with_redacted(text, |red| capped(red, max_chars, f))
}

/// Calls `f` with `red` (a redacted text) capped at `max_chars`.
fn capped<R>(red: &str, max_chars: usize, f: impl FnOnce(&str) -> R) -> R {
    // A text of no more bytes than the cap has no more characters either.
    if red.len() <= max_chars || red.chars().count() <= max_chars {
        return f(red);
    }
    let mut cut: String = red.chars().take(max_chars).collect();
    cut.push_str(TRUNCATED);
    f(&cut)
}

/// A text field as it is recorded: redacted, then capped.
#[cfg(test)]
pub(crate) fn field(text: &str, max_chars: usize) -> String {
    with_field(text, max_chars, str::to_owned)
}
