//! DNS rebinding and header smuggling over the wire: refused with 403 before authentication and before the body
//! is read (the grammar itself is tested beside `origin`). And callers that try to take what others need: one
//! identity's sessions or request slots, sockets that never finish their headers, bodies announced and never
//! sent, a GET stream held open to keep a session from idling out.

use super::{bearer, call, keys, Conn, Served};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

fn ping() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string()
}

/// A POST with `host` and extra header lines, nothing else.
async fn post_with(s: &Served, host_lines: &[&str]) -> super::Answer {
    let body = ping();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}",
        body.len()
    );
    for l in host_lines {
        head.push_str("\r\n");
        head.push_str(l);
    }
    s.raw(&head, body.as_bytes()).await
}

#[tokio::test]
async fn origin_null_is_forbidden() {
    let s = Served::start().await;
    let host = format!("Host: {}", s.host());
    let a = post_with(&s, &[&host, "Origin: null"]).await;
    assert_eq!(a.status, 403, "{}", a.text());
    assert!(a.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Origin"));
}

#[tokio::test]
async fn foreign_and_lookalike_origins_are_forbidden() {
    let s = Served::start().await;
    let host = format!("Host: {}", s.host());
    let port = s.addr.port();
    for origin in [
        "http://evil.com".to_owned(),
        format!("http://[::1].evil.example:{port}"),
        format!("http://localhost.evil.example:{port}"),
        format!("http://localhost:{port}@evil.com"),
        format!("http://localhost:{}", port.wrapping_add(1)),
        format!("file://localhost:{port}"),
    ] {
        let a = post_with(&s, &[&host, &format!("Origin: {origin}")]).await;
        assert_eq!(a.status, 403, "{origin}: {}", a.text());
    }
    let ok = post_with(&s, &[&host, &format!("Origin: http://localhost:{port}")]).await;
    assert_ne!(
        ok.status, 403,
        "a loopback origin on the listening port is let in"
    );
}

#[tokio::test]
async fn duplicate_host_headers_are_forbidden() {
    let s = Served::start().await;
    let host = format!("Host: {}", s.host());
    let a = post_with(&s, &[&host, &host]).await;
    // hyper may refuse the request itself; either way it never reaches a session.
    assert!(a.status == 403 || a.status == 400, "{}", a.status);
}

#[tokio::test]
async fn duplicate_origin_headers_are_forbidden() {
    let s = Served::start().await;
    let host = format!("Host: {}", s.host());
    let origin = format!("Origin: http://localhost:{}", s.addr.port());
    let a = post_with(&s, &[&host, &origin, &origin]).await;
    assert_eq!(a.status, 403, "{}", a.text());
}

#[tokio::test]
async fn rebound_host_name_is_forbidden() {
    let s = Served::start().await;
    let port = s.addr.port();
    for host in [
        format!("Host: attacker.example:{port}"),
        format!("Host: localhost.attacker.example:{port}"),
        format!("Host: 127.1:{port}"),
        "Host: localhost".to_owned(),
    ] {
        let a = post_with(&s, &[&host]).await;
        assert_eq!(a.status, 403, "{host}: {}", a.text());
    }
}

#[tokio::test]
async fn non_ascii_host_or_origin_is_forbidden() {
    let s = Served::start().await;
    let port = s.addr.port();
    let body = ping();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://l\u{f6}calhost:{port}\r\n\
         Content-Type: application/json\r\nContent-Length: {}",
        body.len()
    );
    let a = s.raw(&head, body.as_bytes()).await;
    assert_eq!(a.status, 403, "{}", a.text());
}

/// The check comes before the body is read: a request declaring a huge body it never sends is refused at once.
#[tokio::test]
async fn forbidden_origin_is_refused_before_the_body_is_read() {
    let s = Served::start().await;
    let mut conn = super::Conn::open(s.addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nOrigin: http://evil.com\r\nContent-Type: application/json\r\n\
         Content-Length: 1000000000",
        s.host()
    );
    conn.send(&head, b"{").await;
    let a = conn.answer().await;
    assert_eq!(a.status, 403);
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    let s = Served::start().await;
    for method in ["PUT", "PATCH"] {
        let head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: 0",
            s.host()
        );
        let a = s.raw(&head, b"").await;
        assert_eq!(a.status, 405, "{method}");
        let allow = a.header("allow").unwrap_or_default().to_owned();
        assert!(
            allow.contains("POST") && allow.contains("DELETE"),
            "{allow}"
        );
    }
}

#[tokio::test]
async fn configured_keys_refuse_a_request_without_a_bearer() {
    let s = Served::with(|c| {
        c.http.auth.api_keys.push(config::ApiKey {
            name: "ci".into(),
            sha256: [7; 32],
            profile: None,
        })
    })
    .await;
    let a = s
        .post(&[], &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(a.status, 401);
    assert!(a
        .header("www-authenticate")
        .unwrap_or_default()
        .starts_with("Bearer"));
}

#[tokio::test]
async fn one_key_with_max_sessions_does_not_lock_out_another_key() {
    let s = Served::with(|c| {
        keys(c, &["a", "b"]);
        c.http.limits.max_sessions = 8;
        c.http.limits.max_sessions_per_identity = 4;
    })
    .await;
    let (a, b) = (bearer("a"), bearer("b"));
    for _ in 0..4 {
        assert_eq!(s.initialize_as(&[&a]).await.status, 200);
    }
    let refused = s.initialize_as(&[&a]).await;
    assert_eq!(refused.status, 429, "{}", refused.text());
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1, "when the first of its sessions idles out");
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("maxSessionsPerIdentity") && message.contains("DELETE"),
        "names the bound and what frees it: {message}"
    );
    for _ in 0..4 {
        assert_eq!(
            s.initialize_as(&[&b]).await.status,
            200,
            "another key still opens its sessions"
        );
    }
}

/// The flood: 1,100 keyless sockets that send part of a request head and stop. They are closed by the
/// header clock (and the oldest as soon as too many are pending), and a keyed client is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_connections_that_never_finish_headers_are_closed_and_keyed_client_is_served() {
    const FLOOD: usize = 1_100;
    let timeout = Duration::from_millis(600);
    let s = Served::with(|c| {
        keys(c, &["a"]);
        c.http.limits.header_timeout = timeout;
        c.http.limits.max_pending_connections = 256;
    })
    .await;
    let partial = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Le", s.host());
    let mut flood = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let mut conn = Conn::open(s.addr).await;
        conn.write(partial.as_bytes()).await.unwrap();
        flood.push(conn);
    }
    let start = Instant::now();
    let served = tokio::time::timeout(Duration::from_secs(3), s.initialize_as(&[&bearer("a")]))
        .await
        .expect("the keyed client is answered while the flood holds its sockets");
    assert_eq!(served.status, 200, "{}", served.text());
    assert!(start.elapsed() < Duration::from_secs(2));
    // Every flood socket is closed by the server within the header clock (plus scheduling slack).
    let deadline = Instant::now() + timeout + Duration::from_secs(2);
    for mut conn in flood {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(left, conn.reader_mut().read(&mut byte)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "a socket that never finished its head is closed by the server: {read:?}"
        );
    }
}

/// An attacker with 2,000 sockets that keeps opening them the while a keyed client works: the pending bound
/// closes the oldest, never the keyed client's connection, which authenticates as soon as its head arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_client_is_served_while_keyless_sockets_keep_arriving() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let s = Served::with(|c| {
        keys(c, &["a"]);
        c.http.limits.header_timeout = Duration::from_secs(2);
        c.http.limits.max_pending_connections = 256;
    })
    .await;
    let (addr, opened, done) = (
        s.addr,
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let flood = tokio::spawn({
        let (opened, done) = (Arc::clone(&opened), Arc::clone(&done));
        async move {
            let mut held = Vec::new();
            while held.len() < 2_000 && !done.load(Ordering::Relaxed) {
                if let Ok(c) = tokio::net::TcpStream::connect(addr).await {
                    held.push(c);
                    opened.fetch_add(1, Ordering::Relaxed);
                }
            }
            held
        }
    });
    // The keyed client starts once the flood is past the bound, so every later accept closes someone.
    let start = Instant::now();
    while opened.load(Ordering::Relaxed) < 300 && start.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        opened.load(Ordering::Relaxed) >= 300,
        "the flood is under way"
    );
    for _ in 0..5 {
        let served = tokio::time::timeout(Duration::from_secs(3), s.initialize_as(&[&bearer("a")]))
            .await
            .expect("answered in time");
        assert_eq!(served.status, 200);
    }
    done.store(true, Ordering::Relaxed);
    let held = flood.await.unwrap();
    assert!(
        held.len() > 256,
        "the flood outgrew the bound: {}",
        held.len()
    );
}

/// Keyless requests that are complete but refused (401) do not keep their connection: it never authenticated,
/// so it is closed on the header clock like one that sent nothing.
#[tokio::test]
async fn keyless_connection_that_keeps_sending_refused_requests_is_closed() {
    let s = Served::with(|c| {
        keys(c, &["a"]);
        c.http.limits.header_timeout = Duration::from_millis(400);
    })
    .await;
    let body = ping();
    let mut conn = Conn::open(s.addr).await;
    let start = Instant::now();
    let mut closed = false;
    for _ in 0..40 {
        if conn
            .try_send(&s.post_head(&[], body.len()), body.as_bytes())
            .await
            .is_err()
        {
            closed = true;
            break;
        }
        match tokio::time::timeout(Duration::from_secs(2), conn.try_answer()).await {
            Ok(Some(a)) => assert_eq!(a.status, 401),
            _ => {
                closed = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(closed, "the unauthenticated connection was closed");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

/// POSTs that announce a body and never send it hold none of the request slots, which all go to work: another
/// key is served at once, and the stalled ones are cut off with 408 after the body clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_that_never_send_their_body_do_not_take_every_slot() {
    let s = Served::with(|c| {
        keys(c, &["a", "b"]);
        // One identity's share is the whole ceiling: if a stalled body held a request slot, these four would
        // take every one.
        c.http.limits.max_concurrent_requests = 4;
        c.http.limits.max_concurrent_requests_per_identity = 4;
        c.http.limits.body_timeout = Duration::from_millis(700);
    })
    .await;
    let a = bearer("a");
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut conn = Conn::open(s.addr).await;
        conn.send(&s.post_head(&[&a], 1_000), b"{").await;
        stalled.push(conn);
    }
    // Let the four reach their body reads before the fifth arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut beyond = Conn::open(s.addr).await;
    beyond.send(&s.post_head(&[&a], 1_000), b"{").await;
    let over = beyond.answer().await;
    assert_eq!(
        over.status, 429,
        "a fifth stalled body is over a's share of bodies arriving"
    );
    assert!(over.header("retry-after").is_some());
    let start = Instant::now();
    let served = s.initialize_as(&[&bearer("b")]).await;
    assert_eq!(served.status, 200, "{}", served.text());
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "served at once"
    );
    for mut conn in stalled {
        assert_eq!(conn.answer().await.status, 408);
    }
    assert_eq!(
        s.initialize_as(&[&a]).await.status,
        200,
        "a's slots came back"
    );
}

/// Many identities each stalling bodies within their share do not hold memory without bound: bodies arriving
/// have a ceiling across all callers (twice the requests in flight), answered 503 naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_of_many_keys_stop_at_a_ceiling_for_all_callers() {
    let s = Served::with(|c| {
        keys(c, &["a", "b", "c"]);
        c.http.limits.max_concurrent_requests = 2;
        c.http.limits.max_concurrent_requests_per_identity = 2;
        c.http.limits.body_timeout = Duration::from_millis(700);
    })
    .await;
    let mut stalled = Vec::new();
    for key in ["a", "b"] {
        for _ in 0..2 {
            let mut conn = Conn::open(s.addr).await;
            conn.send(&s.post_head(&[&bearer(key)], 1_000), b"{").await;
            stalled.push(conn);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut beyond = Conn::open(s.addr).await;
    beyond
        .send(&s.post_head(&[&bearer("c")], 1_000), b"{")
        .await;
    let over = beyond.answer().await;
    assert_eq!(
        over.status,
        503,
        "a fifth body is over the ceiling: {}",
        over.text()
    );
    assert!(
        over.text().contains("maxConcurrentRequests"),
        "{}",
        over.text()
    );
    assert!(over.header("retry-after").is_some());
    for mut conn in stalled {
        assert_eq!(conn.answer().await.status, 408);
    }
    assert_eq!(
        s.initialize_as(&[&bearer("c")]).await.status,
        200,
        "the ceiling frees as the stalled bodies are cut off"
    );
}

/// A GET stream held open with no request does not keep its session past the idle limit: the session ends and
/// the stream is closed; a POST whose body never arrives does not count as a request either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_get_stream_does_not_keep_an_idle_session_alive() {
    let s = Served::with(|c| {
        c.http.limits.session_idle = Duration::from_millis(500);
        c.http.limits.body_timeout = Duration::from_secs(5);
    })
    .await;
    let sid = s.initialize().await;
    let h = format!("Mcp-Session-Id: {sid}");
    let mut stream = Conn::open(s.addr).await;
    stream
        .send(
            &format!(
                "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{h}",
                s.host()
            ),
            b"",
        )
        .await;
    let (status, _) = stream.head().await;
    assert_eq!(status, 200);
    let mut stalled = Conn::open(s.addr).await;
    stalled.send(&s.post_head(&[&h], 1_000), b"{").await;
    let start = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        while stream.chunk().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the GET stream is closed with its idle session"
    );
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
    let gone = s
        .post(&[&h], &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        .await;
    assert_eq!(gone.status, 404, "the session ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_identity_cannot_take_every_concurrent_request_slot() {
    let s = Served::with(|c| {
        keys(c, &["a", "b"]);
        c.http.limits.max_concurrent_requests = 4;
        c.http.limits.max_concurrent_requests_per_identity = 2;
    })
    .await;
    let (a, b) = (bearer("a"), bearer("b"));
    let session = |who: &str| {
        let who = who.to_owned();
        let s = &s;
        async move {
            let init = s.initialize_as(&[&who]).await;
            assert_eq!(init.status, 200);
            let sid = format!("Mcp-Session-Id: {}", init.header("mcp-session-id").unwrap());
            let note = s
                .post(
                    &[&who, &sid],
                    &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                )
                .await;
            assert_eq!(note.status, 202);
            sid
        }
    };
    let (sa, sb) = (session(&a).await, session(&b).await);
    let mut held = Vec::new();
    for id in 1..=2 {
        let body = call(id, "fx__slow", json!({"steps": 10, "delay_ms": 60})).to_string();
        let mut conn = Conn::open(s.addr).await;
        conn.send(&s.post_head(&[&a, &sa], body.len()), body.as_bytes())
            .await;
        held.push(conn);
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let refused = s
        .post(&[&a, &sa], &call(3, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(refused.header("retry-after").is_some());
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("maxConcurrentRequestsPerIdentity"),
        "{message}"
    );
    let other = s
        .post(&[&b, &sb], &call(4, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(other.status, 200, "another identity keeps its share");
    for mut conn in held {
        assert_eq!(conn.answer().await.status, 200);
    }
    let after = s
        .post(&[&a, &sa], &call(5, "fx__echo", json!({"text": "x"})))
        .await;
    assert_eq!(after.status, 200, "a's slots come back");
}

/// One key's keep-alive sockets cannot take every descriptor: past its share of connections a request is 429
/// and its connection closed, while another key connects.
#[tokio::test]
async fn one_key_holding_many_connections_does_not_lock_out_another_key() {
    let s = Served::with(|c| {
        keys(c, &["a", "b"]);
        c.http.limits.max_connections_per_identity = 3;
    })
    .await;
    let a = bearer("a");
    let body = ping();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut conn = Conn::open(s.addr).await;
        conn.send(&s.post_head(&[&a], body.len()), body.as_bytes())
            .await;
        assert_eq!(conn.answer().await.status, 400, "authenticated, no session");
        held.push(conn);
    }
    let mut fourth = Conn::open(s.addr).await;
    fourth
        .send(&s.post_head(&[&a], body.len()), body.as_bytes())
        .await;
    let refused = fourth.answer().await;
    assert_eq!(refused.status, 429, "{}", refused.text());
    assert!(refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maxConnectionsPerIdentity"));
    let mut byte = [0u8; 1];
    let read =
        tokio::time::timeout(Duration::from_secs(2), fourth.reader_mut().read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "and closed: {read:?}");
    assert_eq!(s.initialize_as(&[&bearer("b")]).await.status, 200);
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        s.initialize_as(&[&a]).await.status,
        200,
        "a closed connection frees its place"
    );
}
