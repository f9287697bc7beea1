//! MCP tool definitions (name, description, inputSchema, outputSchema, annotations) for the built-in tools.
//!
//! These are the contract the agent sees; the handlers in `builtin` must accept exactly these inputs (their
//! argument structs deny unknown fields). This module only describes; it does not validate or dispatch.

use serde_json::{json, Value};

/// Tool names, as exposed to clients.
pub const LIST_DIRECTORY: &str = "filesystem_list_directory";
/// See [`LIST_DIRECTORY`].
pub const READ_FILE: &str = "filesystem_read_file";
/// See [`LIST_DIRECTORY`].
pub const WRITE_FILE: &str = "filesystem_write_file";
/// See [`LIST_DIRECTORY`].
pub const APPLY_PATCH: &str = "filesystem_apply_patch";
/// See [`LIST_DIRECTORY`].
pub const GIT_STATUS: &str = "git_status";
/// See [`LIST_DIRECTORY`].
pub const GIT_DIFF: &str = "git_diff";
/// See [`LIST_DIRECTORY`].
pub const SHELL_RUN: &str = "shell_run";

/// Every outcome a call of a built-in tool can answer with: the tool's own, and the gateway's approval outcomes
/// (a held call answers with its approval handle in the same `structuredContent`, which clients validate).
const OUTCOMES: [&str; 12] = [
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

fn error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "message": {"type": "string"},
            "retryable": {"type": "boolean"}
        },
        "required": ["code", "message", "retryable"]
    })
}

/// Output schema: the common `outcome`/`error` envelope plus tool-specific properties.
fn output(extra: Value) -> Value {
    let mut properties = json!({
        "outcome": {"type": "string", "enum": OUTCOMES},
        "error": error_schema()
    });
    if let (Some(p), Some(e)) = (properties.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"type": "object", "properties": properties, "required": ["outcome"]})
}

fn capture_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "total_bytes": {"type": "integer"},
            "retained_bytes": {"type": "integer"},
            "dropped_bytes": {"type": "integer"}
        }
    })
}

fn process_output(extra: Value) -> Value {
    let mut base = json!({
        "exit_code": {"type": ["integer", "null"]},
        "signal": {"type": ["integer", "null"]},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "stdout_capture": capture_schema(),
        "stderr_capture": capture_schema(),
        "duration_ms": {"type": "integer"},
        "sandbox": {"type": "array", "items": {"type": "object"}}
    });
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    output(base)
}

fn annotations(title: &str, read_only: bool, destructive: bool, idempotent: bool) -> Value {
    json!({
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": false
    })
}

fn paths_schema() -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": "Workspace-relative paths to limit to."})
}

/// Every built-in tool definition, in a stable order.
pub fn tool_definitions() -> Vec<Value> {
    vec![
        json!({
            "name": LIST_DIRECTORY,
            "description": "List a directory inside the workspace. Symlinks are listed, not followed.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Workspace-relative directory; default the root."}},
                "additionalProperties": false
            },
            "outputSchema": output(json!({
                "path": {"type": "string"},
                "entries": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "type": {"type": "string"}, "size": {"type": "integer"}}}},
                "truncated": {"type": "boolean"}
            })),
            "annotations": annotations("List directory", true, false, true)
        }),
        json!({
            "name": READ_FILE,
            "description": "Read a text file inside the workspace. Binary files are reported with size and hash only.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            },
            "outputSchema": output(json!({
                "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
                "binary": {"type": "boolean"}, "content": {"type": ["string", "null"]}
            })),
            "annotations": annotations("Read file", true, false, true)
        }),
        json!({
            "name": WRITE_FILE,
            "description": "Atomically write a text file inside the workspace. Pass expected_hash (SHA-256 of the current content, from a read) to fail with CONFLICT if it changed.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "expected_hash": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            },
            "outputSchema": output(json!({
                "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
                "created": {"type": "boolean"}
            })),
            "annotations": annotations("Write file", false, true, true)
        }),
        json!({
            "name": APPLY_PATCH,
            "description": "Apply a unified diff to files in the workspace: every hunk applies, or nothing is written.",
            "inputSchema": {
                "type": "object",
                "properties": {"patch": {"type": "string"}},
                "required": ["patch"],
                "additionalProperties": false
            },
            "outputSchema": output(json!({
                "files": {"type": "array", "items": {"type": "object", "properties": {
                    "path": {"type": "string"}, "action": {"type": "string"}, "hunks": {"type": "integer"},
                    "sha256": {"type": ["string", "null"]}}}}
            })),
            "annotations": annotations("Apply patch", false, true, false)
        }),
        json!({
            "name": GIT_STATUS,
            "description": "Read-only `git status` of the workspace repository.",
            "inputSchema": {
                "type": "object",
                "properties": {"paths": paths_schema()},
                "additionalProperties": false
            },
            "outputSchema": process_output(json!({
                "branch": {"type": ["string", "null"]},
                "entries": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"type": "string"}, "path": {"type": "string"}}}}
            })),
            "annotations": annotations("Git status", true, false, true)
        }),
        json!({
            "name": GIT_DIFF,
            "description": "Read-only `git diff` of the work tree (or the index with staged=true), optionally against a base revision.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "staged": {"type": "boolean"},
                    "base": {"type": "string"},
                    "paths": paths_schema()
                },
                "additionalProperties": false
            },
            "outputSchema": process_output(json!({})),
            "annotations": annotations("Git diff", true, false, true)
        }),
        json!({
            "name": SHELL_RUN,
            "description": "Run one program with an argument vector (no shell string) in the workspace, inside the sandbox. Requires approval.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "program": {"type": "string"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "cwd": {"type": "string"},
                    "timeout_seconds": {"type": "integer", "minimum": 1}
                },
                "required": ["program"],
                "additionalProperties": false
            },
            "outputSchema": process_output(json!({})),
            "annotations": annotations("Run command", false, true, false)
        }),
    ]
}
