//! What the gateway writes down about each call: audit events (decision, approval transition, execution) and a
//! metadata-only reporting event. Arguments and results enter only as size and SHA-256; resources only as the
//! audit crate redacts them. Writing never fails a call.

use crate::approval::Snapshot;
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

/// One call as the gateway saw it, for the audit log and the report.
pub(crate) struct CallRecord<'a> {
    pub trace_id: &'a str,
    pub profile: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub decision: &'a Decision,
    /// Canonical paths, programs and hosts the call touches.
    pub resources: Vec<String>,
}

impl CallRecord<'_> {
    fn base(&self, kind: EventKind) -> AuditEvent {
        let mut e = AuditEvent::new(kind, now_ms(), self.trace_id).with_arguments(self.arguments);
        e.profile = self.profile.to_owned();
        e.server = self.server.to_owned();
        e.tool = self.tool.to_owned();
        e.operation = self.decision.operation.to_string();
        e.resources = self.resources.clone();
        e.decision = Some(format!("{:?}", self.decision.effect).to_lowercase());
        e.rule_id = self.decision.rule_id.clone();
        e.reason_code = Some(self.decision.reason.as_str().to_owned());
        e
    }

    /// The policy decision, before anything runs.
    pub fn decided(&self, state: &State) {
        state.audit(&self.base(EventKind::Decision));
    }

    /// The outcome: audit execution event plus reporting event. `result` is what the client got.
    pub fn finished(&self, state: &State, outcome: &str, result: Option<&Value>, took: Duration) {
        let mut e = self.base(EventKind::Execution);
        e.outcome = Some(outcome.to_owned());
        e.duration_ms = Some(took.as_millis() as u64);
        if let Some(r) = result {
            e = e.with_result(r);
        }
        state.audit(&e);
        let report = ReportEvent {
            time: Timestamp::now(),
            trace_id: self.trace_id.to_owned(),
            profile: self.profile.to_owned(),
            server: self.server.to_owned(),
            tool: self.tool.to_owned(),
            operation: self.decision.operation.to_string(),
            decision: effect(self.decision.effect),
            reason_code: self.decision.reason.as_str().to_owned(),
            outcome: outcome.to_owned(),
            duration_ms: Some(took.as_millis() as u64),
            error_class: (outcome != store::OUTCOME_SUCCEEDED).then(|| outcome.to_owned()),
        };
        state.report(report);
    }
}

/// The outcome name of a forwarded call's answer.
pub(crate) fn outcome_of(answer: &Option<Result<Value, Value>>) -> &'static str {
    match answer {
        None => "CANCELLED",
        Some(Err(_)) => "FAILED",
        Some(Ok(r)) => match r
            .pointer("/structuredContent/outcome")
            .and_then(Value::as_str)
        {
            Some(o) if crate::contract::OUTCOMES.contains(&o) => crate::contract::outcome_name(o),
            _ if r.get("isError") == Some(&Value::Bool(true)) => "FAILED",
            _ => store::OUTCOME_SUCCEEDED,
        },
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
