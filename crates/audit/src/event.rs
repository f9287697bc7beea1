//! Audit events: what a caller reports, and the bounded, redacted record that is written.
//!
//! Arguments and results enter only as `Digest`s (size + SHA-256), computed from the raw
//! values at the call site; the event type has no field that could hold the raw value.
//! Every text field is redacted and capped when the record is built. This module does not
//! write files or chain hashes (see `log` and `chain`).

use jsonrpc::{canonical_json, sha256_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::redact::redact;
use crate::time::rfc3339;

/// Longest text field, in characters, after redaction.
pub const MAX_FIELD_CHARS: usize = 256;
/// Most affected resources listed per event; the rest are counted, not listed.
pub const MAX_RESOURCES: usize = 16;
/// Longest resource entry, in characters, after redaction.
pub const MAX_RESOURCE_CHARS: usize = 512;
/// Appended to a value cut at its cap.
const TRUNCATED: &str = "…[truncated]";
/// Layout version of a record.
pub(crate) const RECORD_VERSION: u64 = 1;

/// What an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A policy decision on a call.
    #[default]
    Decision,
    /// An approval request was created, approved, rejected, expired or consumed.
    Approval,
    /// A call executed (or failed to).
    Execution,
    /// A request to the HTTP admin surface (an explanation, a preview, readiness): what was asked, never its
    /// arguments.
    Admin,
}

/// Size and SHA-256 of a payload; the only trace of arguments and results in the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    /// Length in bytes of the hashed form.
    pub bytes: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

impl Digest {
    /// Digest of raw bytes.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self {
            bytes: bytes.len() as u64,
            sha256: sha256_hex(bytes),
        }
    }

    /// Digest of a JSON value in canonical form (sorted keys), so equal arguments hash
    /// equal whatever their key order.
    pub fn of_json(value: &Value) -> Self {
        Self::of_bytes(canonical_json(value).as_bytes())
    }
}

/// One event as reported by the gateway. Build with `AuditEvent::new` and the `with_*`
/// methods; text is redacted and capped when it is recorded, not here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditEvent {
    /// Event kind.
    pub kind: EventKind,
    /// When it happened, Unix milliseconds (the caller's clock).
    pub time_ms: i64,
    /// Lifecycle correlation id.
    pub trace_id: String,
    /// Policy profile in force.
    pub profile: String,
    /// Who the front end authenticated as the caller (`key:ci`, `jwt:<issuer>#<subject>`); absent on stdio.
    pub principal: Option<String>,
    /// Upstream server, or `toolgate` for built-in tools.
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// Normalised operation, e.g. `fs.write`.
    pub operation: String,
    /// Affected resources (paths, URLs, argv); redacted and capped when recorded.
    pub resources: Vec<String>,
    /// Policy decision (`allow`, `ask`, `deny`).
    pub decision: Option<String>,
    /// Id of the rule that decided.
    pub rule_id: Option<String>,
    /// Where that rule was written in the user's policy file (`toolgate.json:28`), when known.
    pub rule_at: Option<String>,
    /// Stable reason code.
    pub reason_code: Option<String>,
    /// Outcome, e.g. `SUCCEEDED`, `APPROVAL_REQUIRED`, `APPROVED`, `CONSUMED`.
    pub outcome: Option<String>,
    /// Approval request id, for approval events and resumed executions.
    pub request_id: Option<String>,
    /// For a call a code-mode program made: the trace id of its run (the `run_code` call).
    pub parent_trace_id: Option<String>,
    /// Who acted, for approval transitions decided by a human (e.g. the operator name).
    pub actor: Option<String>,
    /// Execution time.
    pub duration_ms: Option<u64>,
    /// The part of `duration_ms` the call waited for a human's approval, when it waited for one.
    pub wait_ms: Option<u64>,
    /// Size and hash of the call's arguments.
    pub arguments: Option<Digest>,
    /// Size and hash of the call's result.
    pub result: Option<Digest>,
}

impl AuditEvent {
    /// Starts an event of `kind` at `time_ms` for `trace_id`.
    pub fn new(kind: EventKind, time_ms: i64, trace_id: &str) -> Self {
        Self {
            kind,
            time_ms,
            trace_id: trace_id.to_owned(),
            ..Self::default()
        }
    }

    /// Records the digest of the raw arguments; the arguments themselves are not kept.
    pub fn with_arguments(mut self, arguments: &Value) -> Self {
        self.arguments = Some(Digest::of_json(arguments));
        self
    }

    /// Records the digest of a JSON result; the result itself is not kept.
    pub fn with_result(mut self, result: &Value) -> Self {
        self.result = Some(Digest::of_json(result));
        self
    }

    /// Records the digest of a byte result (e.g. captured output).
    pub fn with_result_bytes(mut self, result: &[u8]) -> Self {
        self.result = Some(Digest::of_bytes(result));
        self
    }

    /// Builds the record body (everything but `seq`, `prev` and `hash`).
    pub(crate) fn to_record(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("v".into(), RECORD_VERSION.into());
        let kind = self.kind;
        m.insert(
            "kind".into(),
            serde_json::to_value(kind).unwrap_or(Value::Null),
        );
        m.insert("time".into(), rfc3339(self.time_ms).into());
        m.insert("time_ms".into(), self.time_ms.into());
        for (key, value) in [
            ("trace_id", &self.trace_id),
            ("profile", &self.profile),
            ("server", &self.server),
            ("tool", &self.tool),
            ("operation", &self.operation),
        ] {
            m.insert(key.into(), field(value, MAX_FIELD_CHARS).into());
        }
        for (key, value) in [
            ("decision", &self.decision),
            ("rule_id", &self.rule_id),
            ("rule_at", &self.rule_at),
            ("reason_code", &self.reason_code),
            ("outcome", &self.outcome),
            ("request_id", &self.request_id),
            ("parent_trace_id", &self.parent_trace_id),
            ("actor", &self.actor),
            ("principal", &self.principal),
        ] {
            if let Some(v) = value {
                m.insert(key.into(), field(v, MAX_FIELD_CHARS).into());
            }
        }
        let listed: Vec<Value> = self
            .resources
            .iter()
            .take(MAX_RESOURCES)
            .map(|r| Value::String(field(r, MAX_RESOURCE_CHARS)))
            .collect();
        m.insert("resources".into(), Value::Array(listed));
        if self.resources.len() > MAX_RESOURCES {
            let more = (self.resources.len() - MAX_RESOURCES) as u64;
            m.insert("resources_omitted".into(), more.into());
        }
        if let Some(d) = self.duration_ms {
            m.insert("duration_ms".into(), d.into());
        }
        if let Some(w) = self.wait_ms {
            m.insert("wait_ms".into(), w.into());
        }
        for (key, digest) in [("arguments", &self.arguments), ("result", &self.result)] {
            if let Some(d) = digest {
                m.insert(key.into(), serde_json::to_value(d).unwrap_or(Value::Null));
            }
        }
        m
    }
}

/// Texts up to this long have their redaction remembered.
const MEMO_TEXT_BYTES: usize = 128;
/// Remembered redactions per thread at most; the memory is forgotten whole when full.
const MEMO_ENTRIES: usize = 1024;

/// `redact(text)`, remembered for short texts. Most fields repeat from record to record (server, tool, operation,
/// profile, decision, rule, outcome) and `redact` is a pure function, so a remembered answer is the same answer
/// for a hash lookup instead of every rule's scan. Bounded: `MEMO_ENTRIES` texts of `MEMO_TEXT_BYTES` per thread.
fn redacted(text: &str) -> String {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static MEMO: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
    }
    if text.len() > MEMO_TEXT_BYTES {
        return redact(text);
    }
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(known) = memo.get(text) {
            return known.clone();
        }
        let red = redact(text);
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(text.to_owned(), red.clone());
        red
    })
}

/// Redacts, then caps: capping first could cut a secret so it is no longer recognised.
fn field(text: &str, max_chars: usize) -> String {
    let red = redacted(text);
    if red.chars().count() <= max_chars {
        return red;
    }
    let mut out: String = red.chars().take(max_chars).collect();
    out.push_str(TRUNCATED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_holds_digests_not_payloads() {
        let args = json!({"path": "notes.txt", "content": "the launch code is 0000"});
        let e = AuditEvent::new(EventKind::Execution, 0, "t1")
            .with_arguments(&args)
            .with_result_bytes(b"written");
        let rec = Value::Object(e.to_record()).to_string();
        assert!(!rec.contains("launch code"));
        assert!(!rec.contains("written\""));
        assert!(rec.contains(&Digest::of_json(&args).sha256));
    }

    #[test]
    fn resources_are_redacted_capped_and_counted() {
        let mut e = AuditEvent::new(EventKind::Decision, 0, "t");
        e.resources = (0..20)
            .map(|i| format!("https://x.test/?token=s{i}"))
            .collect();
        e.resources[0] = "a".repeat(2000);
        let rec = e.to_record();
        let listed = rec["resources"].as_array().unwrap();
        assert_eq!(listed.len(), MAX_RESOURCES);
        assert_eq!(rec["resources_omitted"], 4);
        assert_eq!(
            listed[0].as_str().unwrap().chars().count(),
            MAX_RESOURCE_CHARS + TRUNCATED.chars().count()
        );
        assert_eq!(listed[1], "https://x.test/?token=[REDACTED]");
    }

    /// The remembered redaction is the redaction, the first time and every time after, secrets included.
    #[test]
    fn a_remembered_redaction_still_hides_the_secret() {
        let secret = "https://x.test/?token=s3cr3t";
        for _ in 0..3 {
            assert_eq!(field(secret, MAX_FIELD_CHARS), redact(secret));
            assert!(!field(secret, MAX_FIELD_CHARS).contains("s3cr3t"));
        }
        for i in 0..(MEMO_ENTRIES * 2) {
            let text = format!("ghp_{i:0>36}");
            assert_eq!(field(&text, MAX_FIELD_CHARS), redact(&text), "{text}");
        }
        let long = format!("{} password=hunter2", "a".repeat(MEMO_TEXT_BYTES));
        assert!(!field(&long, 10_000).contains("hunter2"));
    }

    #[test]
    fn digest_ignores_key_order() {
        assert_eq!(
            Digest::of_json(&json!({"a": 1, "b": 2})),
            Digest::of_json(&json!({"b": 2, "a": 1}))
        );
    }
}
