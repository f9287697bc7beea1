//! Audit completeness, table-driven: every governed request — refused before the policy (unknown tool,
//! flagged or quarantined definition, arguments failing the schema), refused by the policy or a hook, failing
//! command preparation, cancelled, held, resumed, and the prompt, resource and completion requests — leaves
//! exactly one decision record and the right finished record, under one trace id from first sight through
//! approval, resume and execution.

use crate::support::{call, fixture, Setup};
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;
use test_support::StdioClient;

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The fixture (with a poisoned tool), a policy that allows by default, asks for `fx__echo` and commands, and
/// denies `fx__env_keys`, a hook that denies `fx__big`, and held calls that answer at once with a handle.
fn setup() -> Setup {
    Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        let deny = "cat > /dev/null\necho '{\"decision\": \"deny\", \"reason\": \"not this one\"}'";
        json!({
            "workspace": dir.join("ws"),
            "stateDir": dir.join("state"),
            "mcpServers": {"fx": fixture(&["--poisoned"])},
            "permissions": {
                "default": "allow",
                "ask": ["mcp__fx__echo", "mcp__toolgate__shell_run"],
                "deny": ["mcp__fx__env_keys"],
            },
            "approvals": {"wait_seconds": 0, "elicitation": false},
            "hooks": {"pre": [{"command": script(dir, "deny.sh", deny), "tools": ["fx__big"]}]},
            "pins": {"newTools": "accept"},
        })
    })
}

struct Trail<'a> {
    setup: &'a Setup,
    client: StdioClient,
    /// Audit lines already seen.
    seen: usize,
}

/// One request's records, grouped by trace id: (decision reason codes, finished outcomes, tools named, request
/// ids of the finished records).
type Traces = BTreeMap<String, (Vec<String>, Vec<String>, Vec<String>, Vec<String>)>;

impl Trail<'_> {
    /// The records written since the last look, except those of the tool that flushes the log.
    async fn since_last(&mut self) -> Traces {
        call(&self.client, "toolgate_audit_recent", json!({"limit": 1}))
            .await
            .unwrap();
        let ns = store::Namespace::open(&self.setup.state_dir(), &self.setup.workspace()).unwrap();
        let audit = std::fs::read_to_string(ns.dir().join("audit.jsonl")).unwrap();
        let lines: Vec<Value> = audit
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let new = lines[self.seen..].to_vec();
        self.seen = lines.len();
        let mut traces = Traces::new();
        for e in new {
            if e["tool"] == "toolgate_audit_recent" {
                continue;
            }
            let entry = traces
                .entry(e["trace_id"].as_str().unwrap().to_owned())
                .or_default();
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            match e["kind"].as_str().unwrap() {
                "decision" => entry.0.push(s("reason_code")),
                "execution" => {
                    entry.1.push(s("outcome"));
                    entry.3.push(s("request_id"));
                }
                _ => {}
            }
            entry.2.push(s("tool"));
        }
        traces
    }

    /// The one trace the last request left: its decision reasons and finished outcomes.
    async fn one_trace(&mut self, what: &str) -> (String, Vec<String>, Vec<String>) {
        let traces = self.since_last().await;
        assert_eq!(traces.len(), 1, "{what}: one trace id, got {traces:#?}");
        let (trace, (decisions, finished, _, _)) = traces.into_iter().next().unwrap();
        (trace, decisions, finished)
    }
}

/// Every refusal and failure path: one decision record with the right reason, one finished record with the
/// right outcome, one trace id.
#[tokio::test]
async fn every_refusal_and_failure_path_leaves_one_decision_and_one_finished_record() {
    let setup = setup();
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let mut trail = Trail {
        setup: &setup,
        client,
        seen: 0,
    };
    trail.since_last().await;
    let rows: Vec<(&str, &str, Value, &str, &str)> = vec![
        // (what, method, params, decision reason, finished outcome)
        (
            "unknown tool",
            "tools/call",
            json!({"name": "fx__nope", "arguments": {}}),
            "UNKNOWN_TARGET",
            "REFUSED",
        ),
        (
            "no tool name",
            "tools/call",
            json!({"arguments": {}}),
            "UNKNOWN_TARGET",
            "REFUSED",
        ),
        (
            "flagged definition",
            "tools/call",
            json!({"name": "fx__helpful", "arguments": {}}),
            "TOOL_FLAGGED",
            "REFUSED",
        ),
        (
            "arguments failing the schema",
            "tools/call",
            json!({"name": "fx__add", "arguments": {"a": "one", "b": 2}}),
            "INVALID_ARGUMENTS",
            "REFUSED",
        ),
        (
            "policy deny",
            "tools/call",
            json!({"name": "fx__env_keys", "arguments": {}}),
            "DENY_RULE",
            "REFUSED",
        ),
        (
            "hook deny",
            "tools/call",
            json!({"name": "fx__big", "arguments": {"bytes": 3}}),
            "HOOK_DENY",
            "REFUSED",
        ),
        (
            "command preparation fails",
            "tools/call",
            json!({"name": "shell_run", "arguments": {"program": "no-such-program-anywhere"}}),
            "ASK_RULE",
            "REFUSED",
        ),
        (
            "allowed call",
            "tools/call",
            json!({"name": "fx__add", "arguments": {"a": 1, "b": 2}}),
            "DEFAULT_ALLOW",
            "SUCCEEDED",
        ),
        (
            "failing tool result",
            "tools/call",
            json!({"name": "fx__fail", "arguments": {}}),
            "DEFAULT_ALLOW",
            "FAILED",
        ),
        (
            "unknown prompt",
            "prompts/get",
            json!({"name": "fx__nope"}),
            "UNKNOWN_TARGET",
            "REFUSED",
        ),
        (
            "prompt get",
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": "a"}}),
            "DEFAULT_ALLOW",
            "SUCCEEDED",
        ),
        (
            "read the upstream fails",
            "resources/read",
            json!({"uri": "fixture://nope/1"}),
            "DEFAULT_ALLOW",
            "FAILED",
        ),
        (
            "resource read",
            "resources/read",
            json!({"uri": "fixture://static/1"}),
            "DEFAULT_ALLOW",
            "SUCCEEDED",
        ),
        (
            "completion of a prompt argument",
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "fx__greet"}, "argument": {"name": "name", "value": "a"}}),
            "DEFAULT_ALLOW",
            "SUCCEEDED",
        ),
        (
            "completion without a reference",
            "completion/complete",
            json!({"argument": {"name": "name", "value": "a"}}),
            "UNKNOWN_TARGET",
            "REFUSED",
        ),
    ];
    for (what, method, params, reason, outcome) in rows {
        let _answer = trail.client.request(method, params).await;
        let (_, decisions, finished) = trail.one_trace(what).await;
        assert_eq!(
            (decisions, finished),
            (vec![reason.to_owned()], vec![outcome.to_owned()]),
            "{what}"
        );
    }
}

/// A call cancelled while it runs leaves its decision and a cancelled record, from the typed outcome.
#[tokio::test]
async fn cancelled_call_leaves_its_decision_and_a_cancelled_record() {
    let setup = setup();
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let mut trail = Trail {
        setup: &setup,
        client,
        seen: 0,
    };
    trail.since_last().await;
    let id = Id::Str("to-cancel".into());
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 100, "delay_ms": 50}});
    trail
        .client
        .send_value(&jsonrpc::request(&id, "tools/call", Some(slow)))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    trail
        .client
        .notify(
            "notifications/cancelled",
            json!({"requestId": "to-cancel", "reason": "test"}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, decisions, finished) = trail.one_trace("cancelled call").await;
    assert_eq!(
        (decisions, finished),
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["CANCELLED".to_owned()]
        )
    );
}

/// A held call keeps one trace id from first sight through approval, resume and execution: one decision
/// record, the hold and the execution recorded under the held tool's own name (not `toolgate_resume`).
#[tokio::test]
async fn held_call_keeps_one_trace_through_approval_resume_and_execution() {
    let setup = setup();
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let mut trail = Trail {
        setup: &setup,
        client,
        seen: 0,
    };
    trail.since_last().await;
    let held = call(&trail.client, "fx__echo", json!({"text": "later"}))
        .await
        .unwrap();
    let handle = &held["structuredContent"];
    assert_eq!(handle["outcome"], "APPROVAL_REQUIRED", "{held}");
    let request_id = handle["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (trace, decisions, finished) = trail.one_trace("held call").await;
    assert_eq!(
        handle["trace_id"],
        trace.as_str(),
        "the handle names the call's own trace"
    );
    assert_eq!(
        (decisions, finished),
        (
            vec!["ASK_RULE".to_owned()],
            vec!["APPROVAL_REQUIRED".to_owned()]
        )
    );
    let ns = store::Namespace::open(&setup.state_dir(), &setup.workspace()).unwrap();
    store::Store::open(&ns)
        .unwrap()
        .approve(&request_id, "test operator", store::Timestamp::now())
        .unwrap();
    let ran = call(
        &trail.client,
        "toolgate_resume",
        json!({"request_id": request_id}),
    )
    .await
    .unwrap();
    assert_eq!(ran["content"][0]["text"], "later", "{ran}");
    let traces = trail.since_last().await;
    let (decisions, finished, tools, requests) = traces
        .get(&trace)
        .unwrap_or_else(|| panic!("the resume continues the held call's trace: {traces:#?}"));
    assert_eq!(traces.len(), 1, "{traces:#?}");
    assert_eq!(
        (decisions.len(), finished.clone()),
        (0, vec!["SUCCEEDED".to_owned()]),
        "the decision was recorded when the call was first seen"
    );
    assert!(tools.iter().all(|t| t == "echo"), "{tools:?}");
    assert_eq!(
        requests,
        &vec![request_id],
        "the resumed run names its approval request"
    );
}

/// A call of a tool whose definition changed since it was pinned is refused and recorded (it used to leave no
/// record at all).
#[tokio::test]
async fn quarantined_definition_is_recorded_as_refused() {
    let setup = setup();
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let mut trail = Trail {
        setup: &setup,
        client,
        seen: 0,
    };
    call(&trail.client, "fx__rug_pull", json!({}))
        .await
        .unwrap();
    trail
        .client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await
        .expect("the change is announced");
    trail.since_last().await;
    let refused = call(&trail.client, "fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "TOOL_QUARANTINED",
        "{refused}"
    );
    let (_, decisions, finished) = trail.one_trace("quarantined tool").await;
    assert_eq!(
        (decisions, finished),
        (
            vec!["TOOL_QUARANTINED".to_owned()],
            vec!["REFUSED".to_owned()]
        )
    );
}
