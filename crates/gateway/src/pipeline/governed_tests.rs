//! The messages that used to pass without a decision: an upstream's requests toward a client, the task methods
//! and unsubscribing. Each is decided by the policy (a rule stops it) and leaves one decision record and at most
//! one finished record.

use crate::testkit::{Client, Harness, Records};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;

fn allow_but(rules: Value) -> Value {
    json!({"policy": {"default": "allow", "rules": rules}, "pins": {"newTools": "accept"}})
}

async fn client(h: &Harness, capabilities: Value) -> Client {
    let mut c = h.client();
    let init = c.initialize(capabilities).await;
    assert!(init.get("result").is_some(), "{init}");
    c
}

fn one(decision: &str, finished: &str) -> Records {
    (vec![decision.to_owned()], vec![finished.to_owned()])
}

#[tokio::test]
async fn upstream_sampling_denied_by_rule_never_reaches_the_client() {
    let rules = json!([{"id": "no-sampling", "effect": "deny", "operations": ["mcp.sample"]}]);
    let h = Harness::start(allow_but(rules), FixtureOptions::default()).await;
    let mut a = client(&h, json!({"sampling": {}})).await;
    let before = h.audit().len();
    let answer = a
        .request("tools/call", json!({"name": "fx__sample", "arguments": {}}))
        .await;
    assert!(
        !a.kept(|m| m["method"] == "sampling/createMessage"),
        "the client was asked: {answer}"
    );
    assert_eq!(
        a.unexpected().await,
        Vec::<Value>::new(),
        "nothing reached the client"
    );
    let (_, sampled) = h.one_trace_of(before, Some("sampling/createMessage")).await;
    assert_eq!(sampled, one("DENY_RULE", "REFUSED"));
    // The call that caused it went on and got the upstream's answer to a refused request.
    let (_, called) = h.one_trace_of(before, Some("sample")).await;
    assert_eq!(called.0, vec!["DEFAULT_ALLOW".to_owned()]);
    h.stop(&[&a]).await;
}

#[tokio::test]
async fn upstream_sampling_allowed_by_default_reaches_its_caller_and_is_recorded_once() {
    let h = Harness::start(allow_but(json!([])), FixtureOptions::default()).await;
    let mut a = client(&h, json!({"sampling": {}})).await;
    let before = h.audit().len();
    let id = a
        .send_request("tools/call", json!({"name": "fx__sample", "arguments": {}}))
        .await;
    let asked = a
        .wait_for(|m| m["method"] == "sampling/createMessage")
        .await;
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"});
    a.respond(&asked["id"], answer).await;
    let result = a.response(&id).await;
    assert_eq!(result["result"]["content"][0]["text"], "ok", "{result}");
    let (_, sampled) = h.one_trace_of(before, Some("sampling/createMessage")).await;
    assert_eq!(sampled, one("DEFAULT_ALLOW", "SUCCEEDED"));
    h.stop(&[&a]).await;
}

async fn task_harness(rules: Value) -> Harness {
    let fixture = FixtureOptions {
        era: "legacy".into(),
        bridging: true,
        ..FixtureOptions::default()
    };
    Harness::start(allow_but(rules), fixture).await
}

async fn start_task(client: &mut Client) -> String {
    let params = json!({"name": "fx__task_work", "arguments": {"delay_ms": 50},
                        "task": {"ttl": 60000}});
    let created = client.request("tools/call", params).await;
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned()
}

#[tokio::test]
async fn task_result_read_without_a_decision_record() {
    let h = task_harness(json!([])).await;
    let mut owner = client(&h, json!({})).await;
    let id = start_task(&mut owner).await;
    for method in ["tasks/get", "tasks/result", "tasks/list"] {
        let before = h.audit().len();
        let answer = owner.request(method, json!({"taskId": id})).await;
        assert!(answer.get("result").is_some(), "{method}: {answer}");
        let tool = if method == "tasks/list" {
            method
        } else {
            "task_work"
        };
        let (_, records) = h.one_trace_of(before, Some(tool)).await;
        assert_eq!(records, one("DEFAULT_ALLOW", "SUCCEEDED"), "{method}");
    }
    // Another session's try is refused as an unknown task, and recorded as such.
    let mut other = client(&h, json!({})).await;
    let before = h.audit().len();
    let answer = other.request("tasks/result", json!({"taskId": id})).await;
    assert!(answer.get("error").is_some(), "{answer}");
    let (_, records) = h.one_trace_of(before, Some("tasks/result")).await;
    assert_eq!(records, one("UNKNOWN_TARGET", "REFUSED"));
    h.stop(&[&owner, &other]).await;
}

#[tokio::test]
async fn unsubscribe_leaves_one_decision_and_one_finished_record() {
    let h = Harness::start(allow_but(json!([])), FixtureOptions::default()).await;
    let mut a = client(&h, json!({})).await;
    let uri = "fixture://static/1";
    let sub = a.request("resources/subscribe", json!({"uri": uri})).await;
    assert!(sub.get("result").is_some(), "{sub}");
    let before = h.audit().len();
    let unsub = a
        .request("resources/unsubscribe", json!({"uri": uri}))
        .await;
    assert!(unsub.get("result").is_some(), "{unsub}");
    let (_, records) = h.one_trace_of(before, Some("resources/unsubscribe")).await;
    assert_eq!(records, one("DEFAULT_ALLOW", "SUCCEEDED"));
    h.stop(&[&a]).await;
}
