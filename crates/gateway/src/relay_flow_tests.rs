//! Two client sessions on one gateway, through real forwarding to the fixture in this process (`testkit`): what
//! the upstream asks or logs during a call reaches only the client whose call caused it, on that call's stream;
//! what it asks while calls of two clients, or a call no client stands behind, are in flight is refused and
//! reaches nobody; a resource subscription two clients share ends upstream only when the last of them leaves.
//! The table's rules in isolation are in `route_tests`.

use crate::outbox::Stream;
use crate::outcome::CallOutcome;
use crate::pipeline::{self, CallContext, HoldPolicy, Origin};
use crate::testkit::{Client, Harness, WAIT};
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::FixtureOptions;
use tokio_util::sync::CancellationToken;

async fn harness() -> Harness {
    let policy = json!({"permissions": {"default": "allow"}, "pins": {"newTools": "accept"}});
    Harness::start(policy, FixtureOptions::default()).await
}

/// A legacy client that declared `capabilities`.
async fn client(h: &Harness, capabilities: Value) -> Client {
    let mut c = h.client();
    let init = c.initialize(capabilities).await;
    assert!(init.get("result").is_some(), "{init}");
    c
}

fn is_request(m: &Value) -> bool {
    m.get("method").is_some() && m.get("id").is_some()
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

/// The stream of client request `id` (as the scripted client numbers them).
fn stream_of(id: &Value) -> Stream {
    Stream::Request(Id::from_value(id).unwrap())
}

/// A calls `tool`, which makes the fixture send `method`: A gets it on its call's stream under toolgate's own
/// id, its answer goes back to the upstream and into A's result; B, which could answer it too, gets nothing.
async fn ask_reaches_only_the_caller(tool: &str, method: &str, answer: Value) -> Value {
    let h = harness().await;
    let caps = json!({"sampling": {}, "elicitation": {}});
    let mut a = client(&h, caps.clone()).await;
    let mut b = client(&h, caps).await;
    let id = a.send_request("tools/call", call(tool, json!({}))).await;
    let (stream, asked) = a.wait_for_on(|m| m["method"] == method).await;
    assert_eq!(stream, stream_of(&id), "on the stream of A's call: {asked}");
    assert!(
        !asked["id"].as_str().is_some_and(|s| s.starts_with("fx-")),
        "the upstream's own id never reaches the client: {asked}"
    );
    a.respond(&asked["id"], answer).await;
    let result = a.response(&id).await;
    assert_eq!(b.unexpected().await, Vec::<Value>::new(), "B gets nothing");
    assert_eq!(
        a.unexpected().await,
        Vec::<Value>::new(),
        "nothing else for A"
    );
    h.stop(&[&a, &b]).await;
    result
}

#[tokio::test]
async fn sampling_asked_during_a_call_reaches_only_its_caller_on_that_calls_stream() {
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "from A"},
                        "model": "scripted"});
    let result = ask_reaches_only_the_caller("fx__sample", "sampling/createMessage", answer).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "from A",
        "A's answer reached the upstream and completed A's call: {result}"
    );
}

#[tokio::test]
async fn elicitation_asked_during_a_call_reaches_only_its_caller_on_that_calls_stream() {
    let answer = json!({"action": "decline"});
    let result = ask_reaches_only_the_caller("fx__elicit", "elicitation/create", answer).await;
    assert_eq!(
        result["result"]["structuredContent"]["action"], "decline",
        "A's answer reached the upstream and completed A's call: {result}"
    );
}

/// B's call runs on the upstream when A's call makes it ask: the upstream's request names no call, so toolgate
/// refuses it; the fixture's tool fails with that refusal and neither client is asked anything.
#[tokio::test]
async fn upstream_request_while_calls_of_two_sessions_run_is_refused_and_reaches_neither() {
    let h = harness().await;
    let caps = json!({"sampling": {}});
    let mut a = client(&h, caps.clone()).await;
    let mut b = client(&h, caps).await;
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 400, "delay_ms": 25},
                      "_meta": {"progressToken": "b-1"}});
    let b_call = b.send_request("tools/call", slow).await;
    // B's first progress proves its call runs upstream.
    b.wait_for(|m| m["method"] == "notifications/progress")
        .await;
    let answer = a
        .call("fx__sample", json!({"prompt": "whose is this?"}))
        .await;
    let error = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains("calls of 2 clients are in flight on fx"),
        "A sees the upstream's failure, which carries the refusal: {answer}"
    );
    b.notify("notifications/cancelled", json!({"requestId": b_call}))
        .await;
    let to_a = a.unexpected().await;
    let to_b = b.unexpected().await;
    assert!(!to_a.iter().any(is_request), "{to_a:#?}");
    assert!(!to_b.iter().any(is_request), "{to_b:#?}");
    assert!(
        !to_b.iter().any(|m| m.get("id") == Some(&b_call)),
        "B's cancelled call gets no response"
    );
    h.stop(&[&a, &b]).await;
}

/// A log line the upstream writes during A's call is A's: filtered by A's own level, never sent to B, although B
/// asked for every level.
#[tokio::test]
async fn log_line_written_during_a_call_reaches_its_caller_at_its_level_and_not_the_other_session()
{
    let h = harness().await;
    let mut a = client(&h, json!({})).await;
    let mut b = client(&h, json!({})).await;
    let set = a
        .request("logging/setLevel", json!({"level": "warning"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    b.request("logging/setLevel", json!({"level": "debug"}))
        .await;
    let quiet = a
        .call(
            "fx__log",
            json!({"level": "info", "data": "below A's level"}),
        )
        .await;
    assert_eq!(quiet["result"]["content"][0]["text"], "logged", "{quiet}");
    let loud = a
        .call("fx__log", json!({"level": "error", "data": "for A"}))
        .await;
    assert_eq!(loud["result"]["content"][0]["text"], "logged", "{loud}");
    let logged = a.wait_for(|m| m["method"] == "notifications/message").await;
    assert_eq!(logged["params"]["data"], "for A", "{logged}");
    // The event loop handles the upstream's lines in order: the info line was handled before the error line.
    assert_eq!(a.unexpected().await, Vec::<Value>::new(), "below A's level");
    assert_eq!(
        b.unexpected().await,
        Vec::<Value>::new(),
        "A's call's log lines are not B's"
    );
    h.stop(&[&a, &b]).await;
}

/// A governed call no client session stands behind (a code-mode run's) makes its upstream ask for sampling while
/// a session that declared sampling is open: refused, and that session is asked nothing.
#[tokio::test]
async fn sampling_asked_during_a_call_with_no_client_session_is_refused_and_the_open_session_gets_nothing(
) {
    let h = harness().await;
    let mut a = client(&h, json!({"sampling": {}})).await;
    let origin = Origin::CodeRun {
        run_trace_id: "run-1".into(),
    };
    let ctx = CallContext::new(
        origin,
        HoldPolicy::HandleNow,
        CancellationToken::new(),
        h.gateway.stages.guard(),
    );
    let params = call("fx__sample", json!({"prompt": "hi"}));
    let outcome =
        tokio::time::timeout(WAIT, pipeline::govern_tool(&h.gateway.stages, &ctx, params))
            .await
            .expect("refused at once, not left waiting for a client to answer");
    let CallOutcome::Failed(failure) = &outcome else {
        panic!("the call must fail with the refusal: {outcome:?}");
    };
    let said = format!("{failure:?}");
    assert!(
        said.contains("no client session stands behind the call"),
        "{said}"
    );
    assert_eq!(a.unexpected().await, Vec::<Value>::new());
    h.stop(&[&a]).await;
}

/// A modern client's call makes a modern upstream ask for sampling as a server request, which its era does not
/// have (it would answer input_required; only a legacy upstream's requests are bridged): refused, and the legacy
/// session that declared sampling is not asked in its place.
#[tokio::test]
async fn sampling_asked_during_a_modern_call_is_refused_not_handed_to_a_legacy_session_that_could_answer(
) {
    let h = harness().await;
    let mut legacy = client(&h, json!({"sampling": {}})).await;
    let mut modern = h.client();
    let answer = modern
        .modern("tools/call", call("fx__sample", json!({"prompt": "hi"})))
        .await;
    let said = answer.to_string();
    assert!(
        said.contains("which has no server requests"),
        "the modern client sees the refusal: {answer}"
    );
    assert_eq!(modern.unexpected().await, Vec::<Value>::new());
    assert_eq!(legacy.unexpected().await, Vec::<Value>::new());
    h.stop(&[&legacy, &modern]).await;
}

/// The URIs the fixture holds a subscription for, as `observer` asks it.
async fn fixture_subscriptions(observer: &mut Client) -> Value {
    let answer = observer.call("fx__subscriptions", json!({})).await;
    answer["result"]["structuredContent"]["uris"].clone()
}

/// A and B subscribe to the same resource, which the upstream holds as one subscription: A leaving does not end
/// it (B still hears of updates); B, the last subscriber, leaving does, so the upstream stops sending updates
/// nobody would hear of.
#[tokio::test]
async fn upstream_subscription_ends_when_its_last_subscriber_closes_and_not_before() {
    let h = harness().await;
    let mut a = client(&h, json!({})).await;
    let mut b = client(&h, json!({})).await;
    let mut observer = client(&h, json!({})).await;
    let uri = json!({"uri": "fixture://static/1"});
    for c in [&mut a, &mut b] {
        let subscribed = c.request("resources/subscribe", uri.clone()).await;
        assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    }
    assert_eq!(
        fixture_subscriptions(&mut observer).await,
        json!(["fixture://static/1"])
    );
    assert!(a.leave(WAIT).await, "A's session ended");
    // What a close sends upstream is sent from a task of its own: give it time to come if it wrongly would.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        fixture_subscriptions(&mut observer).await,
        json!(["fixture://static/1"]),
        "B is still subscribed: the upstream must not be told"
    );
    assert!(b.leave(WAIT).await, "B's session ended");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let uris = fixture_subscriptions(&mut observer).await;
        if uris == json!([]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the last subscriber left, the upstream still holds {uris}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    h.stop(&[&observer]).await;
}

/// An upstream that asks in toolgate's own words: its question reaches the client labelled with its server,
/// never starting like toolgate's, and without the mark only toolgate's own question carries; toolgate's own
/// question, beside it, keeps both.
#[tokio::test]
async fn upstream_elicitation_is_labelled_with_its_server() {
    let policy = json!({"permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
                        "approvals": {"wait_seconds": 30, "elicitation": true},
                        "pins": {"newTools": "accept"}});
    let h = Harness::start(policy, FixtureOptions::default()).await;
    let mut a = client(&h, json!({"elicitation": {}})).await;
    let held = a
        .send_request("tools/call", call("fx__echo", json!({"text": "x"})))
        .await;
    let own = a.wait_for(|m| m["method"] == "elicitation/create").await;
    let own_words = own["params"]["message"].as_str().unwrap().to_owned();
    assert!(own_words.starts_with("toolgate: allow"), "{own}");
    assert!(
        own["params"]["_meta"]["toolgate/approval"]["request_id"].is_string(),
        "{own}"
    );
    a.respond(
        &own["id"],
        json!({"action": "accept", "content": {"decision": "reject"}}),
    )
    .await;
    let _ = a.response(&held).await;

    let id = a
        .send_request(
            "tools/call",
            call("fx__elicit", json!({"message": own_words})),
        )
        .await;
    let relayed = a.wait_for(|m| m["method"] == "elicitation/create").await;
    let words = relayed["params"]["message"].as_str().unwrap();
    assert!(
        words.starts_with("Server \"fx\" asks") && !words.starts_with("toolgate:"),
        "{relayed}"
    );
    assert!(
        words.ends_with(&own_words),
        "the upstream's words follow: {relayed}"
    );
    let meta = &relayed["params"]["_meta"];
    assert_eq!(meta["toolgate/relayedFrom"], "fx", "{relayed}");
    assert!(meta.get("toolgate/approval").is_none(), "{relayed}");
    a.respond(&relayed["id"], json!({"action": "decline"}))
        .await;
    let _ = a.response(&id).await;
    h.stop(&[&a]).await;
}
