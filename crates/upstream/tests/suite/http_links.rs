//! HTTP upstreams end to end at the upstream crate's edge: `Upstream::start` with an `"http"` or `"sse"` entry
//! against the peer server of `peer`, through the handshake, the catalog, calls, failures, a forgotten session, a
//! server that goes away, and the headers each request carried.

use crate::peer::{Call, Mode, Peer};
use config::{Protocol, ServerConfig, ServerKind, ToolFilter, Transport};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use upstream::{CallError, Era, Event, Options, Sinks, State, Upstream};

pub(crate) const LONG: Duration = Duration::from_secs(20);

pub(crate) fn entry(url: &str, sse: bool, headers: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        name: "remote".into(),
        transport: Transport::Http {
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            sse,
        },
        protocol: Protocol::Auto,
        kind: ServerKind::Generic,
        request_timeout: Some(Duration::from_secs(2)),
        startup_timeout: Some(Duration::from_secs(5)),
        tools: ToolFilter::default(),
        notes: Vec::new(),
        sandbox: Default::default(),
    }
}

fn options() -> Options {
    Options {
        first_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        // Long, so a probe that fell back only after it would show in the time the start takes.
        probe_timeout: Duration::from_secs(10),
        limits: jsonrpc::Limits {
            max_message_bytes: 256 * 1024,
            ..jsonrpc::Limits::default()
        },
        ..Options::default()
    }
}

pub(crate) fn start(config: ServerConfig) -> (Arc<Upstream>, mpsc::Receiver<Event>) {
    let (events, rx) = mpsc::channel(256);
    let sinks = Sinks {
        events,
        progress: None,
    };
    (Upstream::start(config, options(), sinks), rx)
}

pub(crate) async fn ready(up: &Upstream) {
    let deadline = Instant::now() + LONG;
    while up.status().state != State::Ready {
        assert!(Instant::now() < deadline, "never ready: {:?}", up.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn call(up: &Upstream, text: &str) -> Result<Value, CallError> {
    let conn = up.connection()?;
    let params = json!({"name": "echo", "arguments": {"text": text}});
    conn.request(
        "tools/call",
        Some(params),
        up.request_timeout(),
        &CancellationToken::new(),
    )
    .await
}

fn header<'a>(seen: &'a crate::peer::Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn legacy_streamable_server_is_initialized_and_called_in_its_session() {
    let peer = Peer::start(Mode::default()).await;
    let started = Instant::now();
    let (up, _events) = start(entry(&peer.url("/mcp"), false, &[("X-Api-Key", "k-123")]));
    ready(&up).await;
    // The probe's 400 is read as "legacy" at once, not after the probe timeout.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(up.catalog().era, Some(Era::Legacy("2025-11-25".into())));
    assert_eq!(up.catalog().tools.len(), 1);
    let result = call(&up, "hello").await.unwrap();
    assert_eq!(result["content"][0]["text"], "hello");

    let seen = peer.state.seen();
    let init = seen
        .iter()
        .find(|s| s.rpc.as_deref() == Some("initialize"))
        .unwrap();
    assert_eq!(header(init, "mcp-session-id"), None);
    let accept = header(init, "accept").unwrap();
    assert!(
        accept.contains("application/json") && accept.contains("text/event-stream"),
        "{accept}"
    );
    for s in seen.iter().filter(|s| {
        matches!(
            s.rpc.as_deref(),
            Some("tools/list" | "tools/call" | "notifications/initialized")
        )
    }) {
        assert_eq!(header(s, "mcp-session-id"), Some("session-1"), "{s:?}");
        assert_eq!(
            header(s, "mcp-protocol-version"),
            Some("2025-11-25"),
            "{s:?}"
        );
        assert_eq!(header(s, "x-api-key"), Some("k-123"));
        assert_eq!(header(s, "content-type"), Some("application/json"));
    }
    // After `initialized`, the GET stream was asked for (the peer answers 405: no stream).
    assert!(seen.iter().any(|s| s.method == "GET"), "{seen:?}");

    up.shutdown().await;
    let seen = peer.state.seen();
    let delete = seen
        .iter()
        .find(|s| s.method == "DELETE")
        .expect("the session is deleted at shutdown");
    assert_eq!(header(delete, "mcp-session-id"), Some("session-1"));
}

#[tokio::test]
async fn answers_on_event_streams_are_delivered_with_what_precedes_them() {
    let peer = Peer::start(Mode {
        sse_answers: true,
        ..Mode::default()
    })
    .await;
    let (up, mut events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    assert_eq!(
        call(&up, "streamed").await.unwrap()["content"][0]["text"],
        "streamed"
    );
    // The progress notification before the answer arrived as well (no client owns its token here).
    let deadline = Instant::now() + LONG;
    loop {
        let event = tokio::time::timeout_at(deadline.into(), events.recv())
            .await
            .unwrap()
            .unwrap();
        if matches!(&event, Event::Notification { method, .. } if method == "notifications/progress")
        {
            break;
        }
    }
}

#[tokio::test]
async fn modern_server_over_http_is_used_modern_with_its_headers() {
    let peer = Peer::start(Mode {
        modern: true,
        ..Mode::default()
    })
    .await;
    let (up, _events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    assert_eq!(up.catalog().era, Some(Era::Modern));
    assert_eq!(call(&up, "now").await.unwrap()["content"][0]["text"], "now");
    let seen = peer.state.seen();
    assert!(
        !seen.iter().any(|s| s.rpc.as_deref() == Some("initialize")),
        "{seen:?}"
    );
    let call = seen
        .iter()
        .find(|s| s.rpc.as_deref() == Some("tools/call"))
        .unwrap();
    assert_eq!(header(call, "mcp-method"), Some("tools/call"));
    assert_eq!(header(call, "mcp-name"), Some("echo"));
    assert_eq!(header(call, "mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(header(call, "mcp-session-id"), None);
}

#[tokio::test]
async fn stale_upstream_session_is_reestablished_not_an_empty_success() {
    for lost_session_400 in [false, true] {
        stale_session(Mode {
            lost_session_400,
            ..Mode::default()
        })
        .await;
    }
}

async fn stale_session(mode: Mode) {
    let peer = Peer::start(mode).await;
    let (up, _events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    peer.state.forget_sessions();
    let started = Instant::now();
    let err = call(&up, "again").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "answered at once"
    );
    let CallError::Rpc(error) = &err else {
        panic!("{err:?}");
    };
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("session expired") && message.contains("re-established"),
        "{message}"
    );
    // The call was not retried: the server saw one tools/call.
    let calls = |peer: &Peer| {
        peer.state
            .seen()
            .iter()
            .filter(|s| s.rpc.as_deref() == Some("tools/call"))
            .count()
    };
    assert_eq!(calls(&peer), 1);
    // A new session is started, and the next call goes through in it.
    let deadline = Instant::now() + LONG;
    while up.status().restarts == 0 || up.status().state != State::Ready {
        assert!(Instant::now() < deadline, "{:?}", up.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        call(&up, "again").await.unwrap()["content"][0]["text"],
        "again"
    );
    let last = peer
        .state
        .seen()
        .into_iter()
        .rev()
        .find(|s| s.rpc.as_deref() == Some("tools/call"))
        .unwrap();
    assert_eq!(header(&last, "mcp-session-id"), Some("session-2"));
}

#[tokio::test]
async fn http_failures_answer_the_call_at_once_and_never_as_success() {
    let peer = Peer::start(Mode::default()).await;
    let (up, _events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    let mode = |call| {
        *peer.state.mode.lock().unwrap() = Mode {
            call,
            ..Mode::default()
        }
    };

    mode(Call::Status(500));
    let started = Instant::now();
    let err = call(&up, "x").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(
        matches!(&err, CallError::Rpc(e) if e["message"].as_str().unwrap().contains("HTTP 500")),
        "{err:?}"
    );

    mode(Call::Garbage);
    let err = call(&up, "x").await.unwrap_err();
    assert!(
        matches!(&err, CallError::Rpc(e) if e["message"].as_str().unwrap().contains("without a JSON-RPC response")),
        "{err:?}"
    );

    // Four times the limit.
    mode(Call::Huge(1024 * 1024));
    let err = call(&up, "x").await.unwrap_err();
    assert!(matches!(err, CallError::TooLarge { .. }), "{err:?}");

    mode(Call::Silent);
    let err = call(&up, "x").await.unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");

    // None of these ended the session: the next call is served.
    mode(Call::Echo);
    assert_eq!(
        call(&up, "fine").await.unwrap()["content"][0]["text"],
        "fine"
    );
}

#[tokio::test]
async fn redirects_are_not_followed_so_headers_never_reach_another_address() {
    let elsewhere = Peer::start(Mode::default()).await;
    let peer = Peer::start(Mode::default()).await;
    let (up, _events) = start(entry(
        &peer.url("/mcp"),
        false,
        &[("Authorization", "Bearer upstream-secret")],
    ));
    ready(&up).await;
    *peer.state.mode.lock().unwrap() = Mode {
        call: Call::Redirect(elsewhere.url("/mcp")),
        ..Mode::default()
    };
    let err = call(&up, "x").await.unwrap_err();
    let CallError::Rpc(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&elsewhere.url("/mcp")),
        "{e}"
    );
    assert!(elsewhere.state.seen().is_empty());
}

#[tokio::test]
async fn refused_connection_is_reported_with_the_url_and_retried() {
    // A port nothing listens on: bind one, note it, close it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/mcp?token=secret");
    let (up, _events) = start(entry(&url, false, &[]));
    up.wait_settled(LONG).await;
    let deadline = Instant::now() + LONG;
    while up.status().restarts < 2 {
        assert!(Instant::now() < deadline, "{:?}", up.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = up.status();
    assert_ne!(status.state, State::Ready);
    let error = status.last_error.unwrap();
    assert!(
        error.contains(&format!("cannot reach http://{addr}/mcp")),
        "{error}"
    );
    assert!(
        !error.contains("secret"),
        "the query is never shown: {error}"
    );
    // A call now fails at once with the reason.
    let err = call(&up, "x").await.unwrap_err();
    assert!(matches!(err, CallError::Unavailable { .. }), "{err:?}");

    // The server comes up on that address: the next restart connects.
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let _peer = Peer::serve(listener, Mode::default());
    ready(&up).await;
    assert_eq!(call(&up, "up").await.unwrap()["content"][0]["text"], "up");
}

#[tokio::test]
async fn server_going_away_mid_life_fails_calls_at_once_and_is_retried() {
    let peer = Peer::start(Mode::default()).await;
    let (up, _events) = start(entry(&peer.url("/mcp"), false, &[]));
    ready(&up).await;
    peer.stop();
    // Give the listener a moment to close.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let err = call(&up, "x").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "{err:?}");
    let deadline = Instant::now() + LONG;
    while up.status().restarts == 0 {
        assert!(Instant::now() < deadline, "{:?}", up.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let error = up.status().last_error.unwrap_or_default();
    assert!(error.contains("cannot reach"), "{error}");
}

#[tokio::test]
async fn sse_transport_lists_and_calls_over_its_endpoint() {
    let peer = Peer::start(Mode::default()).await;
    let (up, _events) = start(entry(&peer.url("/sse"), true, &[("X-Api-Key", "k-9")]));
    ready(&up).await;
    assert_eq!(up.catalog().era, Some(Era::Legacy("2025-11-25".into())));
    assert_eq!(call(&up, "sse").await.unwrap()["content"][0]["text"], "sse");
    let seen = peer.state.seen();
    assert!(seen
        .iter()
        .filter(|s| s.path == "/messages")
        .all(|s| header(s, "x-api-key") == Some("k-9")));
    assert!(seen
        .iter()
        .any(|s| s.path == "/messages" && s.rpc.as_deref() == Some("tools/call")));
}

#[tokio::test]
async fn sse_endpoint_on_another_origin_is_refused() {
    let evil = Peer::start(Mode::default()).await;
    for endpoint in [
        evil.url("/messages"),
        format!("//{}/messages", evil.addr),
        format!("https://{}/messages", evil.addr),
    ] {
        let peer = Peer::start(Mode {
            endpoint: Some(endpoint.clone()),
            ..Mode::default()
        })
        .await;
        let (up, _events) = start(entry(
            &peer.url("/sse"),
            true,
            &[("Authorization", "Bearer upstream-secret")],
        ));
        up.wait_settled(LONG).await;
        let status = up.status();
        assert_ne!(status.state, State::Ready, "{endpoint}");
        assert!(
            status
                .last_error
                .unwrap_or_default()
                .contains("another origin"),
            "{endpoint}"
        );
        up.shutdown().await;
    }
    assert!(
        evil.state.seen().is_empty(),
        "nothing was sent to the other origin"
    );
}

/// At the link's edge: what an upstream receives is the configured headers and the protocol's own, nothing else,
/// so no header of a client's request (its `Authorization` above all) can reach it.
#[tokio::test]
async fn client_authorization_is_never_forwarded_upstream() {
    let peer = Peer::start(Mode::default()).await;
    let (up, _events) = start(entry(
        &peer.url("/mcp"),
        false,
        &[("Authorization", "Bearer for-upstream")],
    ));
    ready(&up).await;
    call(&up, "x").await.unwrap();
    let allowed = [
        "authorization",
        "accept",
        "content-type",
        "content-length",
        "host",
        "user-agent",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "accept-encoding",
    ];
    for s in peer.state.seen() {
        for name in s.headers.keys() {
            // Each once: a repeated protocol header is refused by real servers (two versions are no version).
            assert_eq!(
                s.headers.get_all(name).iter().count(),
                1,
                "{name} repeated on {s:?}"
            );
            assert!(
                allowed.contains(&name.as_str()),
                "unexpected header {name} on {s:?}"
            );
        }
        let auth: Vec<_> = s.headers.get_all("authorization").iter().collect();
        assert_eq!(auth, ["Bearer for-upstream"], "{s:?}");
    }
}
