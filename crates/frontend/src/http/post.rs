//! POST `/mcp`: one JSON-RPC message per request body, read under the body limit, decoded as stdio decodes a
//! line, and handed to a session: the legacy session its `Mcp-Session-Id` names (a new one for `initialize`),
//! or, for a modern (2026-07-28) request, a session of its own that ends with the response.
//!
//! A modern request gets a fresh session rather than one from a pool keyed by principal: the era keeps no state
//! between requests, so a pool would only add a way for one request's leftovers (a log level, a subscription, a
//! cancelled call still unwinding) to reach the next, and opening a session costs a few allocations. Closing its
//! response stream closes the session, which cancels the request, as the 2026-07-28 transport asks.
//!
//! The body is read first, within `bodyTimeout` and counted against the caller's share of bodies arriving, and
//! only then does the request take one of its identity's request slots (`shares`) or touch a session: a body
//! announced and never sent holds no slot and keeps no session alive.

use crate::http::auth::Principal;
use crate::http::forward::HOP_HEADER;
use crate::http::modern::{check_headers, meta_version};
use crate::http::reply::{json, Refusal};
use crate::http::shares::{Held, Over};
use crate::http::sse::{respond, Source, Until};
use crate::http::{accepts, single_header, App, SESSION_HEADER};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures_util::StreamExt;
use gateway::{
    FramingError, Holder, Id, Message, RequestMeta, Session, Stream, SUPPORTED_VERSIONS,
};
use jsonrpc::{decode, error_object, error_response};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The most of a declared `Content-Length` reserved before its bytes arrive: memory follows what was sent.
const RESERVE: usize = 64 * 1024;

/// How much of each end of an oversized body is searched for its id (as the stdio framing keeps).
const EDGE: usize = 512;

pub(crate) async fn post(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match handle(&app, principal, &headers, body).await {
        Ok(r) => r,
        Err(refusal) => refusal.into_response(),
    }
}

/// The W3C `traceparent` header, when there is exactly one (several are invalid, and ignored as the
/// recommendation says); the gateway checks its form when telemetry is on.
pub(crate) fn traceparent(headers: &HeaderMap) -> Option<String> {
    let mut values = headers.get_all("traceparent").iter();
    match (values.next(), values.next()) {
        (Some(v), None) => v.to_str().ok().map(str::to_owned),
        _ => None,
    }
}

async fn handle(
    app: &Arc<App>,
    principal: Principal,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let (json_ok, sse_ok) = accepts(headers);
    if !(json_ok && sse_ok) {
        return Err(Refusal::NotAcceptable(
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        ));
    }
    if !is_json(headers) {
        return Err(Refusal::UnsupportedMedia);
    }
    let arriving = app
        .bodies
        .take(&principal.identity)
        .map_err(|over| bodies_refusal(app, over))?;
    // Past the wait a body is cut off rather than waited on.
    let bytes = tokio::time::timeout(
        app.limits.body_timeout,
        read_body(body, headers, app.limits.max_body_bytes),
    )
    .await
    .map_err(|_| Refusal::SlowBody)??;
    drop(arriving);
    let permit = app
        .requests
        .take(&principal.identity)
        .map_err(|over| requests_refusal(app, over))?;
    let session_id = single_header(headers, SESSION_HEADER)?;
    let version = single_header(headers, "mcp-protocol-version")?;
    if bytes.len() > app.decode_limits.max_message_bytes {
        // Within the body limit but over the message limit: answered like an oversized stdio line.
        let edge = EDGE.min(bytes.len());
        let id = jsonrpc::recover_id(&bytes[..edge], &bytes[bytes.len() - edge..]);
        let oversized = FramingError::Oversized {
            len: bytes.len(),
            id,
        };
        return Ok(framing_error(app, oversized).await);
    }
    let message = match decode(&bytes, &app.decode_limits) {
        Ok(m) => m,
        Err(e) => return Ok(framing_error(app, FramingError::Undecodable(e)).await),
    };
    let meta = RequestMeta {
        protocol_version: version.map(str::to_owned),
        identity: principal.identity.clone(),
        traceparent: traceparent(headers),
    };
    // A request is modern by its `_meta` version, or by a header declaring the modern version (then its missing
    // `_meta` version is a header mismatch, not a legacy request in disguise).
    let header_modern = version == Some(SUPPORTED_VERSIONS[0]);
    let modern = match &message {
        Message::Request { params, .. } => meta_version(params.as_ref()).is_some() || header_modern,
        _ => session_id.is_none() && header_modern,
    };
    if modern {
        if session_id.is_some() {
            return Err(Refusal::BadRequest(
                "Mcp-Session-Id is not used with protocol 2026-07-28: send the request without it"
                    .into(),
            ));
        }
        let request = (headers, message, bytes);
        return modern_request(app, &principal, request, meta, permit).await;
    }
    if let Some(v) = version {
        if !SUPPORTED_VERSIONS[1..].contains(&v) {
            return Err(unsupported(v));
        }
    }
    legacy(app, principal, session_id, message, meta, permit).await
}

/// A legacy message: in the session its id names, or a new session for `initialize`.
async fn legacy(
    app: &Arc<App>,
    principal: Principal,
    session_id: Option<&str>,
    message: Message,
    meta: RequestMeta,
    permit: Held,
) -> Result<Response, Refusal> {
    let initialize = matches!(&message, Message::Request { method, .. } if method == "initialize");
    let (id, entry, created) = match session_id {
        Some(id) => {
            let entry = app
                .sessions
                .get(id, &principal.identity)
                .ok_or(Refusal::UnknownSession)?;
            (id.to_owned(), entry, false)
        }
        None if initialize => {
            let (id, entry) = app.sessions.create(
                &app.gateway,
                principal.identity.clone(),
                principal.profile.as_deref(),
            )?;
            (id, entry, true)
        }
        None => {
            return Err(Refusal::BadRequest(
                "Bad Request: Mcp-Session-Id header is required (send initialize first)".into(),
            ))
        }
    };
    let response = match message {
        Message::Request { id: ref rid, .. } => {
            let rid = rid.clone();
            let Some(sub) = entry.router.open(Stream::Request(rid.clone())) else {
                if entry.router.stopped_now() {
                    return Err(Refusal::UnknownSession);
                }
                return Err(Refusal::BadRequest(format!(
                    "request id {rid} is already in flight on this session; ids must be unique among open requests"
                )));
            };
            entry.session.handle(message, &meta).await;
            respond(Source::Routed(sub), Until::Response(rid), false, permit).await
        }
        Message::Notification {
            ref method,
            ref params,
        } => {
            let cancelled = (method == "notifications/cancelled")
                .then(|| params.as_ref()?.get("requestId").and_then(Id::from_value))
                .flatten();
            entry.session.handle(message, &meta).await;
            if let Some(rid) = cancelled {
                // A cancelled request sends no response: its stream ends here instead of waiting for one.
                entry.router.end(&Stream::Request(rid));
            }
            StatusCode::ACCEPTED.into_response()
        }
        Message::Response { .. } => {
            entry.session.handle(message, &meta).await;
            StatusCode::ACCEPTED.into_response()
        }
    };
    let mut response = response;
    if created {
        if let Ok(v) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    Ok(response)
}

/// A modern message: checked against its headers, then served on a session of its own, or sent on to the
/// replica holding what it names, a bridged call it retries or a task (`forward`).
async fn modern_request(
    app: &Arc<App>,
    principal: &Principal,
    (headers, message, bytes): (&HeaderMap, Message, Vec<u8>),
    meta: RequestMeta,
    permit: Held,
) -> Result<Response, Refusal> {
    let rid = match &message {
        Message::Request { id, method, params } => {
            check_headers(headers, id, method, params.as_ref())?;
            match app.gateway.holder_of(method, params.as_ref()) {
                Holder::Here => {}
                _ if headers.contains_key(HOP_HEADER) => {
                    return Err(Refusal::Holder(
                        "this request was sent on by another replica, and what it names is not held here \
                         either: a request is sent on at most once"
                            .into(),
                    ))
                }
                Holder::At(address) => {
                    let body = Bytes::from(bytes);
                    return app.forwarder.send(&address, headers, body, permit).await;
                }
                Holder::Unreachable => {
                    return Err(Refusal::Holder(
                        "what this request names (a call waiting for its answers, or a task) is held by another \
                         replica, which gave no address to reach it at (it listens on an unspecified address: \
                         set http.advertise there)"
                            .into(),
                    ))
                }
            }
            id.clone()
        }
        Message::Notification { .. } => return Ok(StatusCode::ACCEPTED.into_response()),
        Message::Response { .. } => {
            return Err(Refusal::BadRequest(
                "a 2026-07-28 client sends no responses over HTTP".into(),
            ))
        }
    };
    let (session, drain) = open_as(app, principal)?;
    session.handle(message, &meta).await;
    let ends = EndsWith::watch(session);
    Ok(respond(
        Source::Direct(drain),
        Until::Response(rid),
        true,
        (permit, ends),
    )
    .await)
}

/// The refusal for a request over its identity's share of request slots or over the ceiling.
fn requests_refusal(app: &App, over: Over) -> Refusal {
    Refusal::Limit {
        share: over == Over::Share,
        message: requests_message(app, over),
        retry_after_secs: 1,
    }
}

/// What a request over its identity's share of request slots, or over the ceiling, is told.
pub(crate) fn requests_message(app: &App, over: Over) -> String {
    match over {
        Over::Share => format!(
            "this caller has its share of {} requests in flight (http.limits.maxConcurrentRequestsPerIdentity): \
             one of them ending frees a slot",
            app.requests.share()
        ),
        Over::Ceiling => format!(
            "{} requests are in flight across all callers (http.limits.maxConcurrentRequests): one ending frees \
             a slot",
            app.requests.ceiling()
        ),
    }
}

/// The refusal for a body beyond the caller's share of bodies arriving at once, or beyond all callers'.
fn bodies_refusal(app: &App, over: Over) -> Refusal {
    let wait = app.limits.body_timeout.as_secs();
    let message = match over {
        Over::Share => format!(
            "this caller has {} request bodies arriving at once (as many as \
             http.limits.maxConcurrentRequestsPerIdentity): one arriving in full, or cut off after {wait} s, frees \
             a slot",
            app.bodies.share(),
        ),
        Over::Ceiling => format!(
            "{} request bodies are arriving at once across all callers (twice \
             http.limits.maxConcurrentRequests): one arriving in full, or cut off after {wait} s, frees a slot",
            app.bodies.ceiling(),
        ),
    };
    Refusal::Limit {
        share: over == Over::Share,
        message,
        retry_after_secs: wait.max(1),
    }
}

/// A session under the caller's profile; 403 when it cannot be served (a token naming a profile the
/// configuration does not define, or one of the other mode).
pub(crate) fn open_as(
    app: &Arc<App>,
    principal: &Principal,
) -> Result<(Arc<Session>, gateway::Drain), Refusal> {
    Session::open_as(&app.gateway, principal.profile.as_deref()).map_err(|e| {
        tracing::debug!(identity = ?principal.identity, "refused a caller's profile: {e}");
        Refusal::Forbidden("this caller's profile is not served here".into())
    })
}

/// A session that ends when the response it serves does, when its client hangs up, or when its client stops
/// reading and its outbox overflows (then at once, so its call is cancelled rather than run for nobody).
struct EndsWith {
    session: Arc<Session>,
    done: CancellationToken,
}

impl EndsWith {
    fn watch(session: Arc<Session>) -> Self {
        let done = CancellationToken::new();
        let (watched, until) = (Arc::clone(&session), done.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = watched.closed() => watched.close(),
                () = until.cancelled() => {}
            }
        });
        Self { session, done }
    }
}

impl Drop for EndsWith {
    fn drop(&mut self) {
        self.done.cancel();
        self.session.close();
    }
}

/// A frame that did not decode, answered by a session like every other front end answers it, with 400.
async fn framing_error(app: &Arc<App>, error: FramingError) -> Response {
    let (session, mut drain) = Session::open(&app.gateway);
    session.answer_framing_error(error).await;
    session.close();
    drop(session);
    match drain.next().await {
        Some(m) => json(StatusCode::BAD_REQUEST, Bytes::copy_from_slice(m.json())),
        None => Refusal::BadRequest("the message could not be decoded".into()).into_response(),
    }
}

/// The error for an `MCP-Protocol-Version` header naming a version toolgate does not speak.
fn unsupported(requested: &str) -> Refusal {
    // The same shape the session answers a `_meta` version with.
    let error = error_object(
        jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        Some(json!({"supported": SUPPORTED_VERSIONS, "requested": requested})),
    );
    Refusal::Protocol(error_response(None, error))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// The body, refused with 413 as soon as it is known to exceed `max` (by its `Content-Length`, or once that
/// many bytes arrived): a larger body is never buffered.
async fn read_body(body: Body, headers: &HeaderMap, max: usize) -> Result<Vec<u8>, Refusal> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(Refusal::TooLarge(max));
    }
    let mut out = Vec::with_capacity(declared.map_or(0, |n| (n as usize).min(RESERVE)));
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk =
            chunk.map_err(|e| Refusal::BadRequest(format!("reading the body failed: {e}")))?;
        if out.len() + chunk.len() > max {
            return Err(Refusal::TooLarge(max));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}
