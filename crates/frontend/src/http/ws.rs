//! The WebSocket entry point beside Streamable HTTP: `GET /mcp/ws`, upgraded, one JSON-RPC message per text frame
//! each way. A socket is one gateway session for as long as it is open, as a stdio connection is: a legacy client
//! `initialize`s on it, a 2026-07-28 client sends `_meta` with each request, and everything the session sends —
//! responses, progress, what an upstream asks of the client — arrives as text frames in the order the session
//! queued it. The official TypeScript SDK's `WebSocketClientTransport` speaks this (subprotocol `mcp`).
//!
//! Before the upgrade the request passes the gates every request passes (`Host`/`Origin`, then the caller check)
//! and takes one of its identity's sessions (`maxSessionsPerIdentity`, `maxSessions`, with the refusals a legacy
//! session gets); the session opens under the caller's profile or the upgrade is 403. After it, a frame is bounded
//! by the body limit (`maxBodyBytes`, the socket is closed above it) and decoded under the gateway's message limit
//! as a POST body is (an oversized or undecodable message is answered as a framing error); each request holds one
//! of its identity's requests in flight (`maxConcurrentRequestsPerIdentity`, `maxConcurrentRequests`) until its
//! response is written, and a request beyond them is answered with a JSON-RPC error rather than run. A socket
//! that sends nothing for `sessionIdle` with no request in flight is closed, as is one whose client stops
//! reading (its outbox overflows), one whose caller's credential a reload revoked (1008, `auth_live`), and every
//! socket at shutdown. Binary frames are refused (close 1003). The upgrade request's W3C `traceparent` header,
//! when it has exactly one, is the parent of the spans of every request the socket carries (telemetry on). This
//! module drives the session only through its public API and decides nothing about a message.

use crate::http::auth::Principal;
use crate::http::connections::Ticket;
use crate::http::post::{open_as, requests_message, traceparent};
use crate::http::shares::Held;
use crate::http::sse::answers;
use crate::http::App;
use axum::extract::ws::{close_code, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use gateway::{Drain, FramingError, Id, RequestMeta, Session, Stream};
use jsonrpc::{decode, error_object, error_response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The path of the WebSocket entry point.
pub(crate) const PATH: &str = "/mcp/ws";

/// The subprotocol MCP clients ask for (the TypeScript SDK's `WebSocketClientTransport`).
const SUBPROTOCOL: &str = "mcp";

/// How long a socket that ended waits for its queued output to be written, as stdio's does.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// How much of each end of an oversized frame is searched for its id (as a POST body's).
const EDGE: usize = 512;

/// Requests of this socket in flight, each holding one of its identity's request slots until its response is
/// written (or the client cancels it, or the socket ends).
type InFlight = Arc<Mutex<HashMap<Id, Held>>>;

/// `GET /mcp/ws`, behind the Host/Origin gate and the caller check: takes a session's place, opens the session
/// under the caller's profile, and upgrades.
pub(crate) async fn upgrade(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    ticket: Option<Extension<Arc<Ticket>>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // The connection stays counted against its identity for as long as the socket is open.
    let ticket = ticket.map(|Extension(t)| t);
    let place = match app.sessions.hold(&principal.identity) {
        Ok(held) => held,
        Err(refusal) => return refusal.into_response(),
    };
    let (session, drain) = match open_as(&app, &principal) {
        Ok(opened) => opened,
        Err(refusal) => return refusal.into_response(),
    };
    let max = app.limits.max_body_bytes;
    let meta = RequestMeta {
        protocol_version: None,
        identity: principal.identity.clone(),
        traceparent: traceparent(&headers),
    };
    ws.protocols([SUBPROTOCOL])
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| async move {
            serve(app, socket, session, drain, principal, meta).await;
            drop((place, ticket));
        })
}

/// Serves one socket until it closes, idles out, stops reading, or the server shuts down.
async fn serve(
    app: Arc<App>,
    socket: WebSocket,
    session: Arc<Session>,
    drain: Drain,
    principal: Principal,
    meta: RequestMeta,
) {
    let (sink, mut frames) = socket.split();
    let in_flight: InFlight = Arc::default();
    // Answers the transport itself gives (a request beyond the caller's share), written in turn with the
    // session's messages.
    let (own, own_rx) = mpsc::channel::<String>(16);
    let writer = tokio::spawn(write_loop(drain, own_rx, sink, Arc::clone(&in_flight)));
    let idle = app.limits.session_idle;
    let mut quiet_until = Instant::now() + idle;
    // A reload may have revoked the caller between its check and here: the last revocation is looked at first.
    let mut revocations = app.auth.revocations();
    revocations.mark_changed();
    let close = loop {
        let frame = tokio::select! {
            biased;
            () = app.shutdown.cancelled() => break Some(close_code::AWAY),
            Ok(()) = revocations.changed() => {
                if revocations.borrow_and_update().revokes(&principal) {
                    // A reload revoked the credential this socket was opened with.
                    break Some(close_code::POLICY);
                }
                continue;
            }
            () = session.closed() => break None,
            () = tokio::time::sleep_until(quiet_until) => {
                if lock(&in_flight).is_empty() {
                    break Some(close_code::NORMAL);
                }
                quiet_until = Instant::now() + idle;
                continue;
            }
            f = frames.next() => f,
        };
        quiet_until = Instant::now() + idle;
        match frame {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break None,
            Some(Ok(Message::Text(text))) => {
                let reader = Reader {
                    app: &app,
                    session: &session,
                    meta: &meta,
                    in_flight: &in_flight,
                    own: &own,
                };
                reader.frame(text.as_bytes()).await;
            }
            Some(Ok(Message::Binary(_))) => break Some(close_code::UNSUPPORTED),
            // Pings are answered by the socket itself.
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
        }
    };
    session.close();
    drop(session);
    drop(own);
    // Running requests were cancelled; the writer ends once what they queued is written.
    if let Ok(Ok(mut sink)) = tokio::time::timeout(FLUSH_WAIT, writer).await {
        if let Some(code) = close {
            let reason = match code {
                close_code::UNSUPPORTED => "one JSON-RPC message per text frame",
                close_code::AWAY => "the server is shutting down",
                _ => "idle",
            };
            let frame = CloseFrame {
                code,
                reason: reason.into(),
            };
            let _ = sink.send(Message::Close(Some(frame))).await;
        }
        let _ = sink.close().await;
    }
}

/// What one socket's reader needs to hand a frame to its session.
struct Reader<'a> {
    app: &'a App,
    session: &'a Arc<Session>,
    meta: &'a RequestMeta,
    in_flight: &'a InFlight,
    own: &'a mpsc::Sender<String>,
}

impl Reader<'_> {
    /// One text frame: decoded as a POST body is, then handed to the session, a request only with a slot.
    async fn frame(&self, bytes: &[u8]) {
        let limits = self.app.decode_limits;
        if bytes.len() > limits.max_message_bytes {
            let edge = EDGE.min(bytes.len());
            let id = jsonrpc::recover_id(&bytes[..edge], &bytes[bytes.len() - edge..]);
            let oversized = FramingError::Oversized {
                len: bytes.len(),
                id,
            };
            return self.session.answer_framing_error(oversized).await;
        }
        let message = match decode(bytes, &limits) {
            Ok(m) => m,
            Err(e) => {
                return self
                    .session
                    .answer_framing_error(FramingError::Undecodable(e))
                    .await
            }
        };
        match &message {
            // An id already in flight holds its slot; the session answers the second one with an error.
            gateway::Message::Request { id, .. } if !lock(self.in_flight).contains_key(id) => {
                match self.app.requests.take(&self.meta.identity) {
                    Ok(held) => {
                        lock(self.in_flight).insert(id.clone(), held);
                    }
                    Err(over) => {
                        let error = error_object(
                            jsonrpc::INTERNAL_ERROR,
                            requests_message(self.app, over),
                            None,
                        );
                        let answer = error_response(Some(id), error).to_string();
                        let _ = self.own.send(answer).await;
                        return;
                    }
                }
            }
            gateway::Message::Notification { method, params }
                if method == "notifications/cancelled" =>
            {
                // A cancelled request sends no response: its slot is given back here.
                let cancelled = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(Id::from_value);
                if let Some(id) = cancelled {
                    lock(self.in_flight).remove(&id);
                }
            }
            _ => {}
        }
        self.session.handle(message, self.meta).await;
    }
}

/// The only code that writes to the socket: the session's messages and the transport's own answers, each as one
/// text frame. A response gives its request's slot back once written. Returns the sink for the closing frame.
async fn write_loop(
    mut drain: Drain,
    mut own: mpsc::Receiver<String>,
    mut sink: SplitSink<WebSocket, Message>,
    in_flight: InFlight,
) -> SplitSink<WebSocket, Message> {
    let mut own_open = true;
    loop {
        let text = tokio::select! {
            m = drain.next() => match m {
                Some(m) => {
                    let text = String::from_utf8_lossy(m.json()).into_owned();
                    if let Stream::Request(id) = m.stream() {
                        if answers(&m, id) {
                            lock(&in_flight).remove(id);
                        }
                    }
                    text
                }
                None => break,
            },
            t = own.recv(), if own_open => match t {
                Some(t) => t,
                None => {
                    own_open = false;
                    continue;
                }
            },
        };
        if sink.send(Message::Text(text.into())).await.is_err() {
            break;
        }
    }
    sink
}

fn lock(in_flight: &InFlight) -> std::sync::MutexGuard<'_, HashMap<Id, Held>> {
    in_flight.lock().unwrap_or_else(|p| p.into_inner())
}
