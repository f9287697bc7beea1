//! Sessions without processes: the era gate in arrival order, cancellation of a running call reaching the
//! upstream and the record, a request from the upstream relayed to the client that can answer it, and a held
//! call whose session ends or whose gateway shuts down recording its cancellation. The fixture runs in this
//! process over the in-memory link (`testkit`).

use crate::testkit::{Client, Harness};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;

fn allow_all() -> Value {
    json!({"permissions": {"default": "allow"}, "pins": {"newTools": "accept"}})
}

async fn harness() -> Harness {
    Harness::start(allow_all(), FixtureOptions::default()).await
}

fn error_message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error: {answer}"))
        .to_owned()
}

#[tokio::test]
async fn initialize_settles_the_legacy_era_and_a_modern_request_is_then_refused() {
    let h = harness().await;
    let mut client = h.client();
    let init = client.initialize(json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let listed = client.request("tools/list", json!({})).await;
    assert!(listed["result"]["tools"].as_array().is_some(), "{listed}");
    let mixed = client.modern("tools/list", json!({})).await;
    assert!(
        error_message(&mixed).contains("initialized with protocol 2025-11-25"),
        "{mixed}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn modern_meta_settles_the_modern_era_and_initialize_is_then_refused() {
    let h = harness().await;
    let mut client = h.client();
    let listed = client.modern("tools/list", json!({})).await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    let again = client
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        )
        .await;
    assert!(
        error_message(&again).contains("already speaks protocol 2026-07-28"),
        "{again}"
    );
    let bare = client.request("tools/list", json!({})).await;
    assert!(
        error_message(&bare).contains("missing _meta"),
        "a modern connection never falls back to legacy: {bare}"
    );
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn request_before_either_era_is_refused_as_not_initialized() {
    let h = harness().await;
    let mut client = h.client();
    let early = client.request("tools/list", json!({})).await;
    assert!(error_message(&early).contains("not initialized"), "{early}");
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn server_discover_first_leaves_the_era_open_for_initialize() {
    let h = harness().await;
    let mut client = h.client();
    let discovered = client.modern("server/discover", json!({})).await;
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{discovered}"
    );
    let init = client.initialize(json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    h.stop(&[&client]).await;
}

#[tokio::test]
async fn server_discover_first_leaves_the_era_open_for_modern_requests() {
    let h = harness().await;
    let mut client = h.client();
    let discovered = client.request("server/discover", json!({})).await;
    assert!(discovered.get("result").is_some(), "{discovered}");
    let listed = client.modern("tools/list", json!({})).await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    h.stop(&[&client]).await;
}

/// A cancelled call: the upstream is told (`notifications/cancelled` for its own id), the client gets no
/// response, and the call's records are its decision and a CANCELLED finished record.
#[tokio::test]
async fn cancelled_call_reaches_the_upstream_and_is_recorded_cancelled() {
    let h = harness().await;
    let mut client = h.client();
    client.initialize(json!({})).await;
    let before = h.audit().len();
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 400, "delay_ms": 25},
                      "_meta": {"progressToken": "p-1"}});
    let id = client.send_request("tools/call", slow).await;
    // The first progress proves the call runs upstream.
    client
        .wait_for(|m| m["method"] == "notifications/progress")
        .await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": id, "reason": "changed my mind"}),
        )
        .await;
    let (trace, records) = h.one_trace_since(before).await;
    assert_eq!(
        records,
        (
            vec!["DEFAULT_ALLOW".to_owned()],
            vec!["CANCELLED".to_owned()]
        ),
        "trace {trace}"
    );
    let seen = client.call("fx__cancelled", json!({})).await;
    assert_eq!(
        seen["result"]["structuredContent"]["cancelled"], 1,
        "the upstream was told: {seen}"
    );
    assert!(
        !client.kept(|m| m.get("id") == Some(&id)),
        "a cancelled request gets no response"
    );
    h.stop(&[&client]).await;
}

/// The fixture's `sample` tool asks for `sampling/createMessage`; the client that declared `sampling` gets the
/// request under toolgate's own id, and its answer goes back to the upstream and into the call's result.
#[tokio::test]
async fn upstream_sampling_request_is_relayed_to_the_client_that_declared_sampling() {
    let h = harness().await;
    let mut client = h.client();
    client.initialize(json!({"sampling": {}})).await;
    let id = client
        .send_request(
            "tools/call",
            json!({"name": "fx__sample", "arguments": {"prompt": "say hi"}}),
        )
        .await;
    let asked = client
        .wait_for(|m| m["method"] == "sampling/createMessage")
        .await;
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"], "say hi",
        "{asked}"
    );
    assert!(
        !asked["id"].as_str().is_some_and(|s| s.starts_with("fx-")),
        "the upstream's own id never reaches the client: {asked}"
    );
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi there"},
                        "model": "scripted"});
    client.respond(&asked["id"], answer).await;
    let result = client.response(&id).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "hi there",
        "{result}"
    );
    h.stop(&[&client]).await;
}

/// The upstream ends mid-call (the fixture's `crash`, in process): the call fails, the supervisor opens a fresh
/// link, and the same session is served again.
#[tokio::test]
async fn upstream_that_ends_is_restarted_and_serves_the_same_session_again() {
    let h = harness().await;
    let mut client = h.client();
    client.initialize(json!({})).await;
    let crashed = client.call("fx__crash", json!({})).await;
    assert!(
        crashed.get("error").is_some() || crashed["result"]["isError"] == true,
        "{crashed}"
    );
    let up = h.gateway.upstream("fx").unwrap();
    let deadline = std::time::Instant::now() + crate::testkit::WAIT;
    loop {
        let status = up.status();
        if status.restarts >= 1 && status.state == upstream::State::Ready {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not restarted: {status:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let sum = client.call("fx__add", json!({"a": 20, "b": 22})).await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 42.0, "{sum}");
    h.stop(&[&client]).await;
}

/// Asks for `fx__echo` and holds it for up to 30 s; elicitation as given.
fn held(elicitation: bool) -> Value {
    json!({
        "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
        "approvals": {"wait_seconds": 30, "elicitation": elicitation},
        "pins": {"newTools": "accept"},
    })
}

/// Sends a call of `fx__echo` and waits until its approval request is pending; returns the request's id.
async fn hold_a_call(h: &Harness, client: &mut Client) -> String {
    client
        .send_request(
            "tools/call",
            json!({"name": "fx__echo", "arguments": {"text": "x"}}),
        )
        .await;
    h.pending_request().await.id
}

/// The audit records of `kind` with `outcome` in the log as it is on disk: nothing is flushed first, so only what
/// was written before the caller looked counts.
fn on_disk(h: &Harness, kind: &str, outcome: &str) -> usize {
    std::fs::read_to_string(h.state.audit_log().path())
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == kind && r["outcome"] == outcome)
        .count()
}

/// Shutdown on a current-thread runtime (`serve`'s) while a call is held and its session was never closed (a
/// signal dropped the front end's loop): the call is cancelled and records it before the audit queue is flushed,
/// and the approval is no longer pending, so nobody can approve what no one waits for.
#[tokio::test(flavor = "current_thread")]
async fn shutdown_with_a_held_call_records_it_cancelled_before_flushing() {
    let h = Harness::start(held(false), FixtureOptions::default()).await;
    let mut client = h.client();
    client.initialize(json!({})).await;
    let id = hold_a_call(&h, &mut client).await;
    let started = std::time::Instant::now();
    h.gateway.shutdown().await;
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(3),
        "shutdown took {took:?}"
    );
    assert_eq!(
        on_disk(&h, "approval", "CANCELLED"),
        1,
        "the held call's approval record"
    );
    assert_eq!(
        on_disk(&h, "execution", "CANCELLED"),
        1,
        "the held call's finished record"
    );
    let row = h
        .state
        .store(|s| s.get_request(&id, store::Timestamp::now()))
        .unwrap();
    assert_eq!(row.status, store::ApprovalStatus::Cancelled);
}

/// A client that goes away while toolgate's elicitation question about its held call is unanswered: the question
/// is answered with an error when the session closes, so the session (and with it the front end's output) ends at
/// once instead of when the front end stops waiting, and the held call still records its cancellation.
#[tokio::test(flavor = "current_thread")]
async fn client_gone_during_an_unanswered_elicitation_ends_its_session_at_once() {
    let h = Harness::start(held(true), FixtureOptions::default()).await;
    let mut client = h.client();
    client.initialize(json!({"elicitation": {}})).await;
    hold_a_call(&h, &mut client).await;
    client
        .wait_for(|m| m["method"] == "elicitation/create")
        .await;
    let ended = client.leave(std::time::Duration::from_secs(3)).await;
    assert!(ended, "the session outlived its client");
    h.state.flush();
    assert_eq!(on_disk(&h, "approval", "CANCELLED"), 1);
    h.gateway.shutdown().await;
}
