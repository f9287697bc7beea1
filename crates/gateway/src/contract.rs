//! Contract V1: the results a client gets when toolgate does not simply forward a call — refusals, approval
//! handles and approval outcomes. Each is an ordinary `tools/call` result with a readable text and
//! `structuredContent` carrying `outcome`, `trace_id`, `approval {request_id, status, expires_at, resume_tool}`
//! and `error {code, message, retryable}`, so agents and people can both see what happened and what to do.
//! The shapes are pinned by a contract fixture in the tests; change them only with a new contract version.
//!
//! Where the V1 fields live: always in `_meta["toolgate/contract"]`, which no client validates; and also in
//! `structuredContent` whenever they validate against the answered tool's `outputSchema` — always for toolgate's
//! own tools and for tools without one. Official clients check `structuredContent` against the tool's
//! `outputSchema` (the TypeScript SDK and the Inspector even on `isError` results, the Python SDK on the others),
//! so for a proxied tool whose schema the V1 fields do not fit, the result carries no `structuredContent` and is
//! `isError: true` (an error result needs none in any client); its text still names the request id and reason.

use crate::outcome::{HeldCall, Refusal};
use crate::snapshot::DecisionFields;
use serde::Serialize;
use serde_json::{json, Value};
use store::ApprovalHandle;

pub const CONTRACT_VERSION: &str = "1";
pub const RESUME_TOOL: &str = crate::own::RESUME;
pub const STATUS_TOOL: &str = crate::own::REQUEST_STATUS;
pub const CAPABILITIES_TOOL: &str = crate::own::CAPABILITIES;
/// The `_meta` key that carries the V1 fields on every result toolgate writes itself.
pub const META_KEY: &str = "toolgate/contract";

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
#[derive(Serialize)]
struct Approval<'a> {
    request_id: &'a str,
    status: &'static str,
    expires_at: String,
    /// `toolgate_resume`, or for a call made by a ToolHub name its `*_approved` tool (`own::resume_tool`).
    resume_tool: &'static str,
}

impl<'a> Approval<'a> {
    fn of(handle: &'a ApprovalHandle, resume_tool: &'static str) -> Self {
        Self {
            request_id: &handle.request_id,
            status: handle.status.as_str(),
            expires_at: handle.expires_at.to_rfc3339(),
            resume_tool,
        }
    }
}

/// `error` of the V1 fields: why the call did not run, and whether asking again later can succeed.
#[derive(Serialize)]
struct V1Error<'a> {
    code: &'a str,
    message: &'a str,
    retryable: bool,
    /// When a retry can succeed, in milliseconds (a rate limit's refill).
    #[serde(rename = "retryAfterMs", skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<std::num::NonZeroU32>,
}

/// The V1 fields of an answer about an approval request, in the order they have always been written.
#[derive(Serialize)]
struct ApprovalFields<'a> {
    outcome: &'a str,
    trace_id: &'a str,
    approval: Approval<'a>,
    /// For outcomes that did not run the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<V1Error<'a>>,
}

/// The V1 fields of a refusal, in the order they have always been written.
#[derive(Serialize)]
struct RefusalFields<'a> {
    outcome: &'static str,
    error: V1Error<'a>,
    /// When the policy (or a hook) made the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<DecisionFields>,
    /// When the refusal is about a traced request.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
}

/// Fields of strings, numbers and booleans always serialise; were they not to, the result would carry null.
fn to_value(fields: impl Serialize) -> Value {
    serde_json::to_value(fields).unwrap_or_default()
}

/// An outcome about an approval request. `error` is set for outcomes that did not run the call.
fn approval_outcome(
    outcome: &str,
    trace_id: &str,
    (handle, resume_tool): (&ApprovalHandle, &'static str),
    message: String,
    error: bool,
) -> Value {
    let structured = to_value(ApprovalFields {
        outcome,
        trace_id,
        approval: Approval::of(handle, resume_tool),
        error: error.then(|| V1Error {
            code: outcome,
            message: &message,
            retryable: retryable(outcome),
            retry_after_ms: None,
        }),
    });
    let is_error = !matches!(
        outcome,
        "APPROVAL_REQUIRED" | "APPROVAL_PENDING" | "APPROVAL_APPROVED"
    );
    own_result(message, is_error, structured)
}

/// A result of toolgate's own: the V1 fields both in `structuredContent` and under `_meta[META_KEY]`, which
/// marks the result as toolgate's for [`fit_to_tool`].
fn own_result(message: String, is_error: bool, structured: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": message}],
        "isError": is_error,
        "structuredContent": structured,
        "_meta": {META_KEY: structured},
    })
}

/// Fits a `tools/call` answer to the tool it answers for. A result toolgate did not write itself (no
/// `_meta[META_KEY]`) is returned unchanged. For toolgate's own: the `_meta` copy is refreshed from
/// `structuredContent` (callers may add fields after building it), and when the V1 fields do not validate
/// against the tool's `outputSchema` — or that schema cannot be compiled: fail closed — they leave
/// `structuredContent` and the result becomes an error result, which every official client accepts as it is.
pub fn fit_to_tool(mut result: Value, definition: Option<&Value>) -> Value {
    let Some(structured) = result.get("structuredContent").cloned() else {
        return result;
    };
    let Some(mirror) = result.pointer_mut(&format!("/_meta/{}", META_KEY.replace('/', "~1")))
    else {
        return result;
    };
    *mirror = structured.clone();
    let fits = match definition.and_then(|d| d.get("outputSchema")) {
        None => true,
        Some(schema) => crate::guard::compile(schema).is_ok_and(|v| v.is_valid(&structured)),
    };
    if !fits {
        if let Some(m) = result.as_object_mut() {
            m.remove("structuredContent");
            m.insert("isError".to_owned(), Value::Bool(true));
        }
    }
    result
}

/// Whether asking again later can succeed.
fn retryable(outcome: &str) -> bool {
    matches!(
        outcome,
        "APPROVAL_REQUIRED" | "APPROVAL_PENDING" | "APPROVAL_APPROVED"
    )
}

/// A refusal as its Contract V1 result: `outcome: REFUSED`,
/// `error {code, message, retryable: false}`, the decision when one was made, and the trace id when the refusal
/// is about a traced request.
pub fn refusal(r: &Refusal) -> Value {
    let structured = to_value(RefusalFields {
        outcome: "REFUSED",
        error: V1Error {
            code: r.code.as_str(),
            message: &r.message,
            retryable: r.retry_after_ms.is_some(),
            retry_after_ms: r.retry_after_ms,
        },
        decision: r.decision.as_ref().map(DecisionFields::of),
        trace_id: r.trace_id.as_deref(),
    });
    own_result(r.message.clone(), true, structured)
}

/// A held call (or an answer about one) as its Contract V1 result.
pub fn held(h: &HeldCall) -> Value {
    approval_outcome(
        h.state.as_str(),
        &h.trace_id,
        (&h.handle, h.resume.name()),
        h.message.clone(),
        h.state.is_final_refusal(),
    )
}

/// Adds `fields` to a result toolgate wrote itself, in `structuredContent` and its `_meta` copy alike; a field
/// already there is kept.
pub fn add_fields(result: &mut Value, fields: Vec<(&str, Value)>) {
    let meta = format!("/_meta/{}", META_KEY.replace('/', "~1"));
    for at in ["/structuredContent", meta.as_str()] {
        if let Some(s) = result.pointer_mut(at).and_then(Value::as_object_mut) {
            for (k, v) in &fields {
                s.entry(*k).or_insert_with(|| v.clone());
            }
        }
    }
}

/// The contract's own spelling of `outcome` (so reports hold only known tokens).
pub fn outcome_name(outcome: &str) -> &'static str {
    OUTCOMES
        .iter()
        .find(|o| **o == outcome)
        .copied()
        .unwrap_or("FAILED")
}

#[cfg(test)]
#[path = "contract_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "contract_fit_tests.rs"]
mod fit_tests;
