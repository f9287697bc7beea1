//! Bounds: body size, requests in flight, undecodable bodies, batches, and a client that stops reading its
//! response stream.

use super::{call, Conn, Served};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn body_over_the_limit_is_413_by_its_length() {
    let s = Served::with(|c| c.http.limits.max_body_bytes = 1000).await;
    let mut conn = Conn::open(s.addr).await;
    // Declares more than the limit and sends almost nothing: refused without waiting for the rest.
    conn.send(&s.post_head(&[], 5_000_000), b"{").await;
    assert_eq!(conn.answer().await.status, 413);
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_413_without_reading_it_all() {
    let s = Served::with(|c| c.http.limits.max_body_bytes = 1000).await;
    let mut conn = Conn::open(s.addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked",
        s.host()
    );
    conn.send(&head, b"").await;
    // 2000 bytes in chunks, and the body never ends: the answer comes once the limit is passed.
    for _ in 0..4 {
        conn.write(format!("1f4\r\n{}\r\n", "x".repeat(500)).as_bytes())
            .await
            .unwrap();
    }
    assert_eq!(conn.answer().await.status, 413);
}

/// A body within the HTTP limit but over the message limit is answered as stdio answers an oversized line: a
/// parse error naming the size, with the id recovered from the body's edges.
#[tokio::test]
async fn body_over_the_message_limit_is_answered_like_an_oversized_line() {
    let s = Served::with(|c| {
        c.limits.max_message_bytes.value = 2048;
        c.http.limits.max_body_bytes = 1 << 20;
    })
    .await;
    let body = call(42, "fx__echo", json!({"text": "x".repeat(10_000)})).to_string();
    let a = s.raw(&s.post_head(&[], body.len()), body.as_bytes()).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), Some(-32700));
    assert_eq!(a.json()["id"], 42, "{}", a.text());
}

#[tokio::test]
async fn undecodable_json_is_a_parse_error_400() {
    let s = Served::start().await;
    let body = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":";
    let a = s.raw(&s.post_head(&[], body.len()), body).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), Some(-32700));
}

#[tokio::test]
async fn batches_are_refused_like_stdio_refuses_them() {
    let s = Served::start().await;
    let body = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).to_string();
    let a = s.raw(&s.post_head(&[], body.len()), body.as_bytes()).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), Some(-32600), "{}", a.text());
}

#[tokio::test]
async fn wrong_accept_or_content_type_is_refused() {
    let s = Served::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: text/html\r\n\
         Content-Length: {}",
        s.host(),
        body.len()
    );
    assert_eq!(s.raw(&head, body.as_bytes()).await.status, 406);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain\r\nContent-Length: {}",
        s.host(),
        body.len()
    );
    assert_eq!(s.raw(&head, body.as_bytes()).await.status, 415);
}

#[tokio::test]
async fn requests_beyond_the_concurrency_limit_are_503() {
    let s = Served::with(|c| c.http.limits.max_concurrent_requests = 1).await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let mut slow = Conn::open(s.addr).await;
    let body = call(1, "fx__slow", json!({"steps": 10, "delay_ms": 50})).to_string();
    slow.send(&s.post_head(&[&h], body.len()), body.as_bytes())
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let busy = s
        .post(&[&h], &call(2, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(busy.status, 503);
    assert!(busy.header("retry-after").is_some());
    assert_eq!(slow.answer().await.status, 200);
    let after = s
        .post(&[&h], &call(3, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(after.status, 200, "the slot comes back");
}

fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// A client that stops reading the SSE response of a call that streams progress without end: toolgate keeps a
/// bounded amount (the session's outbox and the sockets' buffers), then ends the session, which cancels the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_that_never_reads_its_sse_stream_is_bounded_and_closed() {
    const STEPS: u64 = 100_000;
    let s = Served::start().await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let before = rss_bytes();
    let mut stuck = Conn::open_small(s.addr).await;
    let mut req = call(1, "fx__slow", json!({"steps": STEPS, "delay_ms": 0}));
    req["params"]["_meta"] = json!({"progressToken": "flood"});
    let body = req.to_string();
    stuck
        .send(&s.post_head(&[&h], body.len()), body.as_bytes())
        .await;
    // Never read `stuck`. The session must end while the upstream would still have most of its steps to go.
    let mut peak = 0;
    let mut ended = false;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(rss_bytes());
        let probe = s
            .post(
                &[&h],
                &json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}),
            )
            .await;
        if probe.status == 404 {
            ended = true;
            break;
        }
    }
    assert!(
        ended,
        "the session of a client that stopped reading is ended"
    );
    let grown = peak.saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "toolgate grew by {grown} bytes for one stuck client"
    );
    drop(stuck);
}

/// The same for a 2026-07-28 request: its own session ends once its client stops reading, and its call is
/// cancelled upstream instead of running for nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_client_that_never_reads_its_sse_stream_has_its_call_cancelled() {
    let s = Served::start().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "flood"});
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fx__slow", "arguments": {"steps": 100_000, "delay_ms": 0}, "_meta": meta}});
    let body = req.to_string();
    let headers = [
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: fx__slow",
    ];
    let mut stuck = Conn::open_small(s.addr).await;
    stuck
        .send(&s.post_head(&headers, body.len()), body.as_bytes())
        .await;
    let count = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "fx__cancelled", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let probe = [
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: fx__cancelled",
    ];
    let mut cancelled = false;
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let a = s.post(&probe, &count).await;
        if a.json()["result"]["structuredContent"]["cancelled"].as_u64() > Some(0) {
            cancelled = true;
            break;
        }
    }
    assert!(
        cancelled,
        "the call of a client that stopped reading is cancelled upstream"
    );
    drop(stuck);
}

/// A kept-alive connection that sends no next request is closed after `keepAlive`: idle sockets of
/// authenticated callers do not pile up either.
#[tokio::test]
async fn keep_alive_connection_that_sends_nothing_more_is_closed() {
    let s = Served::with(|c| {
        c.http.limits.header_timeout = Duration::from_millis(300);
        c.http.limits.keep_alive = Duration::from_millis(300);
    })
    .await;
    let mut conn = Conn::open(s.addr).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    conn.send(&s.post_head(&[], body.len()), body.as_bytes())
        .await;
    assert_ne!(conn.answer().await.status, 0);
    let start = std::time::Instant::now();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::io::AsyncReadExt::read(conn.reader_mut(), &mut byte),
    )
    .await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
}

/// Without authentication every caller is one identity: a share would only lower the ceiling for every local
/// client, so the ceiling alone applies.
#[tokio::test]
async fn without_authentication_only_the_ceilings_apply() {
    let s = Served::with(|c| {
        c.http.limits.max_sessions = 4;
        c.http.limits.max_sessions_per_identity = 2;
    })
    .await;
    for _ in 0..4 {
        assert_eq!(s.initialize_as(&[]).await.status, 200);
    }
    let full = s.initialize_as(&[]).await;
    assert_eq!(full.status, 503, "{}", full.text());
    assert!(full.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maxSessions"));
}
