//! The WebSocket entry point (`/mcp/ws`) with a real WebSocket client (tokio-tungstenite): a session per socket in
//! both eras, frames decoded as POST bodies are, and the HTTP front end's gates and bounds held on it — the caller
//! check and the caller's profile, Host/Origin, sessions and requests in flight per identity, idle sockets, and
//! shutdown.

use super::http::Served;
use super::http_auth::{digest, http_config, keys_http, serve, two_profiles, KEY_A, KEY_B};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens `/mcp/ws` on `addr` asking for the `mcp` subprotocol, with `headers`; the refusal's status otherwise.
async fn open(addr: SocketAddr, headers: &[(&str, &str)]) -> Result<Socket, u16> {
    let mut request = format!("ws://{addr}/mcp/ws").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "mcp".parse().unwrap());
    for (k, v) in headers {
        let name: tokio_tungstenite::tungstenite::http::HeaderName = k.parse().unwrap();
        request.headers_mut().insert(name, v.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, response)) => {
            let protocol = response.headers().get("sec-websocket-protocol");
            assert_eq!(protocol.and_then(|p| p.to_str().ok()), Some("mcp"));
            Ok(socket)
        }
        Err(Error::Http(response)) => Err(response.status().as_u16()),
        Err(e) => panic!("connecting: {e}"),
    }
}

async fn send(socket: &mut Socket, message: &Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
}

/// The next text frame as JSON, skipping notifications; `None` when the socket closed.
async fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("a frame in time")?;
        match frame.ok()? {
            Message::Text(text) => {
                let v: Value = serde_json::from_str(&text).unwrap();
                if v.get("method").is_none() {
                    return Some(v);
                }
            }
            Message::Close(_) => return None,
            _ => {}
        }
    }
}

/// The close code the server ends the socket with, reading past anything still queued.
async fn close_code(socket: &mut Socket) -> Option<CloseCode> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("the socket ends in time");
        match frame {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return None,
        }
    }
}

async fn request(socket: &mut Socket, id: u64, method: &str, params: Value) -> Value {
    send(
        socket,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await;
    next(socket).await.expect("an answer")
}

async fn initialize(socket: &mut Socket) {
    let init = request(
        socket,
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "ws-test", "version": "1"}}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    send(
        socket,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_socket_is_a_session_in_either_era() {
    let s = Served::start().await;
    let mut legacy = open(s.addr, &[]).await.unwrap();
    initialize(&mut legacy).await;
    let list = request(&mut legacy, 1, "tools/list", json!({})).await;
    assert!(tool_names(&list).contains(&"fx__add".to_owned()), "{list}");
    let sum = request(
        &mut legacy,
        2,
        "tools/call",
        json!({"name": "fx__add", "arguments": {"a": 2, "b": 3}}),
    )
    .await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 5.0, "{sum}");
    let mut modern = open(s.addr, &[]).await.unwrap();
    let list = request(
        &mut modern,
        7,
        "tools/list",
        json!({"_meta": test_support::modern_meta()}),
    )
    .await;
    assert_eq!(list["id"], 7);
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert!(tool_names(&list).contains(&"fx__echo".to_owned()));
}

#[tokio::test]
async fn frames_are_decoded_as_post_bodies_are() {
    let s = Served::with(|c| {
        c.limits.max_message_bytes.value = 2048;
        c.http.limits.max_body_bytes = 8192;
    })
    .await;
    let mut socket = open(s.addr, &[]).await.unwrap();
    socket.send(Message::text("{not json")).await.unwrap();
    let answer = next(&mut socket).await.unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let long =
        json!({"jsonrpc": "2.0", "id": 41, "method": "ping", "params": {"pad": "x".repeat(3000)}});
    send(&mut socket, &long).await;
    let answer = next(&mut socket).await.unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(41), json!(-32700)),
        "{answer}"
    );
    initialize(&mut socket).await;
    // Past the body limit the socket is closed; a binary frame is refused with 1003.
    let huge = json!({"jsonrpc": "2.0", "id": 42, "method": "ping", "params": {"pad": "x".repeat(10_000)}});
    send(&mut socket, &huge).await;
    assert_ne!(close_code(&mut socket).await, Some(CloseCode::Normal));
    let mut other = open(s.addr, &[]).await.unwrap();
    other.send(Message::binary(b"{}".to_vec())).await.unwrap();
    assert_eq!(close_code(&mut other).await, Some(CloseCode::Unsupported));
}

#[tokio::test]
async fn the_callers_gates_hold_before_the_upgrade() {
    let s = serve(keys_http(), two_profiles()).await;
    assert_eq!(open(s.addr, &[]).await.err(), Some(401));
    let bearer = format!("Bearer {KEY_A}");
    assert_eq!(
        open(s.addr, &[("Authorization", "Bearer wrong")])
            .await
            .err(),
        Some(401)
    );
    let evil = [
        ("Authorization", bearer.as_str()),
        ("Origin", "http://evil.com"),
    ];
    assert_eq!(open(s.addr, &evil).await.err(), Some(403), "DNS rebinding");
    // The key's profile decides what the socket's session lists and runs.
    let mut socket = open(s.addr, &[("Authorization", bearer.as_str())])
        .await
        .unwrap();
    initialize(&mut socket).await;
    let names = tool_names(&request(&mut socket, 1, "tools/list", json!({})).await);
    assert!(
        names.contains(&"fx__add".to_owned()) && !names.contains(&"fx__echo".to_owned()),
        "{names:?}"
    );
    let echo = request(
        &mut socket,
        2,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"text": "x"}}),
    )
    .await;
    assert!(
        echo.get("error").is_some() || echo["result"]["isError"] == true,
        "profile a blocks echo: {echo}"
    );
}

#[tokio::test]
async fn a_socket_takes_a_session_and_each_request_a_slot_of_its_identity() {
    let s = Served::with(|c| {
        c.http.limits.max_sessions = 1;
        c.http.limits.max_concurrent_requests = 1;
    })
    .await;
    let mut first = open(s.addr, &[]).await.unwrap();
    initialize(&mut first).await;
    assert_eq!(
        open(s.addr, &[]).await.err(),
        Some(503),
        "every session is open"
    );
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "fx__slow", "arguments": {"steps": 4, "delay_ms": 150}}});
    send(&mut first, &slow).await;
    let refused = request(&mut first, 2, "ping", json!({})).await;
    assert_eq!(refused["id"], 2);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maxConcurrentRequests"),
        "{refused}"
    );
    let done = next(&mut first).await.unwrap();
    assert_eq!(done["id"], 1, "{done}");
    let pong = request(&mut first, 3, "ping", json!({})).await;
    assert_eq!(
        pong["result"],
        json!({}),
        "the slot came back with the response: {pong}"
    );
    first.close(None).await.unwrap();
    drop(first);
    let mut again = None;
    for _ in 0..50 {
        if let Ok(socket) = open(s.addr, &[]).await {
            again = Some(socket);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "a closed socket gives its session back");
}

#[tokio::test]
async fn an_idle_socket_is_closed_and_shutdown_closes_every_socket() {
    let s = Served::with(|c| c.http.limits.session_idle = Duration::from_millis(300)).await;
    let mut idle = open(s.addr, &[]).await.unwrap();
    initialize(&mut idle).await;
    assert_eq!(close_code(&mut idle).await, Some(CloseCode::Normal));
    let mut open_one = open(s.addr, &[]).await.unwrap();
    initialize(&mut open_one).await;
    drop(s);
    assert_eq!(close_code(&mut open_one).await, Some(CloseCode::Away));
}

#[tokio::test]
async fn a_socket_whose_key_a_reload_revokes_is_closed_and_the_key_refused() {
    let s = serve(keys_http(), two_profiles()).await;
    let (bearer_a, bearer_b) = (format!("Bearer {KEY_A}"), format!("Bearer {KEY_B}"));
    let mut a = open(s.addr, &[("Authorization", &bearer_a)]).await.unwrap();
    let mut b = open(s.addr, &[("Authorization", &bearer_b)]).await.unwrap();
    initialize(&mut a).await;
    initialize(&mut b).await;
    let only_b = json!({"auth": {"apiKeys": [
        {"name": "b", "sha256": digest(KEY_B), "profile": "b"},
    ]}});
    let next = s.auth.prepare(&http_config(only_b), |_| Ok(())).unwrap();
    assert_eq!(s.auth.apply(next), 0, "no legacy POST session was open");
    assert_eq!(
        close_code(&mut a).await,
        Some(CloseCode::Policy),
        "the revoked key's socket is closed"
    );
    let listed = request(&mut b, 1, "tools/list", json!({})).await;
    assert!(
        tool_names(&listed).contains(&"fx__echo".to_owned()),
        "the kept key's socket carries on: {listed}"
    );
    assert_eq!(
        open(s.addr, &[("Authorization", &bearer_a)]).await.err(),
        Some(401),
        "the revoked key opens no new socket"
    );
}

#[tokio::test]
async fn a_reload_that_turns_authentication_off_is_refused() {
    let s = serve(keys_http(), two_profiles()).await;
    let refused = s.auth.prepare(&http_config(json!({})), |_| Ok(())).err();
    assert!(
        refused.is_some_and(|e| e.to_string().contains("takes a restart")),
        "an authenticated server is never opened to everyone by a reload"
    );
    let bearer = format!("Bearer {KEY_A}");
    assert!(open(s.addr, &[("Authorization", &bearer)]).await.is_ok());
    assert_eq!(open(s.addr, &[]).await.err(), Some(401));
}
