//! Rate limits through the whole pipeline: a tool's bucket gives its burst, then refuses with `RATE_LIMITED`
//! and a retry hint, audited like any refusal, and gives again once it refilled; an identity's bucket counts
//! the caller's calls of every tool.

use crate::testkit::Harness;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::time::Duration;
use test_support::FixtureOptions;

fn error(answer: &Value) -> &Value {
    answer
        .pointer("/result/structuredContent/error")
        .unwrap_or_else(|| panic!("a refusal: {answer}"))
}

#[tokio::test]
async fn the_third_quick_call_of_a_tool_with_a_burst_of_two_waits_for_the_refill() {
    let config = json!({
        "policy": {"default": "allow"},
        "pins": {"newTools": "accept"},
        // Two at once, then one every 300 ms.
        "rateLimits": {"perTool": {"rate": 10, "per": "3s", "burst": 2}},
    });
    let h = Harness::start(config, FixtureOptions::default()).await;
    let mut client = h.client();
    client.initialize(json!({})).await;
    let refused_before = crate::rate_limited_total();
    for n in 0..2 {
        let ok = client
            .call("fx__echo", json!({"text": n.to_string()}))
            .await;
        assert_eq!(ok.pointer("/result/isError"), None, "{ok}");
    }
    let before = h.audit().len();
    let third = client.call("fx__echo", json!({"text": "third"})).await;
    let e = error(&third);
    assert_eq!(e["code"], "RATE_LIMITED", "{third}");
    assert_eq!(e["retryable"], true, "{third}");
    let retry = e["retryAfterMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("{third}"));
    assert!((1..=300).contains(&retry), "{third}");
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("retry in {retry} ms")),
        "{message}"
    );
    assert!(crate::rate_limited_total() > refused_before);
    // Audited: the policy's decision, then the call refused by its rate limit, which the outcome names.
    let (_, records) = h.one_trace_of(before, Some("echo")).await;
    assert_eq!(
        records,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["RATE_LIMITED".to_owned()]
        )
    );
    // Another tool has a bucket of its own.
    let other = client.call("fx__env_keys", json!({})).await;
    assert_ne!(
        other.pointer("/result/structuredContent/error/code"),
        Some(&json!("RATE_LIMITED")),
        "{other}"
    );
    tokio::time::sleep(Duration::from_millis(retry + 50)).await;
    let again = client.call("fx__echo", json!({"text": "again"})).await;
    assert_eq!(again.pointer("/result/isError"), None, "{again}");
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn an_identity_bucket_spans_every_tool_of_the_caller() {
    let config = json!({
        "policy": {"default": "allow"},
        "pins": {"newTools": "accept"},
        "rateLimits": {"perIdentity": {"rate": 1, "per": "1h", "burst": 2}},
    });
    let h = Harness::start(config, FixtureOptions::default()).await;
    let mut client = h.client();
    client.initialize(json!({})).await;
    let first = client.call("fx__echo", json!({"text": "a"})).await;
    assert_eq!(first.pointer("/result/isError"), None, "{first}");
    let second = client.call("fx__env_keys", json!({})).await;
    assert_ne!(
        second.pointer("/result/structuredContent/error/code"),
        Some(&json!("RATE_LIMITED")),
        "{second}"
    );
    let third = client.call("fx__echo", json!({"text": "b"})).await;
    let e = error(&third);
    assert_eq!(e["code"], "RATE_LIMITED", "{third}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("per identity"),
        "{third}"
    );
    // An hour for one token: the hint says so, within the second the calls took.
    let retry = e["retryAfterMs"].as_u64().unwrap_or_default();
    assert!((3_599_000..=3_600_000).contains(&retry), "{third}");
    h.stop(&[&client]).await;
}
