//! `toolgate_status`: a read-only tool that shows each upstream's state, so an agent (or its user) can see why a
//! server's tools are missing without leaving the conversation. It reveals no environment values or arguments.

use serde_json::{json, Value};
use upstream::Status;

pub const TOOL_NAME: &str = "toolgate_status";

pub fn definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "title": "toolgate status",
        "description": "Shows the state of each upstream MCP server behind toolgate: ready, starting, restarting \
                        (with the last error), or not connected.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    })
}

pub fn result(statuses: &[Status]) -> Value {
    let lines: Vec<String> = statuses
        .iter()
        .map(|s| {
            let mut line = format!("{}: {}", s.server, s.state.as_str());
            if let Some(v) = &s.protocol_version {
                line.push_str(&format!(" ({v}, {} tools)", s.tools));
            }
            if let Some(e) = &s.last_error {
                line.push_str(&format!(" — {e}"));
            }
            line
        })
        .collect();
    let text = if lines.is_empty() {
        "no upstream servers are configured".to_owned()
    } else {
        lines.join("\n")
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"servers": statuses.iter().map(Status::to_json).collect::<Vec<_>>()}
    })
}
