//! The results a client gets when toolgate refuses a call: ordinary `tools/call` results with `isError: true`,
//! a readable text, and `structuredContent` in the Contract V1 shape (`outcome`, `error {code, message,
//! retryable}`, and the policy decision with its rule id and reason code), so agents and people can both see why.

use policy::Decision;
use serde_json::{json, Value};

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
