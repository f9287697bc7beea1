//! DNS rebinding and header smuggling over the wire: refused with 403 before authentication and before the body
//! is read (the grammar itself is tested beside `origin`).

use super::Served;
use serde_json::json;

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
