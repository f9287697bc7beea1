//! Hostile input on the client side of the stdio front end: every refusal is a JSON-RPC error, the connection
//! survives it, and nothing hangs or crashes.

use crate::support::{legacy, Setup};
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::time::Duration;

/// Sends raw bytes and returns the error response that must follow (id null unless stated).
async fn refused(raw: &[u8]) -> Value {
    let setup = Setup::fixture(
        &[],
        json!({"limits": {"maxMessageBytes": 4096, "maxDepth": 16}}),
    );
    let client = legacy(&setup).await;
    let mut line = raw.to_vec();
    line.push(b'\n');
    client.send_raw(line).await;
    // The error carries a null id, so it arrives as a "notification-like" message in the client's log.
    let err = client
        .wait_notification(Duration::from_secs(10), |m| m.get("error").is_some())
        .await
        .expect("an error response");
    // The connection still works afterwards.
    let pong = client
        .request("ping", json!({}))
        .await
        .expect("ping after refusal");
    assert_eq!(pong, json!({}));
    err
}

fn code(err: &Value) -> i64 {
    err["error"]["code"].as_i64().unwrap()
}

#[tokio::test]
async fn invalid_json_is_a_parse_error() {
    assert_eq!(code(&refused(b"{not json").await), jsonrpc::PARSE_ERROR);
}

#[tokio::test]
async fn invalid_utf8_is_a_parse_error() {
    let err =
        refused(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"a\":\"\xc3\x28\"}}").await;
    assert_eq!(code(&err), jsonrpc::PARSE_ERROR);
}

#[tokio::test]
async fn lone_surrogate_is_a_parse_error() {
    let err =
        refused(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"\ud800"}}"#)
            .await;
    assert_eq!(code(&err), jsonrpc::PARSE_ERROR);
}

#[tokio::test]
async fn nesting_bomb_is_refused() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","method":"x","params":{{"a":{}{}}}}}"#,
        "[".repeat(40),
        "]".repeat(40)
    );
    assert_eq!(code(&refused(deep.as_bytes()).await), jsonrpc::PARSE_ERROR);
}

#[tokio::test]
async fn duplicate_key_smuggling_is_refused() {
    let err = refused(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}"#).await;
    assert_eq!(code(&err), jsonrpc::PARSE_ERROR);
}

#[tokio::test]
async fn null_id_is_refused() {
    assert_eq!(
        code(&refused(br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).await),
        jsonrpc::INVALID_REQUEST
    );
}

#[tokio::test]
async fn fractional_id_is_refused() {
    assert_eq!(
        code(&refused(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#).await),
        jsonrpc::INVALID_REQUEST
    );
}

#[tokio::test]
async fn batch_is_refused_with_one_error() {
    let err = refused(
        br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
    )
    .await;
    assert_eq!(code(&err), jsonrpc::INVALID_REQUEST);
    assert!(err["error"]["message"].as_str().unwrap().contains("batch"));
}

#[tokio::test]
async fn oversized_message_is_refused_and_answered_with_its_id() {
    let setup = Setup::fixture(&[], json!({"limits": {"maxMessageBytes": 4096}}));
    let client = legacy(&setup).await;
    let big = json!({"name": "fx__echo", "arguments": {"text": "x".repeat(10_000)}});
    let err = client.request("tools/call", big).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::PARSE_ERROR);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the limit of 4096 bytes"),
        "{err}"
    );
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn second_in_flight_request_with_same_id_is_refused() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let dup = Id::Str("dup".into());
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 4, "delay_ms": 100}});
    client
        .send_value(&jsonrpc::request(&dup, "tools/call", Some(slow)))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    client
        .send_value(&jsonrpc::request(&dup, "ping", None))
        .await;
    let first = client
        .wait_notification(Duration::from_secs(10), |m| m["id"] == "dup")
        .await
        .expect("the refusal");
    assert_eq!(first["error"]["code"], jsonrpc::INVALID_REQUEST, "{first}");
    let done = client
        .wait_notification(Duration::from_secs(10), |m| {
            m["id"] == "dup" && m.get("result").is_some()
        })
        .await
        .expect("the first request still completes");
    assert_eq!(crate::support::text(&done["result"]), "done after 4 steps");
}

#[tokio::test]
async fn requests_before_initialize_are_refused_but_ping_works() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    let err = client.request("tools/list", json!({})).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::INVALID_REQUEST);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}
