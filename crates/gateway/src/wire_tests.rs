//! The wire form of every `CallOutcome`, for a `tools/call` and for a method without an error shape, in both
//! eras, pinned as reviewed snapshots: a change to what clients receive shows up in review.

use super::*;
use crate::outcome::{ApprovalState, Completion, HeldCall, Refusal};
use policy::{Decision, Effect, Operation, ReasonCode};
use store::{ApprovalHandle, ApprovalStatus, Timestamp};

fn deny() -> Decision {
    Decision {
        effect: Effect::Deny,
        reason: ReasonCode::DenyRule,
        rule_id: Some("deny[0]".to_owned()),
        operation: Operation::FsRead,
        unknown: None,
    }
}

fn held(state: ApprovalState, status: ApprovalStatus) -> CallOutcome {
    CallOutcome::Held(HeldCall {
        state,
        trace_id: "trace-1".to_owned(),
        handle: ApprovalHandle {
            request_id: "req-1".to_owned(),
            status,
            trace_id: "trace-1".to_owned(),
            expires_at: Timestamp::from_millis(1_800_000_000_000),
        },
        message: format!("request req-1: {}", state.as_str()),
        resume: crate::own::Resumer::TOOLGATE,
    })
}

/// Makes one outcome afresh for each form (outcomes are moved into the wire).
type Make = fn() -> CallOutcome;

/// Every outcome kind, by name.
fn outcomes() -> Vec<(&'static str, Make)> {
    vec![
        ("complete", || {
            CallOutcome::Complete(
                json!({"content": [{"type": "text", "text": "hi"}]}),
                Completion::Succeeded,
            )
        }),
        ("complete_error_result", || {
            CallOutcome::complete(
                json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
            )
        }),
        ("refused_by_policy", || {
            CallOutcome::Refused(Refusal::denied(&deny()).with_trace("trace-2"))
        }),
        ("refused_unknown_target", || {
            CallOutcome::Refused(Refusal::new(
                RefusalCode::UnknownTarget,
                "unknown tool: fx__nope",
            ))
        }),
        ("held_approval_required", || {
            held(ApprovalState::Required, ApprovalStatus::Pending)
        }),
        ("held_approval_rejected", || {
            held(ApprovalState::Rejected, ApprovalStatus::Rejected)
        }),
        ("input_required", || {
            CallOutcome::InputRequired(
                json!({"inputRequests": {"a": {"method": "elicitation/create"}}}),
            )
        }),
        ("failed_bad_request", || {
            CallOutcome::Failed(CallError::BadRequest("unknown upstream fx".to_owned()))
        }),
        ("failed_upstream_timeout", || {
            CallOutcome::Failed(CallError::Upstream(upstream::CallError::Timeout {
                server: "fx".to_owned(),
                secs: 30,
            }))
        }),
        ("cancelled", || CallOutcome::Cancelled),
    ]
}

fn shown(reply: Reply) -> Value {
    match reply {
        Reply::Result(v) => json!({"result": v}),
        Reply::Error(e) => json!({"error": e}),
        Reply::Cancelled => json!("no response (cancelled)"),
        Reply::StreamOpen => json!("no response (stream open)"),
    }
}

#[test]
fn every_outcome_has_one_wire_form_per_method_and_era() {
    for (name, make) in outcomes() {
        let mut forms = serde_json::Map::new();
        for (method, shape) in [
            ("tools/call", Shape::ToolResult),
            ("prompts/get", Shape::RpcError),
        ] {
            for (era, modern) in [("legacy", false), ("modern", true)] {
                let reply = for_era(reply(make(), shape, None), method, modern);
                forms.insert(format!("{method} {era}"), shown(reply));
            }
        }
        insta::assert_json_snapshot!(name, Value::Object(forms));
    }
}

#[test]
fn own_results_fit_the_called_tools_output_schema() {
    let tool = json!({"name": "fx__add", "outputSchema": {"type": "object", "required": ["sum"]}});
    let Reply::Result(v) = reply(
        CallOutcome::Refused(Refusal::denied(&deny())),
        Shape::ToolResult,
        Some(&tool),
    ) else {
        panic!("a refused tool call is a result");
    };
    assert!(v.get("structuredContent").is_none(), "{v}");
    assert_eq!(v["_meta"][contract::META_KEY]["error"]["code"], "DENY_RULE");
}
