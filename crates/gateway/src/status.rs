//! `toolgate_status`: a read-only tool that shows each upstream's state, the lists it could not give, and the
//! items toolgate holds back (with why), so an agent (or its user) can see why a server's tools are missing
//! without leaving the conversation. It reveals no environment values or arguments.

use crate::aggregate::Held;
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

pub fn result(statuses: &[Status], held: &[Held]) -> Value {
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
            for (list, why) in &s.list_errors {
                line.push_str(&format!("\n  {list} served empty: {why}"));
            }
            for h in held.iter().filter(|h| h.server == s.server) {
                line.push_str(&format!(
                    "\n  {} {:?} held back: {}",
                    h.kind, h.name, h.reason
                ));
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
        "structuredContent": {
            "servers": statuses.iter().map(Status::to_json).collect::<Vec<_>>(),
            "held": held.iter().map(Held::to_json).collect::<Vec<_>>(),
        }
    })
}
