//! ToolHub's surface of toolgate's own tools, served when toolgate runs as `mcp-toolhub`: ToolHub's 14 tools by
//! its names (`own::TOOLHUB`), each one of toolgate's own tools — the workspace tools under their dotted names,
//! `toolhub.*` as toolgate's intrinsics, and each `*_approved` tool a resume bound to its tool — and ToolHub's
//! Contract V1 as its clients read it: `toolhub.capabilities` (contract version 1.0, the initial→resume tool
//! mappings, public limits), `toolhub.request_status` with the request id and a trace id on every answer, and
//! `trace_id` on every answer of an approval-gated tool, its resume included.
//!
//! Nothing here decides, holds or runs a call: the pipeline does, as for every other call. This module only
//! names, describes and completes answers; it reads no state and imports nothing of the gateway's stages.

use crate::contract;
use crate::outcome::{CallOutcome, Completion};
use crate::own::{self, OwnTool};
use serde_json::{json, Value};

/// ToolHub's Contract V1 version, independent of toolgate's own (`contract::CONTRACT_VERSION`).
pub const CONTRACT_VERSION: &str = "1.0";
/// Most events `toolhub.audit_recent` returns.
pub const MAX_AUDIT_EVENTS: u64 = 50;
/// Where a client polls a request.
const STATUS_TOOL: &str = "toolhub.request_status";

/// The public limits `toolhub.capabilities` reports.
pub struct Limits {
    pub max_read_file_bytes: u64,
    pub max_write_bytes: u64,
    pub max_patch_chars: u64,
    pub max_shell_timeout_seconds: u64,
    /// Output kept per stream before the `[toolgate discarded N output bytes]` marker.
    pub output_retained: u64,
    pub approval_expires_seconds: u64,
}

/// The initial tools that ask, by ToolHub name, with the tool each resumes through, in ToolHub's order.
fn approval_operations() -> Vec<(&'static str, &'static str)> {
    let mut pairs: Vec<(&str, &str)> = own::TOOLHUB
        .iter()
        .filter_map(|(name, tool)| {
            let resume = own::resume_tool(own::OWN_SERVER, tool, name);
            (resume != own::RESUME).then_some((*name, resume))
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

fn read_only() -> Value {
    json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
}

fn request_id_input() -> Value {
    json!({"type": "object", "properties": {"request_id": {"type": "string", "minLength": 1, "maxLength": 128}},
           "required": ["request_id"], "additionalProperties": false})
}

fn no_input() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The lifecycle fields every approval-gated answer carries.
fn lifecycle_properties() -> Value {
    json!({
        "outcome": {"type": "string", "enum": contract::OUTCOMES},
        "trace_id": {"type": "string"},
        "approval": {"type": "object", "properties": {
            "request_id": {"type": "string"}, "status": {"type": "string"},
            "expires_at": {"type": "string"}, "resume_tool": {"type": "string"}},
            "required": ["request_id", "status", "expires_at", "resume_tool"]},
        "error": {"type": "object", "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}, "retryable": {"type": "boolean"}},
            "required": ["code", "message", "retryable"]}
    })
}

/// A workspace tool's output schema with the lifecycle fields, `trace_id` required when it asks.
fn gated_output(mut schema: Value) -> Value {
    if let (Some(props), Some(lifecycle)) = (
        schema.get_mut("properties").and_then(Value::as_object_mut),
        lifecycle_properties().as_object(),
    ) {
        for (k, v) in lifecycle {
            props.insert(k.clone(), v.clone());
        }
    }
    schema["required"] = json!(["outcome", "trace_id"]);
    schema
}

/// ToolHub's 14 tools, in its order.
pub fn definitions() -> Vec<Value> {
    let workspace: Vec<Value> = builtin::tools()
        .iter()
        .map(builtin::Tool::definition)
        .collect();
    let of = |tool: &str| workspace.iter().find(|d| d["name"] == tool).cloned();
    own::TOOLHUB
        .iter()
        .filter_map(|(name, tool)| {
            let mut def = match OwnTool::named(tool) {
                OwnTool::Builtin(_) => {
                    let mut def = of(tool)?;
                    // ToolHub's surface has no lock tools, so no lease to name: its writes take none.
                    if let Some(props) = def["inputSchema"]["properties"].as_object_mut() {
                        props.remove("lock_lease_id");
                        props.remove("lock_lease_ids");
                    }
                    if own::resume_tool(own::OWN_SERVER, tool, name) != own::RESUME {
                        def["outputSchema"] = gated_output(def["outputSchema"].take());
                    }
                    def
                }
                OwnTool::ResumeOf(target) => {
                    let initial = of(target)?;
                    json!({
                        "title": format!("Run an approved {}", own::toolhub_name(target).unwrap_or(target)),
                        "description": format!(
                            "Runs an approved request of {}, exactly as it was approved, once. Pass only the \
                             request_id from its approval handle; before approval it reports the request's status.",
                            own::toolhub_name(target).unwrap_or(target)),
                        "inputSchema": request_id_input(),
                        "outputSchema": gated_output(initial["outputSchema"].clone()),
                        "annotations": initial["annotations"].clone(),
                    })
                }
                intrinsic => control_definition(&intrinsic)?,
            };
            def["name"] = json!(name);
            Some(def)
        })
        .collect()
}

/// `toolhub.*`: liveness, the recent audit trail, discovery and request status; all read-only.
fn control_definition(tool: &OwnTool) -> Option<Value> {
    let (title, description, input, output) = match tool {
        OwnTool::Ping => (
            "Ping",
            "Answers ok and echoes the message; starts no process and touches no file.",
            json!({"type": "object", "properties": {"message": {"type": "string", "maxLength": 1024}},
                   "additionalProperties": false}),
            json!({"type": "object", "properties": {"status": {"type": "string"}, "echo": {"type": "string"}},
                   "required": ["status", "echo"]}),
        ),
        OwnTool::AuditRecent => (
            "Recent audit events",
            "The most recent audit events of this workspace: what was decided and how it ended. Never \
             arguments, results, paths or secrets.",
            json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1,
                   "maximum": MAX_AUDIT_EVENTS}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"count": {"type": "integer"},
                   "events": {"type": "array", "items": {"type": "object"}}}, "required": ["count", "events"]}),
        ),
        OwnTool::Capabilities => (
            "Show ToolHub capabilities",
            "The Contract V1 version, the approval model, which tools ask and the tool each resumes through, \
             and public limits. Read-only and deterministic.",
            no_input(),
            capabilities_schema(),
        ),
        OwnTool::RequestStatus => (
            "Show approval request status",
            "The state of an approval request, without approving, rejecting, consuming or extending it.",
            request_id_input(),
            {
                let mut schema = json!({"type": "object", "properties": lifecycle_properties(),
                                        "required": ["outcome", "trace_id", "request_id"]});
                schema["properties"]["request_id"] = json!({"type": "string"});
                schema
            },
        ),
        _ => return None,
    };
    Some(
        json!({"title": title, "description": description, "inputSchema": input, "outputSchema": output,
                "annotations": read_only()}),
    )
}

fn capabilities_schema() -> Value {
    let integers = |names: &[&str]| -> Value {
        names
            .iter()
            .map(|n| ((*n).to_owned(), json!({"type": "integer"})))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let limits = [
        "max_read_file_bytes",
        "max_write_bytes",
        "max_patch_chars",
        "max_shell_timeout_seconds",
        "shell_output_retained_chars",
        "git_output_retained_chars",
        "max_audit_events",
    ];
    json!({
        "type": "object",
        "properties": {
            "contract_version": {"type": "string"},
            "package_version": {"type": "string"},
            "transport": {"type": "string", "enum": ["stdio"]},
            "approval_model": {"type": "object"},
            "approval_operations": {"type": "array", "items": {"type": "object", "properties": {
                "initial_tool": {"type": "string"}, "resume_tool": {"type": "string"}},
                "required": ["initial_tool", "resume_tool"]}},
            "limits": {"type": "object", "properties": integers(&limits), "required": limits},
        },
        "required": ["contract_version", "package_version", "transport", "approval_model",
                     "approval_operations", "limits"]
    })
}

/// `toolhub.capabilities`: public facts only — no paths, payloads or secrets.
pub fn capabilities(limits: &Limits) -> Value {
    let operations: Vec<Value> = approval_operations()
        .into_iter()
        .map(|(initial, resume)| json!({"initial_tool": initial, "resume_tool": resume}))
        .collect();
    let structured = json!({
        "contract_version": CONTRACT_VERSION,
        "package_version": env!("CARGO_PKG_VERSION"),
        "transport": "stdio",
        "approval_model": {
            "human_only": true,
            "out_of_band": true,
            "atomic": true,
            "single_use": true,
            "expiring": true,
            "expires_after_seconds": limits.approval_expires_seconds,
            "status_tool": STATUS_TOOL,
        },
        "approval_operations": operations,
        "limits": {
            "max_read_file_bytes": limits.max_read_file_bytes,
            "max_write_bytes": limits.max_write_bytes,
            "max_patch_chars": limits.max_patch_chars,
            "max_shell_timeout_seconds": limits.max_shell_timeout_seconds,
            "shell_output_retained_chars": limits.output_retained,
            "git_output_retained_chars": limits.output_retained,
            "max_audit_events": MAX_AUDIT_EVENTS,
        },
    });
    let text = format!(
        "ToolHub contract {CONTRACT_VERSION} (toolgate {}): writes, patches and every command wait for a human's \
         approval out of band; poll {STATUS_TOOL}, then call the handle's resume_tool with the request_id.",
        env!("CARGO_PKG_VERSION")
    );
    json!({"content": [{"type": "text", "text": text}], "structuredContent": structured})
}

/// `toolhub.ping`: ok, and the message echoed.
pub fn ping(arguments: &Value) -> Value {
    let echo = arguments
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("hello");
    json!({"content": [{"type": "text", "text": "ok"}],
           "structuredContent": {"status": "ok", "echo": echo}})
}

/// Completes an answer of the ToolHub surface with what its clients read and toolgate's own answer leaves out:
/// a trace id on every refusal and on every answer of an approval-gated tool (for a resume, the held call's,
/// which `trace_id` is then), and for `toolhub.request_status` the request id and, while pending, a retryable
/// error. `called` is the name the client called, `request_id` the one its arguments name, if any.
pub(crate) fn complete(
    outcome: CallOutcome,
    called: &str,
    trace_id: &str,
    request_id: &str,
) -> CallOutcome {
    let Some(tool) = own::internal(called).map(OwnTool::named) else {
        return outcome;
    };
    if tool == OwnTool::RequestStatus {
        return status(outcome, trace_id, request_id);
    }
    let gated = tool.resumes().is_some()
        || own::resume_tool(own::OWN_SERVER, tool.name(), called) != own::RESUME;
    match outcome {
        CallOutcome::Refused(mut r) => {
            r.trace_id.get_or_insert_with(|| trace_id.to_owned());
            CallOutcome::Refused(r)
        }
        CallOutcome::Complete(mut v, c) if gated => {
            if let Some(s) = v
                .get_mut("structuredContent")
                .and_then(Value::as_object_mut)
            {
                s.entry("trace_id").or_insert_with(|| json!(trace_id));
            }
            CallOutcome::Complete(v, c)
        }
        other => other,
    }
}

/// `toolhub.request_status`'s answer: the contract's answer about the request, with the request id, and a trace
/// id even for an unknown request (this call's own: nothing about the request is revealed).
fn status(outcome: CallOutcome, trace_id: &str, request_id: &str) -> CallOutcome {
    let (mut result, name) = match outcome {
        CallOutcome::Held(h) => (contract::held(&h), h.state.as_str()),
        CallOutcome::Refused(r) => (contract::refusal(&r), "REFUSED"),
        other => return other,
    };
    let mut fields = vec![
        ("request_id", json!(request_id)),
        ("trace_id", json!(trace_id)),
    ];
    if name == "APPROVAL_PENDING" {
        let message = format!("request {request_id} is still waiting for a human");
        fields.push((
            "error",
            json!({"code": name, "message": message, "retryable": true}),
        ));
    }
    contract::add_fields(&mut result, fields);
    CallOutcome::Complete(result, Completion::Failed(name))
}

#[cfg(test)]
#[path = "toolhub_tests.rs"]
mod tests;
