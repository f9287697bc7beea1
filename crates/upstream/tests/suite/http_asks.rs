//! What an HTTP upstream asks toolgate's side (sampling here) reaches the gateway as an `Event::Request` on
//! every HTTP link, as stdio's do, and the answer POSTed back reaches the server: on a call's own answer stream
//! (named by the call's caller, exactly, however many calls are in flight), on the GET stream (no caller), and
//! on the HTTP+SSE stream (no caller: that transport says nothing of which call a request belongs to).

use crate::http_links::{entry, ready, start, LONG};
use crate::peer::{Call, Mode, Peer};
use serde_json::{json, Value};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use upstream::{Event, Upstream};

/// The next upstream request among `events`, as (id, method, caller).
async fn next_request(events: &mut mpsc::Receiver<Event>) -> (Value, String, Option<u64>) {
    let deadline = Instant::now() + LONG;
    loop {
        let event = tokio::time::timeout_at(deadline.into(), events.recv())
            .await
            .expect("the upstream's request arrives")
            .expect("events open");
        if let Event::Request {
            id, method, caller, ..
        } = event
        {
            return (id, method, caller);
        }
    }
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "model": "test", "content": {"type": "text", "text": text}})
}

/// Calls `echo` for `caller` on its own task.
fn call_for(up: &std::sync::Arc<Upstream>, caller: u64) -> tokio::task::JoinHandle<Value> {
    let conn = up.connection().unwrap();
    let timeout = up.request_timeout();
    tokio::spawn(async move {
        let params = json!({"name": "echo", "arguments": {"text": "x"}});
        conn.request_for(
            caller,
            "tools/call",
            Some(params),
            timeout,
            &CancellationToken::new(),
        )
        .await
        .unwrap()
    })
}

#[tokio::test]
async fn http_upstream_sampling_on_a_calls_stream_reaches_that_call_and_its_answer_reaches_the_server(
) {
    let peer = Peer::start(Mode {
        call: Call::Asks,
        ..Mode::default()
    })
    .await;
    let (up, mut events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    // Two calls in flight: each one's request names its own caller, never the other's.
    let first = call_for(&up, 41);
    let second = call_for(&up, 42);
    let mut callers = Vec::new();
    for _ in 0..2 {
        let (id, method, caller) = next_request(&mut events).await;
        assert_eq!(method, "sampling/createMessage");
        let caller = caller.expect("a request on a call's stream names its call");
        callers.push(caller);
        let conn = up.connection().unwrap();
        conn.respond(id, Ok(sampled(&format!("for {caller}"))))
            .await
            .unwrap();
    }
    callers.sort_unstable();
    assert_eq!(callers, [41, 42]);
    let texts: Vec<Value> = [first.await.unwrap(), second.await.unwrap()]
        .iter()
        .map(|r| r["content"][0]["text"].clone())
        .collect();
    // The answer POSTed for each request went back to the call that asked it.
    assert!(
        texts.contains(&json!("for 41")) && texts.contains(&json!("for 42")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn http_upstream_request_on_the_get_stream_is_delivered_and_answered() {
    let peer = Peer::start(Mode {
        get_stream: true,
        ..Mode::default()
    })
    .await;
    let (up, mut events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    let deadline = Instant::now() + LONG;
    while peer.state.seen().iter().all(|s| s.method != "GET") {
        assert!(Instant::now() < deadline, "the GET stream was never opened");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let asked = tokio::spawn({
        let state = std::sync::Arc::clone(&peer.state);
        async move { state.ask_on_get().await }
    });
    let (id, method, caller) = next_request(&mut events).await;
    assert_eq!((method.as_str(), caller), ("roots/list", None));
    let conn = up.connection().unwrap();
    conn.respond(id, Ok(json!({"roots": []}))).await.unwrap();
    let answer = asked.await.unwrap();
    assert_eq!(answer["result"], json!({"roots": []}), "{answer}");
}

#[tokio::test]
async fn sse_upstream_sampling_is_delivered_and_its_answer_reaches_the_server() {
    let peer = Peer::start(Mode {
        call: Call::Asks,
        ..Mode::default()
    })
    .await;
    let (up, mut events) = start(entry(&peer.url("/sse"), true, &[]));
    ready(&up).await;
    let call = call_for(&up, 5);
    let (id, method, caller) = next_request(&mut events).await;
    // HTTP+SSE carries everything on one stream: the request names no call, as a stdio server's does.
    assert_eq!((method.as_str(), caller), ("sampling/createMessage", None));
    let conn = up.connection().unwrap();
    conn.respond(id, Ok(sampled("over sse"))).await.unwrap();
    assert_eq!(call.await.unwrap()["content"][0]["text"], "over sse");
}
