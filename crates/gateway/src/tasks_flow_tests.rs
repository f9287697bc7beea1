//! Tasks through real forwarding to the fixture in this process (`testkit`): a task an upstream creates for a
//! client's call reaches it under toolgate's id, its status notification reaches only its owner, and another
//! session can neither get, read, cancel nor list it.

use crate::testkit::{Client, Harness};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;

async fn harness() -> Harness {
    let policy = json!({"permissions": {"default": "allow"}, "pins": {"newTools": "accept"}});
    let fixture = FixtureOptions {
        era: "legacy".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    Harness::start(policy, fixture).await
}

async fn legacy_client(h: &Harness) -> Client {
    let mut c = h.client();
    let init = c.initialize(json!({})).await;
    assert!(
        init["result"]["capabilities"]["tasks"]["list"].is_object(),
        "toolgate offers tasks when an upstream does: {init}"
    );
    c
}

/// `fx__task_work` as a task; toolgate's id for it.
async fn start_task(client: &mut Client, delay_ms: u64) -> String {
    let params = json!({"name": "fx__task_work", "arguments": {"delay_ms": delay_ms},
                        "task": {"ttl": 60000}});
    let created = client.request("tools/call", params).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned();
    assert!(id.starts_with("tgtask-"), "toolgate's own id: {created}");
    assert!(!created.to_string().contains("fx-task-"), "{created}");
    id
}

fn unknown(answer: &Value) -> bool {
    answer["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("unknown task"))
}

#[tokio::test]
async fn task_ids_are_remapped_and_not_visible_to_another_session() {
    let h = harness().await;
    let mut owner = legacy_client(&h).await;
    let mut other = legacy_client(&h).await;
    let id = start_task(&mut owner, 5_000).await;
    let got = owner.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    assert_eq!(got["result"]["status"], "working", "{got}");
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let answer = other.request(method, json!({"taskId": id})).await;
        assert!(unknown(&answer), "{method} of another's task: {answer}");
    }
    let listed = other.request("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    // The upstream's own id is not a handle either.
    let raw = other
        .request("tasks/get", json!({"taskId": "fx-task-1"}))
        .await;
    assert!(unknown(&raw), "{raw}");
    let mine = owner.request("tasks/list", json!({})).await;
    let tasks = mine["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{mine}");
    assert_eq!(tasks[0]["taskId"], id.as_str(), "{mine}");
    let cancelled = owner.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], id.as_str(), "{cancelled}");
    h.stop(&[&owner, &other]).await;
}

#[tokio::test]
async fn task_result_and_status_reach_only_the_owner_under_toolgates_id() {
    let h = harness().await;
    let mut owner = legacy_client(&h).await;
    let mut other = legacy_client(&h).await;
    let id = start_task(&mut owner, 50).await;
    let status = owner
        .wait_for(|m| m["method"] == "notifications/tasks/status")
        .await;
    assert_eq!(status["params"]["taskId"], id.as_str(), "{status}");
    assert_eq!(status["params"]["status"], "completed", "{status}");
    let result = owner.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["result"]["content"][0]["text"], "worked", "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{result}"
    );
    assert_eq!(
        other.unexpected().await,
        Vec::<Value>::new(),
        "the other session hears nothing"
    );
    h.stop(&[&owner, &other]).await;
}

/// A modern client's task is bound to its identity, not to a session: its own next request (a new session, as
/// over stateless HTTP) reaches it; another identity's does not; methods the extension lacks are refused.
#[tokio::test]
async fn modern_task_is_bound_to_the_identity_that_created_it() {
    let policy = json!({"permissions": {"default": "allow"}, "pins": {"newTools": "accept"}});
    let fixture = FixtureOptions {
        era: "modern".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    let h = Harness::start(policy, fixture).await;
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let meta = crate::testkit::modern_meta(caps);
    let request = |extra: Value| {
        let mut p = json!({"_meta": meta.clone()});
        if let (Some(p), Value::Object(extra)) = (p.as_object_mut(), extra) {
            p.extend(extra);
        }
        p
    };
    let mut alice = h.client();
    alice.as_identity("key:alice");
    let created = alice
        .request(
            "tools/call",
            request(json!({"name": "fx__task_work", "arguments": {"delay_ms": 5000}})),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("tgtask-"), "{created}");
    let mut again = h.client();
    again.as_identity("key:alice");
    let got = again
        .request("tasks/get", request(json!({"taskId": id})))
        .await;
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    let mut mallory = h.client();
    mallory.as_identity("key:mallory");
    for method in ["tasks/get", "tasks/cancel"] {
        let answer = mallory
            .request(method, request(json!({"taskId": id})))
            .await;
        assert!(
            unknown(&answer),
            "{method} of another identity's task: {answer}"
        );
    }
    let result = again
        .request("tasks/result", request(json!({"taskId": id})))
        .await;
    assert_eq!(
        result["error"]["code"],
        jsonrpc::METHOD_NOT_FOUND,
        "tasks/result is not a 2026-07-28 method, whatever task it names: {result}"
    );
    h.stop(&[&alice, &again, &mallory]).await;
}
