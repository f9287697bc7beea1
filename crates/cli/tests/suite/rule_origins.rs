//! Rules named as the user wrote them and where: a refusal, an approval request and the audit records of a call
//! decided by a rule of the user's file give its text and `file:line`, counted in that file alone (toolgate's own
//! rules in front of the user's do not count), as `policy explain` shows it. The messages are insta snapshots.

use crate::support::{call, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::Command;
use test_support::StdioClient;

/// A setup whose config file is `name` with exactly `text` (`{WS}` and `{STATE}` filled in), so the line a rule
/// is on is the line it has here.
fn written(name: &str, text: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=1\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
    let text = text
        .replace("{WS}", ws.to_str().unwrap())
        .replace("{STATE}", root.join("state").to_str().unwrap());
    let config = root.join(name);
    std::fs::write(&config, text).unwrap();
    Setup { dir, config }
}

async fn client(setup: &Setup) -> StdioClient {
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    client
}

fn admin(setup: &Setup, args: &[&str]) -> String {
    let out = Command::new(toolgate())
        .args(args)
        .arg("--config")
        .arg(&setup.config)
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn message(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The audit records of the newest calls, as stored.
fn audit_records(setup: &Setup) -> Vec<Value> {
    admin(setup, &["audit", "tail", "--json", "-n", "50"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const JSON_CONFIG: &str = r#"{
  "workspace": "{WS}",
  "approvals": {"wait_seconds": 0, "elicitation": false},
  "permissions": {
    "default": "allow",
    "deny": ["Read(**/.env)"]
  }
}
"#;

#[tokio::test]
async fn a_refusal_by_the_users_only_json_rule_names_its_text_and_line() {
    let setup = written("toolgate.json", JSON_CONFIG);
    let client = client(&setup).await;
    let refused = call(&client, "filesystem_read_file", json!({"path": ".env"}))
        .await
        .unwrap();
    insta::assert_snapshot!("refusal_json_rule", message(&refused));
    let decision = &refused["structuredContent"]["decision"];
    assert_eq!(
        (&decision["rule_id"], &decision["rule_at"]),
        (&json!("Read(**/.env)"), &json!("toolgate.json:6")),
        "{refused}"
    );
    drop(client);
    let report: Value = serde_json::from_str(&admin(
        &setup,
        &["report", "--group-by", "rule", "--format", "json"],
    ))
    .unwrap();
    let keys: Vec<&Value> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["key"])
        .collect();
    assert!(
        keys.contains(&&json!("Read(**/.env) at toolgate.json:6")),
        "{report}"
    );
    let records = audit_records(&setup);
    let denied: Vec<&Value> = records
        .iter()
        .filter(|r| r["reason_code"] == "DENY_RULE")
        .collect();
    assert!(!denied.is_empty(), "{records:?}");
    for r in denied {
        assert_eq!(
            (&r["rule_id"], &r["rule_at"]),
            (&json!("Read(**/.env)"), &json!("toolgate.json:6")),
            "{r}"
        );
    }
}

const TOML_CONFIG: &str = r#"workspace = "{WS}"

[approvals]
wait_seconds = 0
elicitation = false

[permissions]
default = "allow"
deny = ["Read(**/.env)"]
ask = ["Edit(./notes.txt)"]
"#;

/// The same in TOML, and for an approval: the request names the rule that asked and its line, in `approvals
/// show` and `approvals list`, and so does the audit record of the request.
#[tokio::test]
async fn a_toml_rule_is_named_with_its_line_in_refusals_and_approvals() {
    let setup = written("toolgate.toml", TOML_CONFIG);
    let client = client(&setup).await;
    let refused = call(&client, "filesystem_read_file", json!({"path": ".env"}))
        .await
        .unwrap();
    insta::assert_snapshot!("refusal_toml_rule", message(&refused));
    let held = call(
        &client,
        "filesystem_write_file",
        json!({"path": "notes.txt", "content": "changed"}),
    )
    .await
    .unwrap();
    let id = held["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("held: {held}"))
        .to_owned();
    let shown = admin(&setup, &["approvals", "show", &id]);
    assert!(
        shown.contains("asked by    Edit(./notes.txt) at toolgate.toml:10 (ASK_RULE)\n"),
        "{shown}"
    );
    let listed = admin(&setup, &["approvals", "list"]);
    assert!(
        listed.contains("Edit(./notes.txt) at toolgate.toml:10 (ASK_RULE)"),
        "{listed}"
    );
    drop(client);
    let records = audit_records(&setup);
    let approval = records
        .iter()
        .find(|r| r["kind"] == "approval" && r["request_id"] == json!(id))
        .unwrap_or_else(|| panic!("{records:?}"));
    assert_eq!(approval["rule_at"], "toolgate.toml:10", "{approval}");
}

/// The decision line `policy explain` prints names the rule the way the refusal does.
#[test]
fn explain_names_the_deciding_rule_as_the_refusal_does() {
    let setup = written("toolgate.toml", TOML_CONFIG);
    let call = setup.dir.path().join("call.json");
    let env = setup.workspace().join(".env");
    std::fs::write(
        &call,
        json!({"server": "toolgate", "tool": "filesystem_read_file", "arguments": {"path": env}})
            .to_string(),
    )
    .unwrap();
    let explained = admin(
        &setup,
        &["policy", "explain", "--call", call.to_str().unwrap()],
    );
    let decision = explained
        .lines()
        .find(|l| l.starts_with("decision:"))
        .unwrap_or_else(|| panic!("{explained}"));
    insta::assert_snapshot!("explain_decision_toml_rule", decision);
}
