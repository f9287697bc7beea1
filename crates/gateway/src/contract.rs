//! Contract V1: the results a client gets when toolgate does not simply forward a call — refusals, approval
//! handles and approval outcomes. Each is an ordinary `tools/call` result with a readable text and
//! `structuredContent` carrying `outcome`, `trace_id`, `approval {request_id, status, expires_at, resume_tool}`
//! and `error {code, message, retryable}`, so agents and people can both see what happened and what to do.
//! The shapes are pinned by a contract fixture in the tests; change them only with a new contract version.

use policy::Decision;
use serde_json::{json, Value};
use store::ApprovalHandle;

pub const CONTRACT_VERSION: &str = "1";
pub const RESUME_TOOL: &str = "toolgate_resume";
pub const STATUS_TOOL: &str = "toolgate_request_status";
pub const CAPABILITIES_TOOL: &str = "toolgate_capabilities";

/// Every outcome the contract knows.
pub const OUTCOMES: &[&str] = &[
    "APPROVAL_REQUIRED",
    "APPROVAL_PENDING",
    "APPROVAL_APPROVED",
    "APPROVAL_REJECTED",
    "APPROVAL_EXPIRED",
    "APPROVAL_CONSUMED",
    "SUCCEEDED",
    "COMMAND_FAILED",
    "TIMED_OUT",
    "CONFLICT",
    "REFUSED",
    "FAILED",
];

/// The agent-safe view of an approval request: no snapshot, no approver.
pub fn approval(handle: &ApprovalHandle) -> Value {
    json!({
        "request_id": handle.request_id,
        "status": handle.status.as_str(),
        "expires_at": handle.expires_at.to_rfc3339(),
        "resume_tool": RESUME_TOOL,
    })
}

/// An outcome about an approval request. `error` is set for outcomes that did not run the call.
pub fn approval_outcome(
    outcome: &str,
    trace_id: &str,
    handle: &ApprovalHandle,
    message: String,
    error: bool,
) -> Value {
    let mut structured =
        json!({"outcome": outcome, "trace_id": trace_id, "approval": approval(handle)});
    if error {
        structured["error"] =
            json!({"code": outcome, "message": message, "retryable": retryable(outcome)});
    }
    let is_error = !matches!(
        outcome,
        "APPROVAL_REQUIRED" | "APPROVAL_PENDING" | "APPROVAL_APPROVED"
    );
    json!({"content": [{"type": "text", "text": message}], "isError": is_error, "structuredContent": structured})
}

/// Whether asking again later can succeed.
fn retryable(outcome: &str) -> bool {
    matches!(
        outcome,
        "APPROVAL_REQUIRED" | "APPROVAL_PENDING" | "APPROVAL_APPROVED"
    )
}

/// A refusal that is not about one approval request (unknown id, store full, definition changed).
pub fn refused(code: &str, message: String, trace_id: Option<&str>) -> Value {
    let mut v = result(code, message, None);
    if let Some(t) = trace_id {
        v["structuredContent"]["trace_id"] = json!(t);
    }
    v
}

fn result(code: &str, message: String, decision: Option<&Decision>) -> Value {
    let mut structured = json!({
        "outcome": "REFUSED",
        "error": {"code": code, "message": message, "retryable": false},
    });
    if let Some(d) = decision {
        structured["decision"] = json!({
            "effect": d.effect, "reason": d.reason.as_str(), "rule_id": d.rule_id, "operation": d.operation,
        });
    }
    json!({"content": [{"type": "text", "text": message}], "isError": true, "structuredContent": structured})
}

fn rule(d: &Decision) -> String {
    match &d.rule_id {
        Some(id) => format!("rule {id} ({})", d.reason.as_str()),
        None => d.reason.as_str().to_owned(),
    }
}

/// A deny decision.
pub fn denied(d: &Decision) -> Value {
    let mut message = format!("toolgate denied this call: {}", rule(d));
    if let Some(why) = &d.unknown {
        message.push_str(&format!(
            "; the call could not be classified safely ({why:?})"
        ));
    }
    result(d.reason.as_str(), message, Some(d))
}

/// An ask decision with no way to reach a human: fail closed, and say what would make it pass.
pub fn no_approval_channel(d: &Decision) -> Value {
    let message = format!(
        "this call needs a human's approval ({}), and no approval channel is available, so toolgate refused it; \
         an allow rule in the policy would let it through",
        rule(d)
    );
    result("APPROVAL_CHANNEL_MISSING", message, Some(d))
}

/// Arguments that do not match the tool's input schema: an adapter must never guess at a path hidden in an
/// unexpected shape.
pub fn invalid_arguments(why: &str) -> Value {
    result(
        "INVALID_ARGUMENTS",
        format!("toolgate refused this call: {why}"),
        None,
    )
}

/// The contract's own spelling of `outcome` (so reports hold only known tokens).
pub fn outcome_name(outcome: &str) -> &'static str {
    OUTCOMES
        .iter()
        .find(|o| **o == outcome)
        .copied()
        .unwrap_or("FAILED")
}

/// A tool whose definition changed since it was pinned and awaits review.
pub fn quarantined(tool: &str) -> Value {
    result(
        "TOOL_QUARANTINED",
        format!(
            "the definition of {tool} changed since it was first seen and is quarantined until a human reviews and \
             accepts it (toolgate pins diff / pins accept)"
        ),
        None,
    )
}

/// A tool whose definition looks poisoned (hidden instructions, invisible characters, a look-alike name).
pub fn flagged(tool: &str, flags: &[String]) -> Value {
    result(
        "TOOL_FLAGGED",
        format!(
            "toolgate blocked {tool}: its definition was flagged ({})",
            flags.join("; ")
        ),
        None,
    )
}

#[cfg(test)]
#[path = "contract_tests.rs"]
mod tests;
