//! What a governed request came to, as types: `CallOutcome` (complete, refused, held, input required — passed
//! through or bridged —, failed, cancelled), the `RefusalCode` of every refusal toolgate writes, and the `CallError` of a request that could
//! not be carried out. Records and hooks read these; only `wire` turns them into protocol bytes.
//!
//! It does not decide anything and does not know the wire shapes (Contract V1, JSON-RPC errors).

use policy::{Decision, ReasonCode};
use serde_json::Value;
use store::ApprovalHandle;

/// Why toolgate refused a request, as the `error.code` of a Contract V1 refusal. `as_str` gives the wire
/// spelling; agents match on it, so each spelling is part of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalCode {
    /// The policy (or a hook, which tightens it) decided: `DENY_RULE`, `DEFAULT_DENY`, `HOOK_DENY`, ….
    Policy(ReasonCode),
    /// Nothing runs while the audit log cannot be written.
    AuditUnavailable,
    /// The request names a tool, prompt or resource no upstream offers.
    UnknownTarget,
    ToolQuarantined,
    ToolFlagged,
    /// The arguments do not match the tool's `inputSchema`.
    InvalidArguments,
    /// One of toolgate's own tools was asked to reach outside the workspace.
    PathOutsideWorkspace,
    /// An ask with no store to hold the request in.
    ApprovalChannelMissing,
    ApprovalStoreRefused,
    ApprovalCancelled,
    RequestTampered,
    RequestNotFound,
    /// `toolgate_resume` named a held prompt or resource read.
    NotAToolCall,
    /// The definition changed since the call was approved.
    Conflict,
    /// toolgate could not carry the request out (an unreadable approved command, a missing executor).
    Failed,
    /// A generic refusal of toolgate's own (a command that cannot be resolved before approval).
    Refused,
    /// A bound of toolgate's was reached (an identity's share, or the ceiling over every identity); the message
    /// names the bound and what frees it.
    LimitReached,
    /// A rate limit's bucket has no token left; `Refusal::retry_after_ms` says when one is there.
    RateLimited,
    /// The server needs a credential toolgate holds, and it is granted only to other callers (`credentials`).
    CredentialNotGranted,
}

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::Policy(reason) => reason.as_str(),
            RefusalCode::AuditUnavailable => "AUDIT_UNAVAILABLE",
            RefusalCode::UnknownTarget => "UNKNOWN_TARGET",
            RefusalCode::ToolQuarantined => "TOOL_QUARANTINED",
            RefusalCode::ToolFlagged => "TOOL_FLAGGED",
            RefusalCode::InvalidArguments => "INVALID_ARGUMENTS",
            RefusalCode::PathOutsideWorkspace => "PATH_OUTSIDE_WORKSPACE",
            RefusalCode::ApprovalChannelMissing => "APPROVAL_CHANNEL_MISSING",
            RefusalCode::ApprovalStoreRefused => "APPROVAL_STORE_REFUSED",
            RefusalCode::ApprovalCancelled => "APPROVAL_CANCELLED",
            RefusalCode::RequestTampered => "REQUEST_TAMPERED",
            RefusalCode::RequestNotFound => "REQUEST_NOT_FOUND",
            RefusalCode::NotAToolCall => "NOT_A_TOOL_CALL",
            RefusalCode::Conflict => "CONFLICT",
            RefusalCode::Failed => "FAILED",
            RefusalCode::Refused => "REFUSED",
            RefusalCode::LimitReached => "LIMIT_REACHED",
            RefusalCode::RateLimited => "RATE_LIMITED",
            RefusalCode::CredentialNotGranted => "CREDENTIAL_NOT_GRANTED",
        }
    }
}

/// A refusal: what the agent is told, and the decision behind it when the policy or a hook made one.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub code: RefusalCode,
    pub message: String,
    pub decision: Option<Decision>,
    /// Set when the refusal is about a traced request the agent may ask about.
    pub trace_id: Option<String>,
    /// When asking again can succeed, in milliseconds from now (a rate limit's refill). 32 bits, so a refusal
    /// stays as small as it was (a day, the longest refill period, is far below the bound).
    pub retry_after_ms: Option<std::num::NonZeroU32>,
}

impl Refusal {
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            decision: None,
            trace_id: None,
            retry_after_ms: None,
        }
    }

    /// Asking again can succeed in `ms` milliseconds (at least 1, at most `u32::MAX`).
    pub fn retry_after(mut self, ms: u64) -> Self {
        let ms = u32::try_from(ms).unwrap_or(u32::MAX).max(1);
        self.retry_after_ms = std::num::NonZeroU32::new(ms);
        self
    }

    pub fn with_trace(mut self, trace_id: &str) -> Self {
        self.trace_id = Some(trace_id.to_owned());
        self
    }

    pub fn with_decision(mut self, decision: Decision) -> Self {
        self.decision = Some(decision);
        self
    }

    /// A deny decision of the policy.
    pub fn denied(d: &Decision) -> Self {
        let mut message = format!("toolgate denied this call: {}", rule(d));
        if let Some(why) = &d.unknown {
            message.push_str(&format!(
                "; the call could not be classified safely ({why:?})"
            ));
        }
        Self::new(RefusalCode::Policy(d.reason), message).with_decision(d.clone())
    }

    /// An ask decision with no way to reach a human: fail closed, and say what would make it pass.
    pub fn no_approval_channel(d: &Decision) -> Self {
        let message = format!(
            "this call needs a human's approval ({}), and no approval channel is available, so toolgate refused \
             it; an allow rule in the policy would let it through",
            rule(d)
        );
        Self::new(RefusalCode::ApprovalChannelMissing, message).with_decision(d.clone())
    }

    /// Arguments that do not match the tool's input schema: an adapter must never guess at a path hidden in an
    /// unexpected shape.
    pub fn invalid_arguments(why: &str) -> Self {
        Self::new(
            RefusalCode::InvalidArguments,
            format!("toolgate refused this call: {why}"),
        )
    }

    /// A tool held for review: `new` when `server` did not offer it when it was first listed (nothing of it was
    /// ever accepted), else its definition changed since it was accepted. Both are `TOOL_QUARANTINED`; the
    /// message says which, and the command that shows it.
    pub fn quarantined(tool: &str, server: &str, new: bool) -> Self {
        let message = if new {
            format!(
                "{tool} is new: {server} did not offer it when toolgate first listed {server}, so it is held until \
                 a human reviews and accepts it (toolgate pins diff {server} / pins accept {server})"
            )
        } else {
            format!(
                "the definition of {tool} changed since it was accepted and is quarantined until a human reviews \
                 and accepts it (toolgate pins diff {server} / pins accept {server})"
            )
        };
        Self::new(RefusalCode::ToolQuarantined, message)
    }

    /// A tool whose definition looks poisoned (hidden instructions, invisible characters, a look-alike name).
    pub fn flagged(tool: &str, flags: &[String]) -> Self {
        Self::new(
            RefusalCode::ToolFlagged,
            format!(
                "toolgate blocked {tool}: its definition was flagged ({})",
                flags.join("; ")
            ),
        )
    }
}

/// The rule as a person finds it in their file, `rule Read(**/.env) at toolgate.json:28 (DENY_RULE)`, as
/// `policy explain` names it; only the reason when no rule decided.
fn rule(d: &Decision) -> String {
    match d.rule() {
        Some(rule) => format!("rule {rule} ({})", d.reason.as_str()),
        None => d.reason.as_str().to_owned(),
    }
}

/// Where an approval request stands, as the contract names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalState {
    /// Just created: the wait ran out before a human decided.
    Required,
    Pending,
    Approved,
    Rejected,
    Expired,
    Consumed,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Required => "APPROVAL_REQUIRED",
            ApprovalState::Pending => "APPROVAL_PENDING",
            ApprovalState::Approved => "APPROVAL_APPROVED",
            ApprovalState::Rejected => "APPROVAL_REJECTED",
            ApprovalState::Expired => "APPROVAL_EXPIRED",
            ApprovalState::Consumed => "APPROVAL_CONSUMED",
        }
    }

    /// Whether this state means the request will not run (an error result).
    pub fn is_final_refusal(self) -> bool {
        matches!(
            self,
            ApprovalState::Rejected | ApprovalState::Expired | ApprovalState::Consumed
        )
    }
}

/// A request held for (or answered about) a human's approval: the handle the agent resumes or asks with.
#[derive(Clone, Debug)]
pub struct HeldCall {
    pub state: ApprovalState,
    pub trace_id: String,
    pub handle: ApprovalHandle,
    pub message: String,
    /// The tool that resumes it (`own::resume_tool` of the held call).
    pub resume: crate::own::Resumer,
}

/// Why a request could not be carried out (not a refusal: nothing decided against it).
#[derive(Debug)]
pub enum CallError {
    /// The request itself is malformed or names nothing toolgate can route (a JSON-RPC invalid-params error).
    BadRequest(String),
    /// The upstream failed it: unavailable, timed out, too large, or answered with a JSON-RPC error.
    Upstream(upstream::CallError),
}

/// What a completed request's result says about itself, read once where the result is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    Succeeded,
    /// A result with `isError`, or a built-in tool's own failure outcome (`COMMAND_FAILED`, `TIMED_OUT`, …).
    Failed(&'static str),
}

/// How a governed request ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// The owner answered (an upstream, a built-in tool, an intrinsic): the result goes to the client as it is.
    Complete(Value, Completion),
    Refused(Refusal),
    /// Held for a human, or an answer about a held request.
    Held(HeldCall),
    /// The request needs more from the client before it can go on: a modern-era multi round-trip result
    /// (`resultType: "input_required"`), relayed as the upstream wrote it.
    InputRequired(Value),
    /// The upstream asked the client something mid-call and the call waits for the answers in toolgate's bridge
    /// (`bridge`): the `input_required` result the client gets now, and the request state its retry must carry.
    Bridged {
        result: Value,
        state: String,
    },
    Failed(CallError),
    /// The client cancelled: no response is sent.
    Cancelled,
}

impl CallOutcome {
    /// An owner's answer, failed when it says `isError`. Only that flag is read: an upstream's own
    /// `structuredContent` cannot claim a contract outcome (`APPROVAL_REQUIRED`, …) in the records.
    pub fn complete(result: Value) -> Self {
        let completion = match result.get("isError") {
            Some(Value::Bool(true)) => Completion::Failed("FAILED"),
            _ => Completion::Succeeded,
        };
        CallOutcome::Complete(result, completion)
    }

    /// The outcome name records, reports and post-hooks carry.
    pub fn name(&self) -> &'static str {
        match self {
            CallOutcome::Complete(_, Completion::Succeeded) => store::OUTCOME_SUCCEEDED,
            CallOutcome::Complete(_, Completion::Failed(o)) => o,
            // Refused after the policy allowed it, for a reason of its own: the records say which.
            CallOutcome::Refused(r) => match r.code {
                RefusalCode::RateLimited | RefusalCode::CredentialNotGranted => r.code.as_str(),
                _ => "REFUSED",
            },
            CallOutcome::Held(h) => h.state.as_str(),
            CallOutcome::InputRequired(_) | CallOutcome::Bridged { .. } => "INPUT_REQUIRED",
            CallOutcome::Failed(_) => "FAILED",
            CallOutcome::Cancelled => "CANCELLED",
        }
    }

    /// The result the client got, when it is a result (for the records' size and digest).
    pub fn result(&self) -> Option<&Value> {
        match self {
            CallOutcome::Complete(v, _)
            | CallOutcome::InputRequired(v)
            | CallOutcome::Bridged { result: v, .. } => Some(v),
            _ => None,
        }
    }

    /// An upstream's answer: its failure is typed; a cancellation is `Cancelled`.
    pub fn from_upstream(answer: Result<Value, upstream::CallError>) -> Self {
        match answer {
            Ok(v) if v.get("resultType").and_then(Value::as_str) == Some("input_required") => {
                CallOutcome::InputRequired(v)
            }
            Ok(v) => CallOutcome::complete(v),
            Err(upstream::CallError::Cancelled) => CallOutcome::Cancelled,
            Err(e) => CallOutcome::Failed(CallError::Upstream(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_result_cannot_claim_a_contract_outcome_in_records() {
        let spoof = json!({"content": [], "structuredContent": {"outcome": "APPROVAL_REQUIRED"}});
        assert_eq!(CallOutcome::complete(spoof).name(), "SUCCEEDED");
        let failed =
            json!({"content": [], "isError": true, "structuredContent": {"outcome": "SUCCEEDED"}});
        assert_eq!(CallOutcome::complete(failed).name(), "FAILED");
    }

    #[test]
    fn refusal_codes_keep_their_wire_spelling() {
        for (code, wire) in [
            (RefusalCode::Policy(ReasonCode::HookDeny), "HOOK_DENY"),
            (RefusalCode::AuditUnavailable, "AUDIT_UNAVAILABLE"),
            (
                RefusalCode::ApprovalChannelMissing,
                "APPROVAL_CHANNEL_MISSING",
            ),
            (RefusalCode::NotAToolCall, "NOT_A_TOOL_CALL"),
            (RefusalCode::PathOutsideWorkspace, "PATH_OUTSIDE_WORKSPACE"),
            (RefusalCode::RateLimited, "RATE_LIMITED"),
        ] {
            assert_eq!(code.as_str(), wire);
        }
    }
}
