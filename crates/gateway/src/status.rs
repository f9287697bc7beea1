//! `toolgate_status`: a read-only tool that shows each upstream's state, the lists it could not give, the
//! items toolgate holds back (with why), and whether the audit log is being written, so an agent (or its user)
//! can see why a server's tools are missing or every call is refused without leaving the conversation. It
//! reveals no environment values or arguments.

use crate::aggregate::Held;
use serde_json::{json, Value};
use upstream::Status;

pub const TOOL_NAME: &str = crate::own::STATUS;

pub fn definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "title": "toolgate status",
        "description": "Shows the state of each upstream MCP server behind toolgate: ready, starting, restarting \
                        (with the last error), or not connected; and whether the audit log is being written.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
    })
}

/// The audit log's health as the status shows it.
pub enum AuditHealth {
    /// No state directory: nothing is audited (and every ask is refused).
    Off,
    Ok,
    /// Records cannot be written; calls are refused while this lasts.
    Failing(String),
}

impl AuditHealth {
    fn line(&self) -> String {
        match self {
            Self::Off => "audit: off (no state directory)".to_owned(),
            Self::Ok => "audit: ok".to_owned(),
            Self::Failing(p) => {
                format!("audit: FAILING — {p}; calls are refused until it is repaired")
            }
        }
    }

    fn to_json(&self) -> Value {
        let shown = match self {
            Self::Off => Shown::Off,
            Self::Ok => Shown::Ok,
            Self::Failing(problem) => Shown::Failing { problem },
        };
        // A tag and a string always serialise.
        serde_json::to_value(shown).unwrap_or_default()
    }
}

/// The audit log's health as `structuredContent` carries it: `{"state": "failing", "problem": …}`.
#[derive(serde::Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
enum Shown<'a> {
    Off,
    Ok,
    Failing { problem: &'a str },
}

pub fn result(statuses: &[Status], held: &[Held], audit: &AuditHealth) -> Value {
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
    let mut text = if lines.is_empty() {
        "no upstream servers are configured".to_owned()
    } else {
        lines.join("\n")
    };
    text.push('\n');
    text.push_str(&audit.line());
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {
            "servers": statuses.iter().map(Status::to_json).collect::<Vec<_>>(),
            "audit": audit.to_json(),
            "held": held.iter().map(Held::to_json).collect::<Vec<_>>(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_health_keeps_its_shape() {
        let shown = |h: AuditHealth| h.to_json().to_string();
        assert_eq!(shown(AuditHealth::Off), r#"{"state":"off"}"#);
        assert_eq!(shown(AuditHealth::Ok), r#"{"state":"ok"}"#);
        assert_eq!(
            shown(AuditHealth::Failing("disk full".into())),
            r#"{"state":"failing","problem":"disk full"}"#
        );
    }
}
