//! A 2026-07-28 upstream's `input_required` during a legacy client's call: asked of the client as the requests it
//! knows, on the call's stream under toolgate's ids, and retried until the final result; refused with the reason
//! when the client did not declare the capability; passed through to a modern client, whose retry is a call
//! decided for the tool it names.

use super::*;
use pretty_assertions::assert_eq;

/// A legacy client that declared `capabilities`.
async fn legacy_client(h: &Harness, capabilities: Value) -> Client {
    let mut c = h.client();
    let init = c.initialize(capabilities).await;
    assert!(init.get("result").is_some(), "{init}");
    c
}

#[tokio::test]
async fn modern_upstream_input_required_reaches_a_legacy_client_as_elicitation() {
    let h = Harness::start(policy(), fixture("modern")).await;
    let mut client = legacy_client(&h, json!({"elicitation": {}})).await;
    let id = client
        .send_request(
            "tools/call",
            json!({"name": "fx__confirm", "arguments": {"message": "go?"}}),
        )
        .await;
    let (stream, asked) = client
        .wait_for_on(|m| m["method"] == "elicitation/create")
        .await;
    assert_eq!(
        stream,
        crate::outbox::Stream::Request(jsonrpc::Id::from_value(&id).unwrap())
    );
    assert_eq!(
        asked["params"]["message"],
        "Server \"fx\" asks (relayed by toolgate; not a toolgate approval question): go?",
        "{asked}"
    );
    assert!(
        asked["id"].as_str().unwrap().starts_with("tg-"),
        "toolgate's own id: {asked}"
    );
    client.respond(&asked["id"], accept()).await;
    let done = client.response(&id).await;
    let result = &done["result"];
    assert_eq!(result["structuredContent"]["answer"], accept(), "{done}");
    assert_eq!(
        result["structuredContent"]["requestState"], "fx-state-1",
        "{done}"
    );
    assert!(
        result.get("resultType").is_none(),
        "a legacy result: {done}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn modern_upstream_rounds_reach_a_legacy_client_until_the_final_result() {
    let h = Harness::start(policy(), fixture("modern")).await;
    let mut client = legacy_client(&h, json!({"elicitation": {}, "sampling": {}})).await;
    let args = json!({"both": true, "rounds": 2});
    let id = client
        .send_request(
            "tools/call",
            json!({"name": "fx__confirm", "arguments": args}),
        )
        .await;
    for _ in 0..2 {
        let elicit = client
            .wait_for(|m| m["method"] == "elicitation/create")
            .await;
        let sample = client
            .wait_for(|m| m["method"] == "sampling/createMessage")
            .await;
        client.respond(&elicit["id"], accept()).await;
        client.respond(&sample["id"], sampled("summary")).await;
    }
    let done = client.response(&id).await;
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["rounds"], 2, "{done}");
    assert_eq!(result["summary"]["content"]["text"], "summary", "{done}");
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn modern_upstream_input_required_fails_clearly_for_a_legacy_client_without_the_capability() {
    let h = Harness::start(policy(), fixture("modern")).await;
    let mut client = legacy_client(&h, json!({})).await;
    let answer = client.call("fx__confirm", json!({})).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("did not declare the \"elicitation\" capability"),
        "{answer}"
    );
    let rest = client.unexpected().await;
    assert!(!rest.iter().any(|m| m.get("method").is_some()), "{rest:#?}");
    h.stop(&[&client]).await;
}

/// Between two modern peers the upstream's input_required and request state pass through unchanged, both ways.
#[tokio::test]
async fn modern_upstream_input_required_passes_through_to_a_modern_client() {
    let h = Harness::start(policy(), fixture("modern")).await;
    let mut client = h.client();
    let answer = modern_call(&mut client, ASKS, "fx__confirm", json!({}), json!({})).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert_eq!(answer["result"]["requestState"], "fx-state-1", "{answer}");
    assert!(
        answer["result"]["inputRequests"]["confirm"].is_object(),
        "{answer}"
    );
    let responses = json!({"confirm": accept()});
    let done = modern_call(
        &mut client,
        ASKS,
        "fx__confirm",
        json!({}),
        retry("fx-state-1", responses),
    )
    .await;
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["answer"], accept(), "{done}");
    assert_eq!(result["requestState"], "fx-state-1", "{done}");
    h.stop(&[&client]).await;
}

/// A retry is a call of the tool it names, decided again: an upstream's request state does not carry an allow
/// over to another tool (here one that asks a human).
#[tokio::test]
async fn modern_retry_is_decided_as_a_call_of_the_tool_it_names() {
    let h = Harness::start(policy(), fixture("modern")).await;
    let mut client = h.client();
    let answer = modern_call(&mut client, ASKS, "fx__confirm", json!({}), json!({})).await;
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let switched = modern_call(
        &mut client,
        ASKS,
        "fx__echo",
        json!({"text": "x"}),
        retry("fx-state-1", json!({"confirm": accept()})),
    )
    .await;
    assert_eq!(
        switched["result"]["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "the ask rule of fx__echo decides the retry: {switched}"
    );
    h.stop(&[&client]).await;
}
