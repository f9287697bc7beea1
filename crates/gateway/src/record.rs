//! What the gateway writes down about each call: audit events (decision, approval transition, execution) and a
//! metadata-only reporting event. Arguments and results enter only as size and SHA-256; resources only as the
//! audit crate redacts them. Writing never fails a call.

use crate::outcome::RefusalCode;
use crate::snapshot::Snapshot;
use crate::state::State;
use audit::{AuditEvent, EventKind};
use policy::{Decision, Effect};
use serde_json::Value;
use std::time::Duration;
use store::{ReportEvent, Timestamp};

fn now_ms() -> i64 {
    Timestamp::now().as_millis()
}

fn effect(e: Effect) -> store::Decision {
    match e {
        Effect::Allow => store::Decision::Allow,
        Effect::Ask => store::Decision::Ask,
        Effect::Deny => store::Decision::Deny,
    }
}

/// The decision a record carries: the policy's (or a hook's, which replaces it), or toolgate's own refusal of
/// a request that never reached the policy (an unknown tool, a quarantined or flagged definition, arguments
/// that fail the schema), which is a deny with the refusal's code as its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordDecision {
    pub effect: Effect,
    pub reason: String,
    pub rule_id: Option<String>,
    /// Where the rule was written in the user's file (`toolgate.json:28`), when known.
    pub rule_at: Option<String>,
    pub operation: String,
}

impl RecordDecision {
    pub fn of(d: &Decision) -> Self {
        Self {
            effect: d.effect,
            reason: d.reason.as_str().to_owned(),
            rule_id: d.rule_id.clone(),
            rule_at: d.rule_at.clone(),
            operation: d.operation.to_string(),
        }
    }

    /// The rule as a person finds it: `Read(**/.env) at toolgate.json:28`, or its name alone.
    pub fn rule(&self) -> Option<String> {
        let id = self.rule_id.as_deref()?;
        Some(policy::rule_label(id, self.rule_at.as_deref()))
    }

    /// A refusal made before (or without) a policy decision.
    pub fn refused(code: RefusalCode) -> Self {
        Self {
            effect: Effect::Deny,
            reason: code.as_str().to_owned(),
            rule_id: None,
            rule_at: None,
            operation: policy::Operation::Unknown.to_string(),
        }
    }

    /// The decision stored with a held request's snapshot, for the records of its resumed run.
    pub fn from_snapshot(stored: &Value) -> Option<Self> {
        let d = crate::snapshot::stored_decision(stored)?;
        Some(Self {
            effect: d.effect,
            reason: d.reason,
            rule_id: d.rule_id,
            rule_at: d.rule_at,
            operation: d.operation,
        })
    }
}

/// One request as the gateway saw it, for the audit log and the report.
pub(crate) struct CallRecord {
    pub trace_id: String,
    pub profile: String,
    /// Who the front end authenticated as the requester; `None` on stdio.
    pub principal: Option<String>,
    pub server: String,
    /// The tool's or prompt's upstream name, or the resource URI.
    pub tool: String,
    /// Size and SHA-256 of the arguments, taken once for every record of the call (the arguments themselves are
    /// never kept).
    pub arguments: audit::Digest,
    pub decision: RecordDecision,
    /// Canonical paths, programs and hosts the call touches.
    pub resources: Vec<String>,
    /// The approval request a resumed call ran under.
    pub request_id: Option<String>,
    /// For a call a code-mode program made: its run's trace id.
    pub parent_trace_id: Option<String>,
    /// The names of the upstream credentials the call goes with (`credentials`).
    pub credentials: Vec<String>,
}

impl CallRecord {
    fn base(&self, kind: EventKind) -> AuditEvent {
        let mut e = AuditEvent::new(kind, now_ms(), &self.trace_id);
        e.arguments = Some(self.arguments.clone());
        e.profile = self.profile.clone();
        e.principal = self.principal.clone();
        e.server = self.server.clone();
        e.tool = self.tool.clone();
        e.operation = self.decision.operation.clone();
        e.resources = self.resources.clone();
        e.decision = Some(self.decision.effect.as_str().to_owned());
        e.rule_id = self.decision.rule_id.clone();
        e.rule_at = self.decision.rule_at.clone();
        e.reason_code = Some(self.decision.reason.clone());
        e.request_id = self.request_id.clone();
        e.parent_trace_id = self.parent_trace_id.clone();
        e.credentials = self.credentials.clone();
        e
    }

    /// The decision, before anything runs.
    pub fn decided(&self, state: &State) {
        state.audit(self.base(EventKind::Decision));
    }

    /// The outcome: audit execution event plus reporting event. `result` is what the client got; `took` is the
    /// whole time, `waited` the part of it spent waiting for a human, when it waited for one (reported apart).
    pub fn finished(
        &self,
        state: &State,
        outcome: &str,
        result: Option<&Value>,
        took: Duration,
        waited: Option<Duration>,
    ) {
        let mut e = self.base(EventKind::Execution);
        e.outcome = Some(outcome.to_owned());
        e.duration_ms = Some(took.as_millis() as u64);
        e.wait_ms = waited.map(|w| w.as_millis() as u64);
        if let Some(r) = result {
            e = e.with_result(r);
        }
        state.audit(e);
        let report = ReportEvent {
            time: Timestamp::now(),
            trace_id: self.trace_id.clone(),
            profile: self.profile.clone(),
            principal: self.principal.clone(),
            server: self.server.clone(),
            // A resource read's "tool" is its URI, which can carry credentials; the audit record redacts it too.
            tool: audit::redact_remembered(&self.tool),
            operation: self.decision.operation.clone(),
            decision: effect(self.decision.effect),
            reason_code: self.decision.reason.clone(),
            rule: self.decision.rule(),
            outcome: outcome.to_owned(),
            duration_ms: Some(took.as_millis() as u64),
            wait_ms: waited.map(|w| w.as_millis() as u64),
            error_class: (outcome != store::OUTCOME_SUCCEEDED).then(|| outcome.to_owned()),
        };
        state.report(report);
    }
}

pub(crate) fn approval_event(
    trace_id: &str,
    request_id: &str,
    status: &str,
    s: &Snapshot,
    d: &Decision,
) -> AuditEvent {
    let mut e =
        AuditEvent::new(EventKind::Approval, now_ms(), trace_id).with_arguments(&s.arguments);
    e.server = s.server.clone();
    e.tool = s.tool.clone();
    e.operation = d.operation.to_string();
    e.request_id = Some(request_id.to_owned());
    e.outcome = Some(status.to_owned());
    e.rule_id = d.rule_id.clone();
    e.rule_at = d.rule_at.clone();
    e.reason_code = Some(d.reason.as_str().to_owned());
    e
}

pub(crate) fn consumed_event(trace_id: &str, request_id: &str, s: &Snapshot) -> AuditEvent {
    let mut e =
        AuditEvent::new(EventKind::Approval, now_ms(), trace_id).with_arguments(&s.arguments);
    e.server = s.server.clone();
    e.tool = s.tool.clone();
    e.request_id = Some(request_id.to_owned());
    e.outcome = Some("CONSUMED".to_owned());
    e
}
