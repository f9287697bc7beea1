//! Calls of a modern-era client (`_meta` on every request, no `initialize`) without processes: a cancelled call
//! reaches the upstream, gets no response and is recorded cancelled; a held call is approved in the store and
//! resumed under its one trace; a call waiting for approval that its client cancels does not run. The legacy
//! counterparts are in `session_flow_tests` and `pipeline_flow_tests`; the fixture runs in process (`testkit`).

use crate::outbox::Stream;
use crate::testkit::{Client, Harness};
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;

/// Allows by default and asks for `fx__echo`; `wait_seconds` is how long a held call waits for a human.
fn policy(wait_seconds: u64) -> Value {
    json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
        "approvals": {"wait_seconds": wait_seconds, "elicitation": false},
        "pins": {"newTools": "accept"},
    })
}

fn finished(reason: &str, outcome: &str) -> (Vec<String>, Vec<String>) {
    (vec![reason.to_owned()], vec![outcome.to_owned()])
}

/// A modern tools/call and its whole response, checked to be a complete modern result.
async fn modern_call(client: &mut Client, tool: &str, arguments: Value) -> Value {
    let answer = client
        .modern("tools/call", json!({"name": tool, "arguments": arguments}))
        .await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    answer
}

#[tokio::test]
async fn modern_cancelled_call_reaches_the_upstream_gets_no_response_and_is_recorded_cancelled() {
    let h = Harness::start(policy(0), FixtureOptions::default()).await;
    let mut client = h.client();
    let before = h.audit().len();
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 400, "delay_ms": 25},
                      "_meta": {"progressToken": "p-1"}});
    let id = client.send_modern("tools/call", slow).await;
    // The first progress proves the call runs upstream; it comes on the call's own stream.
    let (stream, progress) = client
        .wait_for_on(|m| m["method"] == "notifications/progress")
        .await;
    assert_eq!(
        stream,
        Stream::Request(Id::from_value(&id).unwrap()),
        "{progress}"
    );
    assert_eq!(progress["params"]["progressToken"], "p-1", "{progress}");
    client
        .notify("notifications/cancelled", json!({"requestId": id}))
        .await;
    let (trace, records) = h.one_trace_since(before).await;
    assert_eq!(
        records,
        finished("DEFAULT_ALLOW", "CANCELLED"),
        "trace {trace}"
    );
    let seen = modern_call(&mut client, "fx__cancelled", json!({})).await;
    assert_eq!(
        seen["result"]["structuredContent"]["cancelled"], 1,
        "the upstream was told: {seen}"
    );
    let rest = client.unexpected().await;
    assert!(
        !rest.iter().any(|m| m.get("id") == Some(&id)),
        "a cancelled request gets no response: {rest:#?}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn modern_held_call_is_approved_in_the_store_and_resumed_under_its_one_trace() {
    let h = Harness::start(policy(0), FixtureOptions::default()).await;
    let mut client = h.client();
    let before = h.audit().len();
    let held = modern_call(&mut client, "fx__echo", json!({"text": "later"})).await;
    let handle = &held["result"]["structuredContent"];
    assert_eq!(handle["outcome"], "APPROVAL_REQUIRED", "{held}");
    let request_id = handle["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (trace, records) = h.one_trace_since(before).await;
    assert_eq!(handle["trace_id"], trace.as_str(), "{held}");
    assert_eq!(records, finished("ASK_RULE", "APPROVAL_REQUIRED"));
    // Approved through a connection of its own, as the admin CLI in another process approves.
    store::Store::open(h.state.namespace())
        .unwrap()
        .approve(&request_id, "test operator", store::Timestamp::now())
        .unwrap();
    let before_resume = h.audit().len();
    let resume = json!({"request_id": request_id});
    let ran = modern_call(&mut client, "toolgate_resume", resume.clone()).await;
    assert_eq!(ran["result"]["content"][0]["text"], "later", "{ran}");
    let resumed = h.by_trace(before_resume, None);
    assert_eq!(
        resumed.keys().collect::<Vec<_>>(),
        vec![&trace],
        "the run continues the held call's trace: {resumed:#?}"
    );
    assert_eq!(
        resumed[&trace],
        (vec![], vec!["SUCCEEDED".to_owned()]),
        "no second decision"
    );
    let again = modern_call(&mut client, "toolgate_resume", resume).await;
    assert_ne!(
        again["result"]["content"][0]["text"], "later",
        "it runs once: {again}"
    );
    h.stop(&[&client]).await;
}

/// A modern call held and waiting for a human is cancelled by its client: no response, recorded cancelled, and
/// its approval request is withdrawn, so a later resume cannot run it.
#[tokio::test]
async fn modern_call_cancelled_while_held_gets_no_response_and_its_approval_is_withdrawn() {
    let h = Harness::start(policy(15), FixtureOptions::default()).await;
    let mut client = h.client();
    let before = h.audit().len();
    let id = client
        .send_modern(
            "tools/call",
            json!({"name": "fx__echo", "arguments": {"text": "never"}}),
        )
        .await;
    let admin = store::Store::open(h.state.namespace()).unwrap();
    let pending = h.pending_request().await;
    client
        .notify("notifications/cancelled", json!({"requestId": id}))
        .await;
    let rest = client.unexpected().await;
    assert!(
        !rest.iter().any(|m| m.get("id") == Some(&id)),
        "a cancelled request gets no response: {rest:#?}"
    );
    let (trace, records) = h.one_trace_since(before).await;
    assert_eq!(trace, pending.trace_id);
    assert_eq!(records, finished("ASK_RULE", "CANCELLED"));
    let request = admin
        .get_request(&pending.id, store::Timestamp::now())
        .unwrap();
    assert_eq!(
        request.status,
        store::ApprovalStatus::Cancelled,
        "the approval is withdrawn with the call"
    );
    let resumed = modern_call(
        &mut client,
        "toolgate_resume",
        json!({"request_id": pending.id}),
    )
    .await;
    assert_ne!(
        resumed["result"]["content"][0]["text"], "never",
        "a cancelled call cannot be resumed: {resumed}"
    );
    h.stop(&[&client]).await;
}

/// A modern request that sets `_meta` log level hears its call's log lines at or above it on its own stream;
/// one that sets none hears nothing (2026-07-28: no level, no log messages).
#[tokio::test]
async fn modern_request_that_asks_for_log_lines_hears_them_on_its_own_stream() {
    let h = Harness::start(policy(0), FixtureOptions::default()).await;
    let mut client = h.client();
    let log = |level: Option<&str>, data: &str| {
        let mut params =
            json!({"name": "fx__log", "arguments": {"level": "warning", "data": data}});
        if let Some(level) = level {
            params["_meta"] = json!({"io.modelcontextprotocol/logLevel": level});
        }
        params
    };
    let id = client
        .send_modern("tools/call", log(Some("info"), "heard"))
        .await;
    let (stream, line) = client
        .wait_for_on(|m| m["method"] == "notifications/message")
        .await;
    assert_eq!(
        stream,
        Stream::Request(Id::from_value(&id).unwrap()),
        "{line}"
    );
    assert_eq!(line["params"]["data"], "heard", "{line}");
    client.response(&id).await;
    client.modern("tools/call", log(None, "unasked")).await;
    client
        .modern("tools/call", log(Some("error"), "too quiet"))
        .await;
    let rest = client.unexpected().await;
    assert!(
        !rest.iter().any(|m| m["method"] == "notifications/message"),
        "{rest:#?}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn methods_removed_in_2026_are_not_found_for_a_modern_request() {
    let h = Harness::start(policy(0), FixtureOptions::default()).await;
    let mut client = h.client();
    for method in [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        let answer = client
            .modern(method, json!({"level": "debug", "uri": "fixture://a"}))
            .await;
        assert_eq!(
            answer["error"]["code"],
            jsonrpc::METHOD_NOT_FOUND,
            "{method}: {answer}"
        );
    }
    // The session was not made legacy by any of them: a modern call still runs.
    let listed = client.modern("tools/list", json!({})).await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
}
