//! The stored form of held snapshots, byte for byte: a prompt or resource read is found again by the hash of
//! these bytes, and requests held by an older toolgate must still decode and run.

use super::*;
use pretty_assertions::assert_eq;

fn decision() -> Decision {
    Decision {
        effect: policy::Effect::Ask,
        reason: policy::ReasonCode::AskRule,
        rule_id: Some("r1".into()),
        rule_at: None,
        operation: policy::Operation::McpCall,
        unknown: None,
    }
}

fn snapshot(kind: Kind) -> Snapshot {
    Snapshot {
        kind,
        server: "fx".into(),
        tool: "echo".into(),
        exposed: "fx__echo".into(),
        arguments: json!({"text": "hi", "code": "await call(\"mcp__fx__echo\", {})"}),
        definition_sha256: "ab".into(),
        command: None,
        note: Some("hook 0 (h) asked: why".into()),
    }
}

fn stored(kind: Kind, principal: Option<&str>) -> String {
    snapshot(kind).to_json(&decision(), principal).to_string()
}

const DECISION: &str =
    r#""decision":{"effect":"ask","reason":"ASK_RULE","rule_id":"r1","operation":"mcp.call"}"#;

/// What the snapshots of each kind have always been written as.
fn golden(kind: Kind) -> String {
    let args = r#""arguments":{"text":"hi","code":"await call(\"mcp__fx__echo\", {})"}"#;
    let note = r#""note":"hook 0 (h) asked: why""#;
    match kind {
        Kind::ToolCall => format!(
            r#"{{"kind":"tools/call","server":"fx","tool":"echo","exposed":"fx__echo",{args},"definition_sha256":"ab","command":null,{note},{DECISION}}}"#
        ),
        // The decision before the note: these kinds were written with two keys taken out afterwards.
        Kind::Prompt => format!(
            r#"{{"kind":"prompts/get","server":"fx","prompt":"echo","exposed":"fx__echo",{args},{DECISION},{note}}}"#
        ),
        Kind::Resource => format!(
            r#"{{"kind":"resources/read","server":"fx","uri":"echo","exposed":"fx__echo",{args},{DECISION},{note}}}"#
        ),
        Kind::CodeRun => format!(
            r#"{{"kind":"code_run","server":"fx","tool":"echo","exposed":"fx__echo",{args},{DECISION},{note},"names":["mcp__fx__echo"],"dynamic":false}}"#
        ),
    }
}

/// How snapshots were written before they were a type, kept verbatim as the oracle of their bytes.
fn written_before(s: &Snapshot, decision: &Decision, principal: Option<&str>) -> Value {
    let target_key = match s.kind {
        Kind::ToolCall | Kind::CodeRun => "tool",
        Kind::Prompt => "prompt",
        Kind::Resource => "uri",
    };
    let mut v = json!({
        "kind": s.kind.method(),
        "server": s.server,
        target_key: s.tool,
        "exposed": s.exposed,
        "arguments": s.arguments,
        "definition_sha256": s.definition_sha256,
        "command": s.command,
        "note": s.note,
        "decision": {"effect": decision.effect, "reason": decision.reason.as_str(),
                     "rule_id": decision.rule_id, "operation": decision.operation},
    });
    if s.kind != Kind::ToolCall {
        if let Value::Object(map) = &mut v {
            map.remove("definition_sha256");
            map.remove("command");
        }
    }
    if s.kind == Kind::CodeRun {
        let scan = s.code_scan();
        v["names"] = json!(scan.literal_names);
        v["dynamic"] = json!(scan.dynamic);
    }
    if let Some(principal) = principal {
        v["principal"] = json!(principal);
    }
    v
}

#[test]
fn stored_snapshots_are_the_bytes_written_before_in_every_shape() {
    let mut bare = decision();
    bare.rule_id = None;
    for kind in KINDS {
        for (command, note) in [
            (None, None),
            (Some(json!({"program": "/bin/echo"})), Some("n")),
        ] {
            for d in [decision(), bare.clone()] {
                for principal in [None, Some("alice")] {
                    let s = Snapshot {
                        command: command.clone(),
                        note: note.map(str::to_owned),
                        ..snapshot(kind)
                    };
                    let old = written_before(&s, &d, principal).to_string();
                    assert_eq!(s.to_json(&d, principal).to_string(), old, "{kind:?}");
                    // And what was written before reads back as what was held.
                    let back = Snapshot::from_json(&serde_json::from_str(&old).unwrap()).unwrap();
                    assert_eq!((back.kind, back.note), (kind, s.note.clone()));
                    let want_command = if kind == Kind::ToolCall {
                        command.clone()
                    } else {
                        None
                    };
                    assert_eq!(back.command, want_command);
                    assert_eq!(
                        owner(&serde_json::from_str(&old).unwrap()).as_deref(),
                        principal
                    );
                }
            }
        }
    }
}

const KINDS: [Kind; 4] = [Kind::ToolCall, Kind::Prompt, Kind::Resource, Kind::CodeRun];

#[test]
fn stored_snapshots_keep_their_bytes_for_every_kind() {
    for kind in KINDS {
        assert_eq!(stored(kind, None), golden(kind), "{kind:?}");
        let owned = golden(kind);
        let owned = format!(r#"{},"principal":"alice"}}"#, &owned[..owned.len() - 1]);
        assert_eq!(stored(kind, Some("alice")), owned, "{kind:?}");
    }
}

#[test]
fn snapshots_held_by_an_older_gateway_still_decode() {
    for kind in KINDS {
        let old: Value = serde_json::from_str(&golden(kind)).unwrap();
        let back = Snapshot::from_json(&old).unwrap();
        let want = snapshot(kind);
        assert_eq!(
            (
                back.kind,
                &back.server,
                &back.tool,
                &back.exposed,
                &back.arguments,
                &back.note
            ),
            (
                kind,
                &want.server,
                &want.tool,
                &want.exposed,
                &want.arguments,
                &want.note
            ),
        );
        let expected_definition = if kind == Kind::ToolCall { "ab" } else { "" };
        assert_eq!(back.definition_sha256, expected_definition);
        let d = crate::record::RecordDecision::from_snapshot(&old).unwrap();
        assert_eq!(
            (
                d.effect,
                d.reason.as_str(),
                d.rule_id.as_deref(),
                d.operation.as_str()
            ),
            (policy::Effect::Ask, "ASK_RULE", Some("r1"), "mcp.call")
        );
    }
    // A command snapshot, and one with no arguments, no note and no rule, as written before.
    let old = json!({"kind": "tools/call", "server": "toolgate", "tool": "shell_run", "exposed": "shell_run",
        "definition_sha256": "cd", "command": {"program": "/bin/echo", "args": ["hi"]}, "note": null,
        "decision": {"effect": "deny", "reason": "DEFAULT_ASK", "rule_id": null, "operation": "shell.exec"},
        "principal": "bob"});
    let back = Snapshot::from_json(&old).unwrap();
    assert_eq!(
        back.command,
        Some(json!({"program": "/bin/echo", "args": ["hi"]}))
    );
    assert_eq!((back.arguments, back.note), (json!({}), None));
    let d = crate::record::RecordDecision::from_snapshot(&old).unwrap();
    assert_eq!((d.effect, d.rule_id), (policy::Effect::Deny, None));
    assert_eq!(owner(&old), Some("bob".to_owned()));
}

#[test]
fn snapshots_that_are_not_ours_do_not_decode() {
    let tool_call = |edit: fn(&mut Value)| {
        let mut v: Value = serde_json::from_str(&golden(Kind::ToolCall)).unwrap();
        edit(&mut v);
        Snapshot::from_json(&v)
    };
    assert!(tool_call(|_| ()).is_some());
    assert!(tool_call(|v| v["kind"] = json!("tools/list")).is_none());
    assert!(tool_call(|v| v["server"] = json!(7)).is_none());
    // A tool call is pinned to its definition; without one it cannot run.
    assert!(
        tool_call(|v| drop(v.as_object_mut().map(|m| m.remove("definition_sha256")))).is_none()
    );
    assert!(tool_call(|v| drop(v.as_object_mut().map(|m| m.remove("tool")))).is_none());
}
