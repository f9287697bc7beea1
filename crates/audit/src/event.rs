//! Audit events: what a caller reports, and the bounded, redacted record that is written.
//!
//! Arguments and results enter only as `Digest`s (size + SHA-256), computed from the raw
//! values at the call site; the event type has no field that could hold the raw value.
//! Every text field is redacted and capped when the record is built. This module does not
//! write files or chain hashes (see `log` and `chain`).

use jsonrpc::{canonical_json, sha256_hex};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(test)]
use crate::time::rfc3339;

/// Longest text field, in characters, after redaction.
pub const MAX_FIELD_CHARS: usize = 256;
/// Most affected resources listed per event; the rest are counted, not listed.
pub const MAX_RESOURCES: usize = 16;
/// Longest resource entry, in characters, after redaction.
pub const MAX_RESOURCE_CHARS: usize = 512;
pub(crate) use crate::print::RECORD_VERSION;
#[cfg(test)]
use crate::print::{field, TRUNCATED};

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
    /// The names of the upstream credentials the call was sent with (never their values); absent when none.
    pub credentials: Vec<String>,
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

    /// The record body as a JSON object: the reference `print_entries` is checked against.
    #[cfg(test)]
    pub(crate) fn to_record(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
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
        if !self.credentials.is_empty() {
            let names: Vec<Value> = self
                .credentials
                .iter()
                .map(|c| Value::String(field(c, MAX_FIELD_CHARS)))
                .collect();
            m.insert("credentials".into(), Value::Array(names));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::{Entries, MEMO_ENTRIES, MEMO_TEXT_BYTES};
    use crate::redact::redact;
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
            assert_eq!(crate::redact_remembered(secret), redact(secret));
        }
        for i in 0..(MEMO_ENTRIES * 2) {
            let text = format!("ghp_{i:0>36}");
            assert_eq!(field(&text, MAX_FIELD_CHARS), redact(&text), "{text}");
        }
        let long = format!("{} password=hunter2", "a".repeat(MEMO_TEXT_BYTES));
        assert!(!field(&long, 10_000).contains("hunter2"));
    }

    fn sealed_both_ways(
        e: &AuditEvent,
        seq: u64,
        prev: &str,
    ) -> ((String, String), (String, String)) {
        let mut entries = Entries::default();
        // Printed twice into the same buffers, as the writer reuses them: nothing of the first stays.
        e.print_entries(seq.wrapping_add(1), "stale", &mut entries);
        e.print_entries(seq, prev, &mut entries);
        let mut record = e.to_record();
        record.insert("seq".into(), seq.into());
        record.insert("prev".into(), prev.into());
        let mut line = String::new();
        let hash = crate::chain::seal_printed(&entries, &mut line);
        ((line, hash), crate::chain::seal(record))
    }

    proptest::proptest! {
        /// The record printed field by field is byte for byte the canonical record: the chain of a log written
        /// before the change verifies after it, and the other way round.
        #[test]
        fn entries_seal_to_the_canonical_record(
            kind in 0..4u8,
            time_ms in proptest::prelude::any::<i64>(),
            texts in proptest::collection::vec("(\\PC|[\"\\\\\u{0}-\u{1f}\u{7f}é€😀]){0,300}", 5),
            options in proptest::collection::vec(proptest::option::of("\\PC{0,40}|token=[a-z0-9]{20}"), 9),
            resources in proptest::collection::vec("\\PC{0,600}|https://x.test/\\?key=[a-z]{12}", 0..20),
            credentials in proptest::collection::vec("\\PC{0,80}", 0..3),
            numbers in proptest::collection::vec(proptest::option::of(proptest::prelude::any::<u64>()), 2),
            digests in proptest::collection::vec(proptest::option::of(".{0,8}"), 2),
            seq in proptest::prelude::any::<u64>(),
            prev in "[0-9a-f]{64}|GENESIS",
        ) {
            let kinds = [EventKind::Decision, EventKind::Approval, EventKind::Execution, EventKind::Admin];
            let mut e = AuditEvent::new(kinds[usize::from(kind)], time_ms, &texts[0]);
            e.profile = texts[1].clone();
            e.server = texts[2].clone();
            e.tool = texts[3].clone();
            e.operation = texts[4].clone();
            let [decision, rule_id, rule_at, reason_code, outcome, request_id, parent, actor, principal] =
                <[Option<String>; 9]>::try_from(options).unwrap();
            (e.decision, e.rule_id, e.rule_at, e.reason_code, e.outcome) =
                (decision, rule_id, rule_at, reason_code, outcome);
            (e.request_id, e.parent_trace_id, e.actor, e.principal) = (request_id, parent, actor, principal);
            e.resources = resources;
            e.credentials = credentials;
            (e.duration_ms, e.wait_ms) = (numbers[0], numbers[1]);
            e.arguments = digests[0].as_deref().map(|t| Digest::of_bytes(t.as_bytes()));
            e.result = digests[1].as_deref().map(|t| Digest::of_json(&json!({"t": t})));
            let (fast, reference) = sealed_both_ways(&e, seq, &prev);
            proptest::prop_assert_eq!(fast, reference);
        }
    }

    #[test]
    fn digest_ignores_key_order() {
        assert_eq!(
            Digest::of_json(&json!({"a": 1, "b": 2})),
            Digest::of_json(&json!({"b": 2, "a": 1}))
        );
    }
}
