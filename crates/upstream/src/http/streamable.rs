//! The Streamable HTTP link (`"type": "http"`), for both eras: each message is one POST; a request's answer comes
//! back as a JSON body or an event stream whose messages are delivered as they arrive; 202 means nothing to read.
//!
//! Legacy era (2025-03-26 … 2025-11-25): the `Mcp-Session-Id` the server gave with the `initialize` answer is sent
//! on every later request, with `MCP-Protocol-Version` once `initialize` agreed one; after `initialized` a GET
//! stream carries what the server starts itself (none when it answers 405; reopened with backoff, resumed with
//! `Last-Event-ID`); a request's stream that ends before its answer is resumed the same way when the server gave
//! event ids; shutdown DELETEs the session. A 404 for a request carrying the session (or a 400 that says the
//! session is not valid, as some servers answer) means the server forgot it: the request fails saying so and this life of the link ends, so the supervisor starts a new session (a call is
//! never retried silently: it may not be idempotent).
//!
//! A request the server sends on a request's answer stream (sampling, elicitation, roots asked mid-call) is
//! delivered as related to that request (`Incoming::Related`), so it reaches the client of that call exactly;
//! one on the GET stream names no call and is delivered as it is, as stdio's are. Answers to either are POSTed
//! like any message.
//!
//! Modern era (2026-07-28): no session, no GET stream; the version, `Mcp-Method` and `Mcp-Name` headers come from
//! each message (`headers`), and closing a request's stream is its cancellation. In both, a tool's parameters
//! marked `x-mcp-header` go into `Mcp-Param-*` headers of its calls, and a tool whose marks are invalid is left
//! out of the list (`params`).

use super::answer::{failure, from_status};
use super::body::{self, Body};
use super::headers::{self, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use super::life::{lock, Life};
use super::params::ToolHeaders;
use super::sse::SseParser;
use super::{describe, shown, Endpoint};
use crate::link::INCOMING_CAPACITY;
use crate::link::{BoxFuture, Incoming, Link, Opened, SendError};
use jsonrpc::UPSTREAM_UNAVAILABLE;
use jsonrpc::{Id, Message};
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

mod stream;

/// How long a notification or response POST may take before it is given up.
const POST_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts to resume a request's event stream that ended before its answer.
const RESUME_ATTEMPTS: u32 = 5;
/// The longest wait between two attempts to open the GET stream or resume a stream.
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(30);

/// What a request whose session the server forgot is answered.
pub(crate) const SESSION_EXPIRED: &str =
    "the upstream session expired (the server answered 404 for it) and was \
    re-established; the request was not retried because it may not be idempotent: send it again";

pub(crate) fn open(endpoint: Endpoint) -> Opened {
    let (tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
    let shown = shown(&endpoint.url);
    let shared = Arc::new(Shared {
        ep: endpoint,
        shown,
        session: Mutex::new(None),
        legacy_version: Mutex::new(None),
        initialize_id: Mutex::new(None),
        modern: AtomicBool::new(false),
        life: Life::new(tx),
        streams: Mutex::new(HashMap::new()),
        tool_headers: ToolHeaders::default(),
    });
    Opened {
        link: Box::new(StreamableLink { shared }),
        incoming,
        pid: None,
    }
}

pub(crate) struct StreamableLink {
    shared: Arc<Shared>,
}

struct Shared {
    ep: Endpoint,
    shown: String,
    session: Mutex<Option<HeaderValue>>,
    /// The version `initialize` agreed, sent as `MCP-Protocol-Version` on every later request.
    legacy_version: Mutex<Option<String>>,
    initialize_id: Mutex<Option<Id>>,
    /// A modern request was sent: cancellation closes streams instead of posting a notification.
    modern: AtomicBool,
    /// Taken when the link ends; tasks hold clones only while they run, so the stream then ends.
    life: Life,
    /// The task reading each request's answer, by request id.
    streams: Mutex<HashMap<Id, AbortHandle>>,
    /// Tool parameters mirrored into headers (`x-mcp-header`).
    tool_headers: ToolHeaders,
}

impl Link for StreamableLink {
    fn send<'a>(&'a self, msg: &'a Value) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(self.shared.send(msg))
    }

    fn end_reason(&self) -> Option<String> {
        self.shared.life.reason()
    }

    fn shutdown(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            let session = lock(&shared.session).take();
            if let (Some(session), false) = (session, shared.life.ended.is_cancelled()) {
                // Telling the server the session is over is a courtesy: bounded, and its failure changes nothing.
                let delete = shared
                    .builder(Method::DELETE, None)
                    .header(SESSION_ID, session)
                    .send();
                let _ = tokio::time::timeout(grace, delete).await;
            }
            shared.end("the link was shut down".to_owned());
        })
    }
}

impl Shared {
    async fn send(self: &Arc<Self>, msg: &Value) -> Result<(), SendError> {
        let body = serde_json::to_vec(msg).map_err(|_| SendError::Closed)?;
        let max = self.ep.limits.max_message_bytes;
        if body.len() > max {
            return Err(SendError::TooLarge {
                len: body.len(),
                max,
            });
        }
        if self.life.ended.is_cancelled() {
            return Err(SendError::Closed);
        }
        if headers::modern_version(msg).is_some() {
            self.modern.store(true, Ordering::Relaxed);
        }
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").and_then(Id::from_value);
        match (method, id) {
            (Some(method), Some(id)) => {
                if method == "initialize" {
                    *lock(&self.initialize_id) = Some(id.clone());
                }
                self.tool_headers.sending(&id, method);
                let request = self.post(msg, body);
                let task = tokio::spawn(Arc::clone(self).answer(id.clone(), request));
                lock(&self.streams).insert(id, task.abort_handle());
                Ok(())
            }
            (Some("notifications/cancelled"), None) => {
                let target = msg.pointer("/params/requestId").and_then(Id::from_value);
                if let Some(handle) = target.and_then(|t| lock(&self.streams).remove(&t)) {
                    handle.abort();
                }
                // Closing the stream is the modern era's cancellation; legacy servers are told as well.
                if self.modern.load(Ordering::Relaxed) && lock(&self.legacy_version).is_none() {
                    return Ok(());
                }
                self.post_one_way(msg, body).await
            }
            (Some("notifications/initialized"), None) => {
                self.post_one_way(msg, body).await?;
                tokio::spawn(Arc::clone(self).listen());
                Ok(())
            }
            _ => self.post_one_way(msg, body).await,
        }
    }

    /// A request builder with the configured headers, then the session's (the protocol's own win). A GET or
    /// DELETE carries the agreed version too; a POST carries the one its message calls for (`post`).
    fn builder(&self, method: Method, last_event_id: Option<&str>) -> RequestBuilder {
        let post = method == Method::POST;
        let mut b = self
            .ep
            .client
            .request(method, self.ep.url.clone())
            .headers(self.ep.headers.clone());
        if let Some(session) = lock(&self.session).clone() {
            b = b.header(SESSION_ID, session);
        }
        if let (Some(version), false) = (lock(&self.legacy_version).clone(), post) {
            b = b.header(PROTOCOL_VERSION, version);
        }
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            b = b.header(LAST_EVENT_ID, id);
        }
        b
    }

    fn post(&self, msg: &Value, body: Vec<u8>) -> Posted {
        let legacy = lock(&self.legacy_version).clone();
        let mut b = self
            .builder(Method::POST, None)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream");
        for (name, value) in headers::for_message(msg, legacy.as_deref()) {
            b = b.header(name, value);
        }
        for (name, value) in self.tool_headers.for_call(msg) {
            b = b.header(name, value);
        }
        b = super::for_caller(b, &self.ep.server);
        Posted {
            had_session: lock(&self.session).is_some(),
            request: b.body(body),
        }
    }

    /// A notification or a response: posted in order (the next message waits for it), nothing to read back.
    async fn post_one_way(&self, msg: &Value, body: Vec<u8>) -> Result<(), SendError> {
        let posted = self.post(msg, body);
        let resp = tokio::select! {
            r = tokio::time::timeout(POST_TIMEOUT, posted.request.send()) => r,
            () = self.life.ended.cancelled() => return Err(SendError::Closed),
        };
        match resp {
            Ok(Ok(mut resp)) if !resp.status().is_success() => {
                let status = resp.status();
                let text = body::error_text(&mut resp).await;
                if posted.had_session && session_gone(status, &text) {
                    self.end(SESSION_EXPIRED.to_owned());
                    return Err(SendError::Closed);
                }
                tracing::warn!(server = %self.ep.server, "{} answered HTTP {status} to a notification", self.shown);
                Ok(())
            }
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.is_connect() => {
                self.end(format!("cannot reach {}: {}", self.shown, describe(e)));
                Err(SendError::Closed)
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %self.ep.server, "posting a notification failed: {}", describe(e));
                Ok(())
            }
            Err(_) => {
                tracing::warn!(server = %self.ep.server, "{} did not accept a notification within {} s", self.shown, POST_TIMEOUT.as_secs());
                Ok(())
            }
        }
    }

    /// Reads the answer to one request until it is delivered or the link ends.
    async fn answer(self: Arc<Self>, id: Id, posted: Posted) {
        tokio::select! {
            () = self.exchange(&id, posted) => {}
            () = self.life.ended.cancelled() => {}
        }
        lock(&self.streams).remove(&id);
    }

    async fn exchange(&self, id: &Id, posted: Posted) {
        let mut resp = match posted.request.send().await {
            Ok(resp) => resp,
            // The server is gone: this life ends, and the request fails with the reason at once.
            Err(e) if e.is_connect() => {
                return self.end(format!("cannot reach {}: {}", self.shown, describe(e)))
            }
            Err(e) => {
                let why = format!("the request to {} failed: {}", self.shown, describe(e));
                return self
                    .life
                    .deliver(failure(id, UPSTREAM_UNAVAILABLE, why, None))
                    .await;
            }
        };
        let status = resp.status();
        if !status.is_success() {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            let text = body::error_text(&mut resp).await;
            if posted.had_session && session_gone(status, &text) {
                let code = Some(status.as_u16());
                let expired = failure(id, UPSTREAM_UNAVAILABLE, SESSION_EXPIRED.to_owned(), code);
                self.life.deliver(expired).await;
                return self.end(SESSION_EXPIRED.to_owned());
            }
            let answer = from_status(id, status.as_u16(), &text, location.as_deref(), &self.shown);
            return self.life.deliver(answer).await;
        }
        if lock(&self.initialize_id).as_ref() == Some(id) {
            if let Some(session) = resp.headers().get(SESSION_ID) {
                *lock(&self.session) = Some(session.clone());
            }
        }
        if status == StatusCode::ACCEPTED {
            return;
        }
        let answered = if body::is_event_stream(&resp) {
            let mut parser = SseParser::new(self.ep.limits.max_message_bytes);
            let mut answered = self.read_stream(id, &mut resp, &mut parser).await;
            if !answered {
                answered = self.resume(id, parser).await;
            }
            answered
        } else if body::is_json(&resp) {
            let max = self.ep.limits.max_message_bytes;
            match body::read_bounded(&mut resp, max).await {
                Body::Complete(bytes) => self.deliver_message(id, &bytes).await,
                Body::Oversized { len } => {
                    let id = Some(id.clone());
                    self.life
                        .deliver(Incoming::Oversized { len, max, id })
                        .await;
                    true
                }
                Body::Failed(e) => {
                    let why = format!("reading the answer from {} failed: {e}", self.shown);
                    self.life
                        .deliver(failure(id, UPSTREAM_UNAVAILABLE, why, None))
                        .await;
                    true
                }
            }
        } else {
            false
        };
        if !answered {
            let why = format!(
                "{} ended its answer (HTTP {status}) without a JSON-RPC response",
                self.shown
            );
            self.life
                .deliver(failure(
                    id,
                    UPSTREAM_UNAVAILABLE,
                    why,
                    Some(status.as_u16()),
                ))
                .await;
        }
    }

    /// The `initialize` answer names the version every later request carries.
    fn learn(&self, id: &Id, result: &Value) {
        if lock(&self.initialize_id).as_ref() != Some(id) {
            return;
        }
        if let Some(version) = result.get("protocolVersion").and_then(Value::as_str) {
            *lock(&self.legacy_version) = Some(version.to_owned());
        }
    }

    /// Ends this life of the link: every task stops and the stream of incoming messages ends.
    fn end(&self, why: String) {
        self.life.end(why);
        for (_, task) in lock(&self.streams).drain() {
            task.abort();
        }
    }
}

/// A request the server sent on the answer stream of request `to` (sampling, elicitation, roots asked while it
/// serves `to`) is delivered as related to it, so it reaches the client of that call and no other; whatever
/// else arrived there is delivered as it is.
fn related(item: Incoming, to: &Id) -> Incoming {
    match item {
        Incoming::Message(message @ Message::Request { .. }) => Incoming::Related {
            message,
            to: to.clone(),
        },
        item => item,
    }
}

/// Whether a failure for a request that carried the session means the server no longer knows it: 404, as the
/// spec says, or a 400 whose body speaks of the session, as servers built on the TypeScript SDK's examples answer
/// for a session they lost in a restart.
fn session_gone(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND
        || (status == StatusCode::BAD_REQUEST && body.to_ascii_lowercase().contains("session"))
}

/// A request ready to go, and whether it carries the session (a 404 then means the session is gone).
struct Posted {
    had_session: bool,
    request: RequestBuilder,
}
