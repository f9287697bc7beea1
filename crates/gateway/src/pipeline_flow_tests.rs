//! The governed-call pipeline without processes: every refusal path of a tool call leaves exactly one decision
//! record and one REFUSED finished record under one trace; a held call keeps its trace through approval (in the
//! store, as the admin CLI approves) and `toolgate_resume`; while the audit log cannot be written nothing runs,
//! and the refusal is still recorded once the log is repaired. The fixture runs in process (`testkit`).

use crate::hooks::{CallHook, HookCall, HookDecision};
use crate::testkit::{modern_meta, Client, Harness, Records, WAIT};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::sync::Arc;
use test_support::FixtureOptions;

/// Allows by default, asks for `fx__echo`, denies `fx__env_keys`; held calls answer at once with a handle.
fn policy() -> Value {
    json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__echo"], "deny": ["mcp__fx__env_keys"]},
        "approvals": {"wait_seconds": 0, "elicitation": false},
        "pins": {"newTools": "accept"},
    })
}

/// A pre-hook that refuses `big`.
struct DenyBig;

impl CallHook for DenyBig {
    fn before(&self, call: &HookCall) -> HookDecision {
        if call.tool == "big" {
            HookDecision::Deny {
                reason: "not this one".into(),
            }
        } else {
            HookDecision::Allow
        }
    }
}

async fn harness() -> Harness {
    let fixture = FixtureOptions {
        poisoned: true,
        ..FixtureOptions::default()
    };
    let h = Harness::start(policy(), fixture).await;
    h.gateway.set_hooks(vec![Arc::new(DenyBig)]);
    h
}

async fn legacy_client(h: &Harness) -> Client {
    let mut client = h.client();
    client.initialize(json!({})).await;
    client
}

/// The contract's error code: in `structuredContent`, or in `_meta` when the tool's `outputSchema` has no room.
fn refusal_code(answer: &Value) -> &str {
    answer
        .pointer("/result/structuredContent/error/code")
        .or_else(|| answer.pointer("/result/_meta/toolgate~1contract/error/code"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("a refusal: {answer}"))
}

fn refused(reason: &str) -> Records {
    (vec![reason.to_owned()], vec!["REFUSED".to_owned()])
}

#[tokio::test]
async fn every_refusal_of_a_legacy_tool_call_leaves_one_decision_and_one_refused_record() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    every_refusal(&h, &mut client, None).await;
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn every_refusal_of_a_modern_tool_call_leaves_one_decision_and_one_refused_record() {
    let h = harness().await;
    let mut client = h.client();
    every_refusal(&h, &mut client, Some(modern_meta(json!({})))).await;
    h.stop(&[&client]).await;
}

/// Each refusal path once, in the client's era (`meta` on every request for a modern client).
async fn every_refusal(h: &Harness, client: &mut Client, meta: Option<Value>) {
    let rows = [
        ("unknown tool", "fx__nope", json!({}), "UNKNOWN_TARGET"),
        (
            "flagged definition",
            "fx__helpful",
            json!({}),
            "TOOL_FLAGGED",
        ),
        (
            "schema refusal",
            "fx__add",
            json!({"a": "one", "b": 2}),
            "INVALID_ARGUMENTS",
        ),
        ("policy deny", "fx__env_keys", json!({}), "DENY_RULE"),
        ("pre-hook deny", "fx__big", json!({"bytes": 3}), "HOOK_DENY"),
    ];
    for (what, tool, arguments, reason) in rows {
        let before = h.audit().len();
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = &meta {
            params["_meta"] = meta.clone();
        }
        let answer = client.request("tools/call", params).await;
        if meta.is_some() && answer.get("result").is_some() {
            assert_eq!(
                answer["result"]["resultType"], "complete",
                "{what}: {answer}"
            );
        }
        if reason == "UNKNOWN_TARGET" {
            assert_eq!(
                answer["error"]["code"],
                jsonrpc::INVALID_PARAMS,
                "{what}: {answer}"
            );
        } else {
            assert_eq!(refusal_code(&answer), reason, "{what}: {answer}");
        }
        let (trace, records) = h.one_trace_since(before).await;
        assert_eq!(records, refused(reason), "{what}: trace {trace}");
        if let Some(t) = answer.pointer("/result/structuredContent/trace_id") {
            assert_eq!(
                t,
                trace.as_str(),
                "{what}: the answer names the recorded trace"
            );
        }
    }
}

/// A definition that changed since it was pinned (a rug pull) is quarantined: a call is refused and recorded.
#[tokio::test]
async fn call_of_a_quarantined_definition_is_refused_and_recorded_once() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    client.call("fx__rug_pull", json!({})).await;
    client
        .wait_for(|m| m["method"] == "notifications/tools/list_changed")
        .await;
    let before = h.audit().len();
    let answer = client.call("fx__echo", json!({"text": "after"})).await;
    assert_eq!(refusal_code(&answer), "TOOL_QUARANTINED", "{answer}");
    let (_, records) = h.one_trace_since(before).await;
    assert_eq!(records, refused("TOOL_QUARANTINED"));
    h.stop(&[&client]).await;
}

/// Held, approved in the store as the admin CLI does, resumed: one trace id throughout, one decision record,
/// the hold and the run recorded under the held tool's own name.
#[tokio::test]
async fn held_call_is_approved_in_the_store_and_resumed_under_its_one_trace() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    let before = h.audit().len();
    let held = client.call("fx__echo", json!({"text": "later"})).await;
    let handle = &held["result"]["structuredContent"];
    assert_eq!(handle["outcome"], "APPROVAL_REQUIRED", "{held}");
    let request_id = handle["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (trace, records) = h.one_trace_since(before).await;
    assert_eq!(
        handle["trace_id"],
        trace.as_str(),
        "the handle names the call's trace"
    );
    assert_eq!(
        records,
        (
            vec!["ASK_RULE".to_owned()],
            vec!["APPROVAL_REQUIRED".to_owned()]
        )
    );
    let early = client
        .call("toolgate_resume", json!({"request_id": request_id}))
        .await;
    assert_ne!(
        early["result"]["content"][0]["text"], "later",
        "nothing runs before the approval: {early}"
    );
    // That early look is a call of its own; what follows must continue the held call's trace only.
    let before_resume = h.audit().len();
    // Approved through a connection of its own, as the admin CLI in another process approves.
    store::Store::open(h.state.namespace())
        .unwrap()
        .approve(&request_id, "test operator", store::Timestamp::now())
        .unwrap();
    let ran = client
        .call("toolgate_resume", json!({"request_id": request_id}))
        .await;
    assert_eq!(ran["result"]["content"][0]["text"], "later", "{ran}");
    let resumed = h.by_trace(before_resume, None);
    assert_eq!(
        resumed.keys().collect::<Vec<_>>(),
        vec![&trace],
        "{resumed:#?}"
    );
    let traces = h.by_trace(before, None);
    let finished = &traces[&trace].1;
    assert_eq!(
        finished.first().map(String::as_str),
        Some("APPROVAL_REQUIRED")
    );
    assert_eq!(
        finished.last().map(String::as_str),
        Some("SUCCEEDED"),
        "{finished:?}"
    );
    assert_eq!(
        traces[&trace].0,
        vec!["ASK_RULE".to_owned()],
        "one decision"
    );
    let echo_records = h.by_trace(before_resume, Some("echo"));
    assert_eq!(
        echo_records.get(&trace).map(|r| r.1.clone()),
        Some(vec!["SUCCEEDED".to_owned()]),
        "the run is recorded as echo, not as the resume tool"
    );
    h.stop(&[&client]).await;
}

/// While the audit log cannot be written a call is refused before anything runs; its records are held, not
/// dropped, and are written once the log is recovered.
#[tokio::test]
async fn audit_unavailable_refuses_the_call_and_its_records_survive_the_repair() {
    let h = harness().await;
    let mut client = legacy_client(&h).await;
    client.call("fx__add", json!({"a": 1, "b": 1})).await;
    let lines = h.audit().len();
    // Cut the last record off: the next write finds the log shorter than the store's head.
    let path = h.state.audit_log().path().to_path_buf();
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text
        .lines()
        .take(lines - 1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
    client.call("fx__add", json!({"a": 2, "b": 2})).await;
    let deadline = std::time::Instant::now() + WAIT;
    while h.state.audit_problem().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the cut log is noticed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let answer = client.call("fx__rich", json!({})).await;
    assert_eq!(refusal_code(&answer), "AUDIT_UNAVAILABLE", "{answer}");
    h.state.recover_audit().unwrap().expect("recovered");
    while h.state.audit_problem().is_some() {
        assert!(std::time::Instant::now() < deadline, "the log is repaired");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let rich = h.by_trace(0, Some("rich"));
    assert_eq!(
        rich.values().collect::<Vec<_>>(),
        vec![&refused("AUDIT_UNAVAILABLE")],
        "{rich:#?}"
    );
    h.stop(&[&client]).await;
}

/// A held call that waits (no handle at once): an approval written by another store connection, as the admin
/// CLI in another process writes it, wakes the call, which runs and answers under the trace it was held with.
#[tokio::test]
async fn waiting_held_call_runs_when_another_store_connection_approves_it() {
    let mut policy = policy();
    policy["approvals"] = json!({"wait_seconds": 15, "elicitation": false});
    let h = Harness::start(policy, FixtureOptions::default()).await;
    let mut client = legacy_client(&h).await;
    let before = h.audit().len();
    let id = client
        .send_request(
            "tools/call",
            json!({"name": "fx__echo", "arguments": {"text": "woken"}}),
        )
        .await;
    let mut admin = store::Store::open(h.state.namespace()).unwrap();
    let pending = h.pending_request().await;
    admin
        .approve(&pending.id, "test operator", store::Timestamp::now())
        .unwrap();
    let answer = client.response(&id).await;
    assert_eq!(answer["result"]["content"][0]["text"], "woken", "{answer}");
    let traces = h.by_trace(before, None);
    let records = traces
        .get(&pending.trace_id)
        .unwrap_or_else(|| panic!("the held trace runs: {traces:#?}"));
    assert_eq!(traces.len(), 1, "{traces:#?}");
    assert_eq!(records.0, vec!["ASK_RULE".to_owned()], "one decision");
    assert_eq!(
        records.1.last().map(String::as_str),
        Some("SUCCEEDED"),
        "{records:?}"
    );
    h.stop(&[&client]).await;
}

async fn ask(client: &mut Client, text: &str) -> Value {
    let params =
        json!({"name": "fx__echo", "arguments": {"text": text}, "_meta": modern_meta(json!({}))});
    client.modern("tools/call", params).await
}

#[tokio::test]
async fn one_identity_pending_approvals_do_not_block_another_identitys_ask() {
    let h = Harness::start(policy(), FixtureOptions::default()).await;
    let cap = store::Limits::DEFAULT.max_pending_per_identity as usize;
    let mut clients = Vec::new();
    // Each ask on a session of its own, as 2026-07-28 requests are: the sessions give the flood no new share.
    for i in 0..cap {
        let mut flood = h.client_as(None, Some("key:flood"));
        let held = ask(&mut flood, &format!("flood {i}")).await;
        assert!(!held.to_string().contains("cap"), "ask {i}: {held}");
        clients.push(flood);
    }
    let mut flood = h.client_as(None, Some("key:flood"));
    let refused = ask(&mut flood, "one more").await;
    assert!(
        refused.to_string().contains("per-identity cap"),
        "{refused}"
    );
    clients.push(flood);
    let mut quiet = h.client_as(None, Some("key:quiet"));
    let held = ask(&mut quiet, "quiet").await;
    assert!(!held.to_string().contains("cap"), "{held}");
    let pending = h
        .state
        .store(|s| {
            s.list_requests(
                Some(store::ApprovalStatus::Pending),
                store::Timestamp::now(),
            )
        })
        .unwrap();
    let of = |who: &str| {
        pending
            .iter()
            .filter(|a| a.snapshot["principal"] == who)
            .count()
    };
    assert_eq!((of("key:flood"), of("key:quiet")), (cap, 1));
    clients.push(quiet);
    h.stop(&clients.iter().collect::<Vec<_>>()).await;
}
