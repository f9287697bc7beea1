//! Legacy sessions: ids required and checked, DELETE, idle expiry, the session bound, the GET stream, and a
//! request's messages on its POST's SSE response.

use super::{call, Conn, Served};
use serde_json::json;
use std::time::Duration;

fn list(id: i64) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

#[tokio::test]
async fn initialize_then_call_answers_json_on_the_session() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    assert!(
        sid.len() >= 32 && sid.bytes().all(|b| b.is_ascii_hexdigit()),
        "{sid}"
    );
    let h = format!("Mcp-Session-Id: {sid}");
    let a = s
        .post(
            &[&h, "MCP-Protocol-Version: 2025-11-25"],
            &call(1, "fx__echo", json!({"text": "hi"})),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.json()["result"]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn missing_session_id_is_400() {
    let s = Served::start().await;
    s.initialize().await;
    let a = s.post(&[], &list(1)).await;
    assert_eq!(a.status, 400, "{}", a.text());
}

#[tokio::test]
async fn unknown_session_id_is_404() {
    let s = Served::start().await;
    let a = s
        .post(
            &["Mcp-Session-Id: 00112233445566778899aabbccddeeff"],
            &list(1),
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.text());
}

#[tokio::test]
async fn deleted_session_is_404() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let head = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {sid}",
        s.host()
    );
    assert_eq!(s.raw(&head, b"").await.status, 204);
    assert_eq!(
        s.raw(&head, b"").await.status,
        404,
        "a second DELETE finds nothing"
    );
    let a = s.post(&[&format!("Mcp-Session-Id: {sid}")], &list(1)).await;
    assert_eq!(a.status, 404);
}

#[tokio::test]
async fn unsupported_protocol_version_header_is_400() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let a = s
        .post(&[&h, "MCP-Protocol-Version: 1999-01-01"], &list(1))
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), Some(-32022));
    let other = s
        .post(&[&h, "MCP-Protocol-Version: 2025-06-18"], &list(2))
        .await;
    assert_eq!(
        other.status,
        400,
        "a version other than the session's: {}",
        other.text()
    );
    assert_eq!(other.error_code(), Some(-32020));
}

#[tokio::test]
async fn idle_session_expires() {
    let s = Served::with(|c| c.http.limits.session_idle = Duration::from_millis(300)).await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    assert_eq!(
        s.post(&[&h], &list(1)).await.status,
        200,
        "used in time, it lives"
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        s.post(&[&h], &list(2)).await.status,
        404,
        "idle past the limit, it is gone"
    );
}

#[tokio::test]
async fn sessions_beyond_the_limit_are_503_with_retry_after() {
    let s = Served::with(|c| c.http.limits.max_sessions = 2).await;
    s.initialize().await;
    let second = s.initialize().await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let a = s.post(&[], &init).await;
    assert_eq!(a.status, 503);
    assert!(a.header("retry-after").is_some());
    let head = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {second}",
        s.host()
    );
    assert_eq!(s.raw(&head, b"").await.status, 204);
    assert_eq!(
        s.post(&[], &init).await.status,
        200,
        "an ended session frees its place"
    );
}

#[tokio::test]
async fn progress_arrives_on_the_post_as_sse_before_the_result() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let mut req = call(5, "fx__slow", json!({"steps": 3, "delay_ms": 10}));
    req["params"]["_meta"] = json!({"progressToken": "p"});
    let a = s.post(&[&format!("Mcp-Session-Id: {sid}")], &req).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    let text = a.text();
    let data: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(data.len(), 4, "{text}");
    assert!(data[..3]
        .iter()
        .all(|m| m["method"] == "notifications/progress"));
    assert_eq!(data[3]["id"], 5);
    assert!(
        text.contains("id: 1\n") && text.contains("id: 4\n"),
        "events carry ids: {text}"
    );
}

#[tokio::test]
async fn second_get_stream_is_409_and_get_needs_a_session() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}",
        s.host()
    );
    let mut first = Conn::open(s.addr).await;
    first.send(&head, b"").await;
    let (status, headers) = first.head().await;
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && v == "text/event-stream"));
    assert_eq!(s.raw(&head, b"").await.status, 409);
    let none = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream",
        s.host()
    );
    assert_eq!(s.raw(&none, b"").await.status, 400);
    // Ending the session ends its GET stream.
    let del = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {sid}",
        s.host()
    );
    assert_eq!(s.raw(&del, b"").await.status, 204);
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while first.chunk().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the GET stream ends with its session");
}

#[tokio::test]
async fn notifications_and_responses_are_202() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let n = s
        .post(
            &[&h],
            &json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
        )
        .await;
    assert_eq!((n.status, n.body.len()), (202, 0));
    let r = s
        .post(
            &[&h],
            &json!({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}),
        )
        .await;
    assert_eq!((r.status, r.body.len()), (202, 0));
}

#[tokio::test]
async fn a_request_id_in_flight_twice_is_refused() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let mut slow = Conn::open(s.addr).await;
    let body = call(7, "fx__slow", json!({"steps": 20, "delay_ms": 50})).to_string();
    slow.send(&s.post_head(&[&h], body.len()), body.as_bytes())
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let again = s
        .post(&[&h], &call(7, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(again.status, 400, "{}", again.text());
    assert_eq!(
        slow.answer().await.json()["id"],
        7,
        "the first request still gets its own answer"
    );
}

/// An upstream's question during a call reaches the client on that call's SSE response; the client answers with
/// a POST of its own (202), and the call's result follows on the first stream.
#[tokio::test]
async fn upstream_elicitation_rides_on_the_calls_stream_and_its_answer_is_a_post() {
    let s = Served::start().await;
    let sid = s.initialize_with(json!({"elicitation": {}})).await;
    let h = format!("Mcp-Session-Id: {sid}");
    let mut conn = Conn::open(s.addr).await;
    let body = call(3, "fx__elicit", json!({"message": "proceed?"})).to_string();
    conn.send(&s.post_head(&[&h], body.len()), body.as_bytes())
        .await;
    let (status, _) = conn.head().await;
    assert_eq!(status, 200);
    let event = String::from_utf8(conn.chunk().await.expect("an event")).unwrap();
    let data = event
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap();
    let question: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    assert_eq!(s.post(&[&h], &answer).await.status, 202);
    let mut rest = String::new();
    while let Some(chunk) = conn.chunk().await {
        rest.push_str(&String::from_utf8(chunk).unwrap());
    }
    let last = rest
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap();
    let result: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(result["id"], 3);
    assert_eq!(result["result"]["content"][0]["text"], "accept", "{result}");
}

/// A list change that happens before the client opened its GET stream is not lost: it is delivered first when
/// the stream opens.
#[tokio::test]
async fn session_messages_before_the_get_stream_opens_are_delivered_on_it() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let a = s
        .post(&[&h], &call(1, "fx__add_tool", json!({"name": "fresh"})))
        .await;
    assert_eq!(a.status, 200, "{}", a.text());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {sid}",
        s.host()
    );
    let mut get = Conn::open(s.addr).await;
    get.send(&head, b"").await;
    assert_eq!(get.head().await.0, 200);
    let event = tokio::time::timeout(Duration::from_secs(10), get.chunk())
        .await
        .expect("an event")
        .expect("the stream is open");
    let event = String::from_utf8(event).unwrap();
    assert!(
        event.contains("notifications/tools/list_changed"),
        "{event}"
    );
}
