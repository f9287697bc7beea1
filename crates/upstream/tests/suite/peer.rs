//! A small MCP server over HTTP for the link tests, written here so each test can make it misbehave: Streamable
//! HTTP in the legacy era (sessions, 400 without one, 404 for a forgotten one) or the modern era (header checks,
//! `server/discover`), the 2024-11-05 HTTP+SSE transport (`/sse` and `/messages`), answers as JSON or event
//! streams, and failures on `tools/call` (a status, garbage, a huge body, silence), or a call that asks the caller
//! to sample before it answers (`Call::Asks`), and a request on the GET stream (`PeerState::ask_on_get`). It
//! records every request.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use axum::routing::{any, get, post};
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

#[derive(Clone, Debug, Default)]
pub enum Call {
    #[default]
    Echo,
    Status(u16),
    Garbage,
    Huge(usize),
    Silent,
    Redirect(String),
    /// Asks the caller to sample before it answers (on the call's own stream, or the HTTP+SSE stream), waits
    /// for the answer to be POSTed back, and answers the call with the sampled text.
    Asks,
}

#[derive(Clone, Debug, Default)]
pub struct Mode {
    pub modern: bool,
    /// Answer requests with an event stream (a progress notification, then the response).
    pub sse_answers: bool,
    pub call: Call,
    /// What the HTTP+SSE `endpoint` event says (default: `/messages`).
    pub endpoint: Option<String>,
    /// Answer a forgotten session with 400 "no valid session ID", as the TypeScript SDK's examples do, not 404.
    pub lost_session_400: bool,
    /// Serve the GET stream of a legacy session (else GET is 405: no stream).
    pub get_stream: bool,
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub rpc: Option<String>,
    pub headers: HeaderMap,
}

#[derive(Default)]
pub struct PeerState {
    pub mode: Mutex<Mode>,
    pub sessions: Mutex<HashSet<String>>,
    pub seen: Mutex<Vec<Seen>>,
    next: Mutex<u64>,
    sse: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// The open GET stream of a Streamable HTTP session.
    get_stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// Requests this server sent, waiting for their answers to be POSTed: by the id it gave them.
    asked: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_ask: Mutex<u64>,
}

impl PeerState {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Sends `roots/list` on the open GET stream (as a server asking outside any call does) and returns its
    /// answer once it is POSTed back.
    pub async fn ask_on_get(&self) -> Value {
        let tx = self
            .get_stream
            .lock()
            .unwrap()
            .clone()
            .expect("a GET stream is open");
        let (id, answer) = self.ask_id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
        tx.send(event(&request)).await.unwrap();
        answer.await.unwrap()
    }

    /// A fresh id for a request this server sends, and where its answer will arrive.
    fn ask_id(&self) -> (String, oneshot::Receiver<Value>) {
        let mut next = self.next_ask.lock().unwrap();
        *next += 1;
        let id = format!("ask-{next}");
        let (tx, rx) = oneshot::channel();
        self.asked.lock().unwrap().insert(id.clone(), tx);
        (id, rx)
    }

    /// An answer to one of this server's requests; false when the message is not one.
    fn answered(&self, msg: &Value) -> bool {
        if msg.get("method").is_some() {
            return false;
        }
        let Some(id) = msg.get("id").and_then(Value::as_str) else {
            return false;
        };
        if let Some(tx) = self.asked.lock().unwrap().remove(id) {
            let _ = tx.send(msg.clone());
        }
        true
    }

    /// Forgets every session, as a restarted server does.
    pub fn forget_sessions(&self) {
        self.sessions.lock().unwrap().clear();
    }
}

pub struct Peer {
    pub addr: SocketAddr,
    pub state: Arc<PeerState>,
    task: tokio::task::JoinHandle<()>,
}

impl Peer {
    pub async fn start(mode: Mode) -> Peer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, mode)
    }

    pub fn serve(listener: tokio::net::TcpListener, mode: Mode) -> Peer {
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(PeerState {
            mode: Mutex::new(mode),
            ..PeerState::default()
        });
        let app = Router::new()
            .route("/mcp", any(mcp))
            .route("/sse", get(sse_open))
            .route("/messages", post(sse_post))
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Peer { addr, state, task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops serving; connections in progress are dropped.
    pub fn stop(&self) {
        self.task.abort();
    }
}

fn record(
    state: &PeerState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    rpc: Option<&Value>,
) {
    state.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.to_owned(),
        rpc: rpc
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        headers: headers.clone(),
    });
}

fn json_response(status: u16, headers: &[(&str, String)], body: &Value) -> Response {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn tools() -> Value {
    json!([{"name": "echo", "description": "Echoes text.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}])
}

/// The answer to one request, or `None` for a notification or a response.
fn answer(msg: &Value, modern: bool) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let method = msg.get("method")?.as_str()?;
    let result = match method {
        "initialize" if !modern => {
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "peer", "version": "1"}})
        }
        "server/discover" if modern => {
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "peer", "version": "1"}}})
        }
        "tools/list" => json!({"tools": tools()}),
        "tools/call" => {
            let text = msg
                .pointer("/params/arguments/text")
                .cloned()
                .unwrap_or(json!(""));
            json!({"content": [{"type": "text", "text": text}]})
        }
        "ping" => json!({}),
        _ => return Some(rpc_error(&id, -32601, "Method not found")),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

async fn mcp(
    State(state): State<Arc<PeerState>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let msg: Option<Value> = serde_json::from_slice(&body).ok();
    record(&state, &method, "/mcp", &headers, msg.as_ref());
    let mode = state.mode.lock().unwrap().clone();
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if method == Method::DELETE {
        if let Some(s) = &session {
            state.sessions.lock().unwrap().remove(s);
        }
        return json_response(200, &[], &json!({}));
    }
    if method == Method::GET && !mode.modern && mode.get_stream {
        return get_stream(&state);
    }
    if method != Method::POST {
        return Response::builder().status(405).body(Body::empty()).unwrap();
    }
    let Some(msg) = msg else {
        return json_response(400, &[], &rpc_error(&Value::Null, -32700, "Parse error"));
    };
    let rpc = msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let mut extra = Vec::new();
    if mode.modern {
        let version = headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok());
        let header_method = headers.get("mcp-method").and_then(|v| v.to_str().ok());
        if msg.get("id").is_some()
            && (version != Some("2026-07-28") || header_method != Some(rpc.as_str()))
        {
            return json_response(400, &[], &rpc_error(&id, -32020, "Header mismatch"));
        }
    } else if rpc == "initialize" {
        let mut next = state.next.lock().unwrap();
        *next += 1;
        let sid = format!("session-{next}");
        state.sessions.lock().unwrap().insert(sid.clone());
        extra.push(("mcp-session-id", sid));
    } else {
        match &session {
            None => {
                return json_response(
                    400,
                    &[],
                    &rpc_error(
                        &Value::Null,
                        -32000,
                        "Bad Request: No valid session ID provided",
                    ),
                )
            }
            Some(s) if !state.sessions.lock().unwrap().contains(s) => {
                return if mode.lost_session_400 {
                    let body = rpc_error(&id, -32000, "Bad Request: No valid session ID provided");
                    json_response(400, &[], &body)
                } else {
                    json_response(
                        404,
                        &[],
                        &rpc_error(&Value::Null, -32001, "Session not found"),
                    )
                };
            }
            Some(_) => {}
        }
    }
    if state.answered(&msg) {
        return Response::builder().status(202).body(Body::empty()).unwrap();
    }
    if rpc == "tools/call" {
        match &mode.call {
            Call::Echo => {}
            Call::Asks => return asking_stream(&state, id),
            Call::Status(s) => {
                return Response::builder()
                    .status(*s)
                    .body(Body::from("boom"))
                    .unwrap()
            }
            Call::Garbage => {
                return Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Body::from("this is not json"))
                    .unwrap()
            }
            Call::Huge(n) => {
                let big = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "x".repeat(*n)}]}});
                return json_response(200, &[], &big);
            }
            Call::Silent => std::future::pending::<()>().await,
            Call::Redirect(to) => {
                return Response::builder()
                    .status(307)
                    .header("location", to)
                    .body(Body::empty())
                    .unwrap()
            }
        }
    }
    let Some(answer) = answer(&msg, mode.modern) else {
        return Response::builder().status(202).body(Body::empty()).unwrap();
    };
    if mode.sse_answers {
        let token = msg
            .pointer("/params/_meta/progressToken")
            .cloned()
            .unwrap_or(json!("none"));
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1}});
        let text = format!("id: 1\ndata: {progress}\n\nid: 2\nevent: message\ndata: {answer}\n\n");
        let mut b = Response::builder()
            .status(200)
            .header("content-type", "text/event-stream");
        for (k, v) in &extra {
            b = b.header(*k, v);
        }
        return b.body(Body::from(text)).unwrap();
    }
    json_response(200, &extra, &answer)
}

async fn sse_open(
    State(state): State<Arc<PeerState>>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    record(&state, &method, "/sse", &headers, None);
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let endpoint = state
        .mode
        .lock()
        .unwrap()
        .endpoint
        .clone()
        .unwrap_or_else(|| "/messages?sessionId=1".into());
    tx.send(Bytes::from(format!(
        "event: endpoint\ndata: {endpoint}\n\n"
    )))
    .await
    .unwrap();
    *state.sse.lock().unwrap() = Some(tx);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn sse_post(
    State(state): State<Arc<PeerState>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let msg: Option<Value> = serde_json::from_slice(&body).ok();
    record(&state, &method, "/messages", &headers, msg.as_ref());
    let Some(msg) = msg else {
        return StatusCode::BAD_REQUEST;
    };
    if state.answered(&msg) {
        return StatusCode::ACCEPTED;
    }
    if msg.get("method").and_then(Value::as_str) == Some("tools/call")
        && matches!(state.mode.lock().unwrap().call, Call::Asks)
    {
        let tx = state.sse.lock().unwrap().clone();
        if let Some(tx) = tx {
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            tokio::spawn(ask_then_answer(Arc::clone(&state), tx, id));
        }
        return StatusCode::ACCEPTED;
    }
    if let Some(answer) = answer(&msg, false) {
        let tx = state.sse.lock().unwrap().clone();
        if let Some(tx) = tx {
            let _ = tx
                .send(Bytes::from(format!("event: message\ndata: {answer}\n\n")))
                .await;
        }
    }
    StatusCode::ACCEPTED
}

/// One event-stream event carrying `msg`.
fn event(msg: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {msg}\n\n"))
}

fn event_stream(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// The GET stream of a legacy session: open until the server drops it.
fn get_stream(state: &Arc<PeerState>) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    *state.get_stream.lock().unwrap() = Some(tx);
    event_stream(rx)
}

/// The answer stream of a call that asks first: the sampling request, then (once its answer came back on a
/// POST) the call's result.
fn asking_stream(state: &Arc<PeerState>, call: Value) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(ask_then_answer(Arc::clone(state), tx, call));
    event_stream(rx)
}

/// Asks on `tx`, waits for the answer, and answers `call` on `tx` with the sampled text.
async fn ask_then_answer(state: Arc<PeerState>, tx: mpsc::Sender<Bytes>, call: Value) {
    let (id, answer) = state.ask_id();
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}});
    if tx.send(event(&request)).await.is_err() {
        return;
    }
    let Ok(answer) = answer.await else { return };
    let said = answer
        .pointer("/result/content/text")
        .cloned()
        .unwrap_or_else(|| json!(format!("no sample: {answer}")));
    let result = json!({"jsonrpc": "2.0", "id": call, "result": {"content": [{"type": "text", "text": said}]}});
    let _ = tx.send(event(&result)).await;
}
