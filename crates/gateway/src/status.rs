//! `toolgate_status`: a read-only tool that shows each upstream's state, the lists it could not give, the
//! items toolgate holds back (with why: a name two tools share, a definition new on its server or changed since
//! it was accepted, a poisoned one), how many of a server's tools that hides, and whether the audit log is being
//! written, so an agent (or its user) can see why a server's tools are missing or every call is refused without
//! leaving the conversation. It reveals no environment values or arguments.

use crate::aggregate::Held;
use crate::pins::{PinStatus, PinView};
use serde_json::{json, Value};
use upstream::Status;

/// Held items listed per server in the text; the rest are counted (`structuredContent` lists every one).
const SHOWN_PER_SERVER: usize = 20;

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

/// Why an item is held back from the client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The catalog could not serve it (a name two items share, a definition larger than a page).
    Catalog,
    /// New on a server listed before it: nothing of it was ever accepted.
    New,
    /// Its definition changed since it was accepted.
    Changed,
    /// Its definition is flagged as poisoned.
    Flagged,
}

/// The status: `held` is what the catalog could not serve (shared names), `pins` what the pins hold back or
/// flag; with `quarantine_asks` (`"pins": {"onChange": "ask"}`) a new or changed tool stays listed and each call
/// asks.
pub fn result(
    statuses: &[Status],
    held: &[Held],
    pins: &PinView,
    quarantine_asks: bool,
    audit: &AuditHealth,
) -> Value {
    let servers: Vec<&str> = statuses.iter().map(|s| s.server.as_str()).collect();
    let mut all: Vec<(Held, Why)> = held.iter().map(|h| (h.clone(), Why::Catalog)).collect();
    // An item the catalog already holds back (a name two tools share) is listed once, with the catalog's reason.
    let by_catalog = |h: &Held| {
        held.iter()
            .any(|c| (&c.server, c.kind, &c.name) == (&h.server, h.kind, &h.name))
    };
    let by_pins = pinned(&servers, pins)
        .into_iter()
        .filter(|(h, _)| !by_catalog(h));
    all.extend(by_pins.map(|(mut h, why)| {
        if asks(&h, why, quarantine_asks) {
            h.reason = format!("listed, and each call asks a human: {}", h.reason);
        }
        (h, why)
    }));
    let lines: Vec<String> = statuses
        .iter()
        .map(|s| {
            let mine: Vec<&(Held, Why)> =
                all.iter().filter(|(h, _)| h.server == s.server).collect();
            let mut line = format!("{}: {}", s.server, s.state.as_str());
            if let Some(v) = &s.protocol_version {
                let hidden = hidden(&s.server, &mine, quarantine_asks);
                line.push_str(&format!(" ({v}, {} tools{hidden})", s.tools));
            }
            if let Some(e) = &s.last_error {
                line.push_str(&format!(" — {e}"));
            }
            for (list, why) in &s.list_errors {
                line.push_str(&format!("\n  {list} served empty: {why}"));
            }
            for (h, why) in mine.iter().take(SHOWN_PER_SERVER) {
                let item = match h.name.as_str() {
                    "" => h.kind.to_owned(),
                    name => format!("{} {name:?}", h.kind),
                };
                // Under `"onChange": "ask"` a new or changed tool is listed: its reason says so.
                let verb = if asks(h, *why, quarantine_asks) {
                    ""
                } else {
                    " held back"
                };
                line.push_str(&format!("\n  {item}{verb}: {}", h.reason));
            }
            if mine.len() > SHOWN_PER_SERVER {
                line.push_str(&format!(
                    "\n  … and {} more (toolgate pins list)",
                    mine.len() - SHOWN_PER_SERVER
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
            "held": all.iter().map(|(h, _)| h.to_json()).collect::<Vec<_>>(),
        }
    })
}

/// Whether a held item is a tool that stays listed behind a human (`"pins": {"onChange": "ask"}`).
fn asks(h: &Held, why: Why, quarantine_asks: bool) -> bool {
    quarantine_asks && h.kind == "tool" && matches!(why, Why::New | Why::Changed)
}

/// Why the pins hold an item back (or, under `quarantine_asks`, keep a tool listed behind a human), in words, with
/// the commands that review it: `pins` takes a server for its tools, and another item by its pin's name.
fn pin_reason(server: &str, pin: &PinStatus, review: &str) -> Option<(String, Why)> {
    let review = format!("toolgate pins diff {review} / pins accept {review}");
    let (why, words) = if pin.blocked_by_flags() {
        let flags = pin.flags.join("; ");
        return Some((
            format!("its definition is flagged as poisoned ({flags}); see toolgate pins list"),
            Why::Flagged,
        ));
    } else if !pin.quarantined {
        return None;
    } else if pin.new {
        (Why::New, format!("new since {server} was first listed"))
    } else {
        (Why::Changed, "changed since it was accepted".to_owned())
    };
    Some((format!("{words} ({review})"), why))
}

/// The items the pins hold back or flag, by server (the longest server name a pin's name starts with, since
/// `server__name` does not say where a server name with `__` in it ends), sorted for a stable listing.
fn pinned(servers: &[&str], pins: &PinView) -> Vec<(Held, Why)> {
    let mut out: Vec<(Held, Why)> = pins
        .iter()
        .filter_map(|(key, pin)| {
            let (kind, server, name) = match key.split_once(':') {
                Some(("instructions", server)) => {
                    ("instructions", *servers.iter().find(|s| **s == server)?, "")
                }
                Some((prefix, rest)) => {
                    let kind = match prefix {
                        "prompt" => "prompt",
                        "resource" => "resource",
                        "template" => "resource template",
                        _ => return None,
                    };
                    let (server, name) = split(servers, rest)?;
                    (kind, server, name)
                }
                None => {
                    let (server, name) = split(servers, key)?;
                    ("tool", server, name)
                }
            };
            let review = if kind == "tool" { server } else { key.as_str() };
            let (reason, why) = pin_reason(server, pin, review)?;
            let held = Held {
                server: server.to_owned(),
                kind,
                name: name.to_owned(),
                reason,
            };
            Some((held, why))
        })
        .collect();
    out.sort_by(|(a, _), (b, _)| (&a.server, a.kind, &a.name).cmp(&(&b.server, b.kind, &b.name)));
    out
}

/// `server__name` split at the longest configured server name it starts with.
fn split<'a>(servers: &[&'a str], key: &'a str) -> Option<(&'a str, &'a str)> {
    servers
        .iter()
        .filter_map(|s| Some((*s, key.strip_prefix(s)?.strip_prefix("__")?)))
        .max_by_key(|(s, _)| s.len())
}

/// How many of a server's listed tools its client does not see, and why: `, 14 hidden: 13 new since the server
/// was first listed, 1 changed since accepted`; empty when it sees them all.
fn hidden(server: &str, held: &[&(Held, Why)], quarantine_asks: bool) -> String {
    let tools: Vec<Why> = held
        .iter()
        .filter(|(h, _)| h.kind == "tool")
        .map(|(_, why)| *why)
        .collect();
    let count = |w: Why| tools.iter().filter(|t| **t == w).count();
    let parts: Vec<String> = [
        (Why::New, format!("new since {server} was first listed")),
        (Why::Changed, "changed since accepted".to_owned()),
        (Why::Flagged, "flagged as poisoned".to_owned()),
        (Why::Catalog, "not servable".to_owned()),
    ]
    .iter()
    .filter(|(w, _)| count(*w) > 0)
    .map(|(w, words)| format!("{} {words}", count(*w)))
    .collect();
    if parts.is_empty() {
        return String::new();
    }
    let asking = if quarantine_asks {
        count(Why::New) + count(Why::Changed)
    } else {
        0
    };
    let shown = match (tools.len() - asking, asking) {
        (hidden, 0) => format!("{hidden} hidden"),
        (0, asking) => format!("{asking} asking"),
        (hidden, asking) => format!("{hidden} hidden, {asking} asking"),
    };
    format!(", {shown}: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(server: &str, tools: usize) -> Status {
        Status {
            server: server.to_owned(),
            state: upstream::State::Ready,
            protocol_version: Some("2025-11-25".into()),
            pid: None,
            containment: Vec::new(),
            restarts: 0,
            last_error: None,
            tools,
            resources: 0,
            prompts: 0,
            garbage_lines: 0,
            stderr_tail: Vec::new(),
            list_errors: Vec::new(),
        }
    }

    fn pin(quarantined: bool, new: bool, flags: &[&str]) -> PinStatus {
        PinStatus {
            quarantined,
            new,
            flags: flags.iter().map(|f| (*f).to_owned()).collect(),
            flags_overridden: false,
        }
    }

    /// Every item the pins hold back is listed under its server (a server name with `__` in it included), the
    /// count says how many tools the client does not see and why, and under `"onChange": "ask"` new and changed
    /// tools are counted as asking rather than hidden.
    #[test]
    fn held_items_are_listed_and_counted_under_their_server() {
        let statuses = [ready("files", 14), ready("files__v2", 2)];
        let pins: PinView = [
            ("files__read_text_file", pin(true, false, &[])),
            ("files__list_directory", pin(true, true, &[])),
            (
                "files__helper",
                pin(false, false, &["HiddenInstructions in description: ignore"]),
            ),
            ("files__fine", pin(false, false, &[])),
            // Two tools share this name: the catalog holds it, and its pin (seeing two definitions) too.
            ("files__twin", pin(true, false, &[])),
            ("files__v2__x", pin(true, true, &[])),
            ("prompt:files__review", pin(true, false, &[])),
            ("instructions:files", pin(true, false, &[])),
        ]
        .into_iter()
        .map(|(k, p)| (k.to_owned(), p))
        .collect();
        let shared = Held {
            server: "files".into(),
            kind: "tool",
            name: "twin".into(),
            reason: "two tools share the name files__twin".into(),
        };
        let text = |asks: bool| {
            let r = result(
                &statuses,
                std::slice::from_ref(&shared),
                &pins,
                asks,
                &AuditHealth::Ok,
            );
            (r["content"][0]["text"].as_str().unwrap().to_owned(), r)
        };
        let (hiding, r) = text(false);
        insta::assert_snapshot!("held_items_hidden", hiding);
        assert_eq!(
            r["structuredContent"]["held"].as_array().unwrap().len(),
            7,
            "{r}"
        );
        let (asking, _) = text(true);
        insta::assert_snapshot!("held_items_asking", asking);
    }

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
