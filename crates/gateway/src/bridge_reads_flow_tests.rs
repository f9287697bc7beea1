//! A modern client's prompt get and resource read on a legacy upstream that asks mid-request: bridged like a
//! tool call (`input_required`, then a retry carrying the answers under toolgate's request state), one governed
//! request with one decision and one finished record, and a retry that names another prompt or resource is
//! refused.

use super::flow_tests::{accept, input_required, legacy_upstream, only_key, ASKS};
use crate::testkit::{modern_meta, Client};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// A modern request `method` with `params` from a client that declared `ASKS`, with `extra` params.
async fn modern(client: &mut Client, method: &str, params: Value, extra: Value) -> Value {
    let mut params = params;
    params["_meta"] = modern_meta(serde_json::from_str(ASKS).unwrap());
    if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
        p.extend(extra);
    }
    client.request(method, params).await
}

fn retry(state: &str, key: &str) -> Value {
    json!({"requestState": state, "inputResponses": {key: accept()}})
}

#[tokio::test]
async fn modern_clients_prompt_get_on_a_legacy_upstream_that_asks_is_bridged_and_answered_on_retry()
{
    let h = legacy_upstream().await;
    let before = h.audit().len();
    let prompt = json!({"name": "fx__ask_greet", "arguments": {"name": "a"}});
    let mut first = h.client();
    let answer = modern(&mut first, "prompts/get", prompt.clone(), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    assert_eq!(requests[&key]["method"], "elicitation/create", "{answer}");
    // The retry may come on another session, as a stateless HTTP client's does.
    let mut second = h.client();
    let done = modern(&mut second, "prompts/get", prompt, retry(&state, &key)).await;
    let text = done["result"]["messages"][0]["content"]["text"].as_str();
    assert!(
        text.is_some_and(|t| t.starts_with("Hello, confirmed:") && t.contains("accept")),
        "{done}"
    );
    let (_, records) = h.one_trace_of(before, Some("ask_greet")).await;
    assert_eq!(
        records,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["SUCCEEDED".to_owned()]
        )
    );
    h.stop(&[&first, &second]).await;
}

#[tokio::test]
async fn modern_clients_read_of_a_resource_whose_legacy_upstream_asks_is_bridged_and_answered_on_retry(
) {
    let h = legacy_upstream().await;
    let read = json!({"uri": "fixture://asks/confirm"});
    let mut client = h.client();
    let answer = modern(&mut client, "resources/read", read.clone(), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let done = modern(&mut client, "resources/read", read, retry(&state, &key)).await;
    let text = done["result"]["contents"][0]["text"].as_str();
    assert!(
        text.is_some_and(|t| t.starts_with("confirmed:") && t.contains("accept")),
        "{done}"
    );
    h.stop(&[&client]).await;
}

/// A request state is bound to the request it was issued for: a retry of another prompt (or of the prompt's
/// state as a read) delivers nothing, and the call still waits for its own retry.
#[tokio::test]
async fn retry_of_another_prompt_or_method_with_a_prompts_request_state_is_refused() {
    let h = legacy_upstream().await;
    let prompt = json!({"name": "fx__ask_greet", "arguments": {"name": "a"}});
    let mut client = h.client();
    let answer = modern(&mut client, "prompts/get", prompt.clone(), json!({})).await;
    let (requests, state) = input_required(&answer);
    let key = only_key(&requests);
    let other = json!({"name": "fx__greet", "arguments": {"name": "a"}});
    let refused = modern(&mut client, "prompts/get", other, retry(&state, &key)).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("does not belong"), "{refused}");
    let read = json!({"uri": "fixture://asks/confirm"});
    let refused = modern(&mut client, "resources/read", read, retry(&state, &key)).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("does not belong"), "{refused}");
    let done = modern(&mut client, "prompts/get", prompt, retry(&state, &key)).await;
    assert!(done["result"]["messages"].is_array(), "{done}");
    h.stop(&[&client]).await;
}
