//! Bridging between the eras through real forwarding to the fixture in this process (`testkit`): a legacy
//! upstream's questions reach a modern client as `input_required` and its retry answers them upstream, under a
//! request state bound to the identity, the tool and the arguments, single use and expiring; a modern upstream's
//! `input_required` reaches a legacy client as requests and toolgate retries with the answers (`legacy_client`);
//! between two modern peers it passes through.

use crate::testkit::{modern_meta, Client, Harness};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::time::Duration;
use test_support::FixtureOptions;

fn policy() -> Value {
    json!({"permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
           "approvals": {"wait_seconds": 0, "elicitation": false},
           "pins": {"newTools": "accept"}})
}

fn fixture(era: &str) -> FixtureOptions {
    FixtureOptions {
        era: era.into(),
        bridging: true,
        ..FixtureOptions::default()
    }
}

pub(super) async fn legacy_upstream() -> Harness {
    Harness::start(policy(), fixture("legacy")).await
}

pub(super) const ASKS: &str = r#"{"elicitation": {}, "sampling": {}, "roots": {}}"#;

/// A modern `tools/call` from a client that declared `caps`, with `extra` params (a retry's, more `_meta`);
/// the whole response.
async fn modern_call(
    client: &mut Client,
    caps: &str,
    tool: &str,
    args: Value,
    extra: Value,
) -> Value {
    let mut params = json!({"name": tool, "arguments": args,
                            "_meta": modern_meta(serde_json::from_str(caps).unwrap())});
    if let (Some(p), Value::Object(mut extra)) = (params.as_object_mut(), extra) {
        // `_meta` given is merged into the modern one.
        if let (Some(Value::Object(meta)), Some(Value::Object(more))) =
            (p.get_mut("_meta"), extra.remove("_meta"))
        {
            meta.extend(more);
        }
        p.extend(extra);
    }
    client.request("tools/call", params).await
}

/// The `input_required` result of a response, checked for its shape.
pub(super) fn input_required(answer: &Value) -> (serde_json::Map<String, Value>, String) {
    let r = &answer["result"];
    assert_eq!(r["resultType"], "input_required", "{answer}");
    let state = r["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with(crate::bridge::STATE_PREFIX), "{answer}");
    (r["inputRequests"].as_object().unwrap().clone(), state)
}

fn retry(state: &str, responses: Value) -> Value {
    json!({"requestState": state, "inputResponses": responses})
}

pub(super) fn accept() -> Value {
    json!({"action": "accept", "content": {"ok": true}})
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "scripted"})
}

/// The key of the only input request.
pub(super) fn only_key(requests: &serde_json::Map<String, Value>) -> String {
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests.keys().next().unwrap().clone()
}

fn refusal_code(answer: &Value) -> &str {
    answer["result"]["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not a refusal: {answer}"))
}

#[tokio::test]
async fn legacy_upstream_elicitation_reaches_a_modern_client_as_input_required() {
    let h = legacy_upstream().await;
    let mut client = h.client();
    let answer = modern_call(
        &mut client,
        ASKS,
        "fx__elicit",
        json!({"message": "sure?"}),
        json!({}),
    )
    .await;
    let (requests, _) = input_required(&answer);
    let asked = &requests[&only_key(&requests)];
    assert_eq!(asked["method"], "elicitation/create", "{answer}");
    assert_eq!(
        asked["params"]["message"],
        "Server \"fx\" asks (relayed by toolgate; not a toolgate approval question): sure?",
        "{answer}"
    );
    let rest = client.unexpected().await;
    assert!(
        !rest
            .iter()
            .any(|m| m.get("method").is_some() && m.get("id").is_some()),
        "a modern client gets no server request: {rest:#?}"
    );
    h.stop(&[&client]).await;
}

/// The retry comes on another session, as a stateless HTTP client's does; the call keeps one trace with one
/// decision and one finished record.
#[tokio::test]
async fn modern_client_retry_delivers_the_answer_to_the_legacy_upstream() {
    let h = legacy_upstream().await;
    let before = h.audit().len();
    let mut first = h.client();
    let args = json!({"message": "sure?"});
    let answer = modern_call(&mut first, ASKS, "fx__elicit", args.clone(), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let mut second = h.client();
    let done = modern_call(
        &mut second,
        ASKS,
        "fx__elicit",
        args,
        retry(&state, json!({key: accept()})),
    )
    .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["structuredContent"], accept(), "{done}");
    let (_, records) = h.one_trace_of(before, Some("elicit")).await;
    assert_eq!(
        records,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["SUCCEEDED".to_owned()]
        )
    );
    // What the upstream asked during the call is a governed message of its own: decided and recorded once.
    let (_, asked) = h.one_trace_of(before, Some("elicitation/create")).await;
    assert_eq!(
        asked,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["INPUT_REQUIRED".to_owned()]
        )
    );
    h.stop(&[&first, &second]).await;
}

#[tokio::test]
async fn requests_outstanding_together_become_one_round_of_several_input_requests() {
    let h = legacy_upstream().await;
    let mut client = h.client();
    let answer = modern_call(&mut client, ASKS, "fx__ask_both", json!({}), json!({})).await;
    let (requests, state) = input_required(&answer);
    assert_eq!(requests.len(), 2, "{answer}");
    let mut responses = json!({});
    for (key, asked) in &requests {
        responses[key] = match asked["method"].as_str().unwrap() {
            "elicitation/create" => accept(),
            "sampling/createMessage" => sampled("both"),
            other => panic!("unexpected {other}"),
        };
    }
    let done = modern_call(
        &mut client,
        ASKS,
        "fx__ask_both",
        json!({}),
        retry(&state, responses),
    )
    .await;
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["elicited"], accept(), "{done}");
    assert_eq!(result["sampled"]["content"]["text"], "both", "{done}");
    h.stop(&[&client]).await;
}

/// `ask_twice` asks again once answered: a second round under a new state; the first state is used up.
#[tokio::test]
async fn request_state_cannot_be_replayed() {
    let h = legacy_upstream().await;
    let before = h.audit().len();
    let mut client = h.client();
    let first = modern_call(&mut client, ASKS, "fx__ask_twice", json!({}), json!({})).await;
    let (requests, state1) = input_required(&first);
    let key1 = only_key(&requests);
    assert_eq!(requests[&key1]["method"], "elicitation/create");
    let second = modern_call(
        &mut client,
        ASKS,
        "fx__ask_twice",
        json!({}),
        retry(&state1, json!({&key1: accept()})),
    )
    .await;
    let (requests, state2) = input_required(&second);
    let key2 = only_key(&requests);
    assert_eq!(
        requests[&key2]["method"], "sampling/createMessage",
        "{second}"
    );
    assert_ne!(state1, state2, "every round has its own state");
    let replay = modern_call(
        &mut client,
        ASKS,
        "fx__ask_twice",
        json!({}),
        retry(&state1, json!({&key1: accept()})),
    )
    .await;
    assert_eq!(refusal_code(&replay), "REQUEST_NOT_FOUND", "{replay}");
    let done = modern_call(
        &mut client,
        ASKS,
        "fx__ask_twice",
        json!({}),
        retry(&state2, json!({&key2: sampled("twice")})),
    )
    .await;
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["elicited"], accept(), "{done}");
    assert_eq!(result["sampled"]["content"]["text"], "twice", "{done}");
    // The call: one trace, one decision, one finished record; the replay: a refusal of its own.
    let traces = h.by_trace(before, Some("ask_twice"));
    let mut records: Vec<_> = traces.values().cloned().collect();
    records.sort();
    assert_eq!(
        records,
        vec![
            (
                vec!["DEFAULT_ALLOW".to_owned()],
                vec!["SUCCEEDED".to_owned()]
            ),
            (
                vec!["REQUEST_NOT_FOUND".to_owned()],
                vec!["REFUSED".to_owned()]
            ),
        ],
        "{traces:#?}"
    );
    h.stop(&[&client]).await;
}

/// The upstream's progress follows the client request waiting on the call: after the first answer it reaches
/// the retry, under the retry's own token, on the retry's stream.
#[tokio::test]
async fn progress_of_a_bridged_call_follows_the_retry() {
    let h = legacy_upstream().await;
    let mut client = h.client();
    let first = json!({"_meta": {"progressToken": "p-first"}});
    let first = modern_call(&mut client, ASKS, "fx__ask_twice", json!({}), first).await;
    let (requests, state) = input_required(&first);
    let key = only_key(&requests);
    let mut params = json!({"name": "fx__ask_twice", "arguments": {},
                            "_meta": modern_meta(serde_json::from_str(ASKS).unwrap()),
                            "requestState": state, "inputResponses": {&key: accept()}});
    params["_meta"]["progressToken"] = json!("p-retry");
    let id = client.send_request("tools/call", params).await;
    let (stream, progress) = client
        .wait_for_on(|m| m["method"] == "notifications/progress")
        .await;
    assert_eq!(progress["params"]["progressToken"], "p-retry", "{progress}");
    assert_eq!(
        stream,
        crate::outbox::Stream::Request(jsonrpc::Id::from_value(&id).unwrap())
    );
    let second = client.response(&id).await;
    input_required(&second);
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn request_state_of_another_identity_is_refused() {
    let h = legacy_upstream().await;
    let mut alice = h.client();
    alice.as_identity("key:alice");
    let mut mallory = h.client();
    mallory.as_identity("key:mallory");
    let answer = modern_call(&mut alice, ASKS, "fx__elicit", json!({}), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let stolen = json!({&key: {"action": "accept", "content": {"ok": false}}});
    let refused = modern_call(
        &mut mallory,
        ASKS,
        "fx__elicit",
        json!({}),
        retry(&state, stolen),
    )
    .await;
    assert_eq!(refusal_code(&refused), "REQUEST_TAMPERED", "{refused}");
    // Nothing reached the upstream: the owner's retry still answers the question, with the owner's answer.
    let done = modern_call(
        &mut alice,
        ASKS,
        "fx__elicit",
        json!({}),
        retry(&state, json!({&key: accept()})),
    )
    .await;
    assert_eq!(done["result"]["structuredContent"], accept(), "{done}");
    h.stop(&[&alice, &mallory]).await;
}

#[tokio::test]
async fn retry_with_other_arguments_is_refused() {
    let h = legacy_upstream().await;
    let mut client = h.client();
    let args = json!({"message": "delete the branch?"});
    let answer = modern_call(&mut client, ASKS, "fx__elicit", args.clone(), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let other = json!({"message": "delete everything?"});
    let refused = modern_call(
        &mut client,
        ASKS,
        "fx__elicit",
        other,
        retry(&state, json!({&key: accept()})),
    )
    .await;
    assert_eq!(refusal_code(&refused), "REQUEST_TAMPERED", "{refused}");
    // Another tool under the same state: refused too.
    let switched = modern_call(
        &mut client,
        ASKS,
        "fx__sample",
        args.clone(),
        retry(&state, json!({&key: accept()})),
    )
    .await;
    assert_eq!(refusal_code(&switched), "REQUEST_TAMPERED", "{switched}");
    let done = modern_call(
        &mut client,
        ASKS,
        "fx__elicit",
        args,
        retry(&state, json!({&key: accept()})),
    )
    .await;
    assert_eq!(done["result"]["structuredContent"], accept(), "{done}");
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn abandoned_input_required_expires_and_cancels_the_upstream_call() {
    let h = Harness::start_tuned(
        policy(),
        fixture("legacy"),
        |_| {},
        |o| {
            o.bridge_wait = Duration::from_millis(300);
        },
    )
    .await;
    let before = h.audit().len();
    let mut client = h.client();
    let answer = modern_call(&mut client, ASKS, "fx__elicit", json!({}), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let (trace, records) = tokio::time::timeout(crate::testkit::WAIT, async {
        loop {
            let traces = h.by_trace(before, Some("elicit"));
            if let Some((t, r)) = traces.into_iter().find(|(_, r)| !r.1.is_empty()) {
                return (t, r);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the abandoned call was never recorded as ended");
    assert_eq!(
        records,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["CANCELLED".to_owned()]
        ),
        "trace {trace}"
    );
    let late = modern_call(
        &mut client,
        ASKS,
        "fx__elicit",
        json!({}),
        retry(&state, json!({&key: accept()})),
    )
    .await;
    assert_eq!(refusal_code(&late), "REQUEST_NOT_FOUND", "{late}");
    let seen = modern_call(&mut client, ASKS, "fx__cancelled", json!({}), json!({})).await;
    assert_eq!(
        seen["result"]["structuredContent"]["cancelled"], 1,
        "the upstream call was cancelled: {seen}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn legacy_upstream_request_a_modern_client_did_not_declare_is_refused_upstream() {
    let h = legacy_upstream().await;
    let mut client = h.client();
    let answer = modern_call(
        &mut client,
        r#"{"sampling": {}}"#,
        "fx__elicit",
        json!({}),
        json!({}),
    )
    .await;
    let error = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains("did not declare the \"elicitation\" capability"),
        "the upstream was refused and its tool failed with that: {answer}"
    );
    h.stop(&[&client]).await;
}

#[path = "bridge_legacy_flow_tests.rs"]
mod legacy_client;
