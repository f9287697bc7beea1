//! toolgate's own approval tools — `toolgate_request_status`, `toolgate_resume`, `toolgate_capabilities` — as
//! clients see them. None of them can approve or reject anything: that is the human's, out of band.

use crate::contract::{CAPABILITIES_TOOL, CONTRACT_VERSION, OUTCOMES, RESUME_TOOL, STATUS_TOOL};
use serde_json::{json, Value};

fn request_id_schema() -> Value {
    json!({"type": "object", "properties": {"request_id": {"type": "string", "minLength": 1, "maxLength": 128}},
           "required": ["request_id"], "additionalProperties": false})
}

fn outcome_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "outcome": {"type": "string", "enum": OUTCOMES},
            "trace_id": {"type": "string"},
            "approval": {"type": "object", "properties": {
                "request_id": {"type": "string"}, "status": {"type": "string"},
                "expires_at": {"type": "string"}, "resume_tool": {"type": "string"}}},
            "error": {"type": "object", "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}, "retryable": {"type": "boolean"}},
                "required": ["code", "message", "retryable"]}
        },
        "required": ["outcome"]
    })
}

/// The approval tools, listed after `toolgate_status`.
pub fn definitions() -> Vec<Value> {
    vec![
        json!({
            "name": STATUS_TOOL,
            "title": "Approval request status",
            "description": "Shows the status of an approval request toolgate created for a call that needs a \
                            human's approval. Read-only.",
            "inputSchema": request_id_schema(),
            "outputSchema": outcome_schema(),
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                            "openWorldHint": false}
        }),
        json!({
            "name": RESUME_TOOL,
            "title": "Resume an approved call",
            "description": "Runs a call that a human approved, exactly as it was approved, once. Before approval it \
                            reports the request's status instead.",
            "inputSchema": request_id_schema(),
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false,
                            "openWorldHint": true}
        }),
        json!({
            "name": CAPABILITIES_TOOL,
            "title": "toolgate capabilities",
            "description": "Describes toolgate's contract: version, approval model, which tools may need approval, \
                            and public limits.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                            "openWorldHint": false}
        }),
    ]
}

/// `toolgate_capabilities`: public facts only — no paths, payloads or secrets.
pub fn capabilities(
    gated: Vec<String>,
    wait_seconds: u64,
    expire_seconds: u64,
    max_message_bytes: usize,
) -> Value {
    let structured = json!({
        "contract_version": CONTRACT_VERSION,
        "package_version": env!("CARGO_PKG_VERSION"),
        "transport": "stdio",
        "approval_model": {
            "channels": ["admin CLI (toolgate approvals)", "watch terminal", "MCP elicitation when the client declares it"],
            "hold_seconds": wait_seconds,
            "expires_after_seconds": expire_seconds,
            "single_use": true,
            "agent_can_approve": false
        },
        "approval_gated_tools": gated,
        "resume_tool": RESUME_TOOL,
        "status_tool": STATUS_TOOL,
        "outcomes": OUTCOMES,
        "limits": {"max_message_bytes": max_message_bytes}
    });
    let text = format!(
        "toolgate contract {CONTRACT_VERSION}: calls a policy marks `ask` wait up to {wait_seconds} s for a human, \
         then return an approval handle; resume with {RESUME_TOOL}."
    );
    json!({"content": [{"type": "text", "text": text}], "structuredContent": structured})
}

pub const PING_TOOL: &str = crate::own::PING;
pub const AUDIT_RECENT_TOOL: &str = crate::own::AUDIT_RECENT;

/// Tools that come with the workspace tools: a liveness check and the recent audit trail.
pub fn workspace_definitions() -> Vec<Value> {
    let read_only = json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false});
    vec![
        json!({
            "name": PING_TOOL,
            "title": "Ping toolgate",
            "description": "Answers pong; starts no process and touches no file.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": read_only
        }),
        json!({
            "name": AUDIT_RECENT_TOOL,
            "title": "Recent audit events",
            "description": "The most recent audit events of this workspace: what was decided and how it ended. \
                            Never arguments, results, paths or secrets.",
            "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 50}},
                            "additionalProperties": false},
            "annotations": read_only
        }),
    ]
}

/// Keys of an audit record an agent may read back: metadata about decisions, nothing it did not already know.
const AGENT_VISIBLE: &[&str] = &[
    "time",
    "kind",
    "trace_id",
    "server",
    "tool",
    "operation",
    "decision",
    "rule_id",
    "reason_code",
    "outcome",
    "request_id",
    "parent_trace_id",
    "duration_ms",
];

pub fn audit_recent(records: Vec<Value>) -> Value {
    let events: Vec<Value> = records
        .into_iter()
        .map(|r| {
            let kept: serde_json::Map<String, Value> = AGENT_VISIBLE
                .iter()
                .filter_map(|k| r.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect();
            Value::Object(kept)
        })
        .collect();
    json!({"content": [{"type": "text", "text": format!("{} recent audit events", events.len())}],
           "structuredContent": {"count": events.len(), "events": events}})
}
