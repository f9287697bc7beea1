//! What a command hook reads on stdin and answers on stdout, as serde types. The field order is the format
//! hooks have always been given (a hook may compare or hash its input), so the structs keep it; the tests in
//! `hooks/tests.rs` pin the bytes. This module only shapes data: what an answer does to a call is `hooks.rs`'s.

use super::{HookCall, HookOutcome};
use policy::Effect;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// When a hook runs, as its input's `event` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Event {
    Pre,
    Post,
}

/// One call as a hook reads it.
#[derive(Serialize)]
pub(crate) struct Input<'a> {
    trace_id: &'a str,
    server: &'a str,
    tool: &'a str,
    exposed: &'a str,
    operation: &'a str,
    profile: &'a str,
    policy: Policy<'a>,
    arguments_bytes: u64,
    arguments_sha256: &'a str,
    /// Only for hooks that asked to see the (redacted) arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<Event>,
    /// After the call: how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'a HookOutcome>,
}

/// The policy's decision, which a pre-hook may tighten.
#[derive(Serialize)]
struct Policy<'a> {
    effect: Effect,
    rule_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_at: Option<&'a str>,
    reason: &'a str,
}

impl<'a> Input<'a> {
    /// The call alone, as embedders see it through `HookCall::to_json`.
    pub(crate) fn of(call: &'a HookCall) -> Self {
        Self {
            trace_id: &call.trace_id,
            server: &call.server,
            tool: &call.tool,
            exposed: &call.exposed,
            operation: &call.operation,
            profile: &call.profile,
            policy: Policy {
                effect: call.effect,
                rule_id: call.rule_id.as_deref(),
                rule_at: call.rule_at.as_deref(),
                reason: &call.reason,
            },
            arguments_bytes: call.arguments_bytes,
            arguments_sha256: &call.arguments_sha256,
            arguments: call.arguments.as_ref(),
            event: None,
            outcome: None,
        }
    }

    /// What a command hook is given at `event`.
    pub(crate) fn at(call: &'a HookCall, event: Event, outcome: Option<&'a HookOutcome>) -> Self {
        Self {
            event: Some(event),
            outcome,
            ..Self::of(call)
        }
    }
}

/// A pre-hook's answer on stdout: `{"decision": "allow"|"deny"|"ask", "reason": "..."}`. The decision is read
/// as text so an unknown one can be named in the refusal.
#[derive(Deserialize)]
pub(crate) struct Answer {
    #[serde(default)]
    pub decision: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}
