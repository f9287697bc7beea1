//! Writing a stream of session messages as one HTTP response: a single JSON body when the request's response is
//! the only message, else Server-Sent Events (`text/event-stream`) carrying each message as it comes, ending
//! after the response (a POST) or when the session ends (the GET stream, a listen stream).
//!
//! The body is pulled by hyper only as fast as the socket takes it, and each message's room in the session's
//! outbox comes back once it is handed over, so a client that stops reading holds a bounded amount (see
//! `streams`). Long streams carry a comment every `KEEPALIVE` so idle intermediaries do not cut them. Events carry
//! `id:` fields numbered per stream; resuming from `Last-Event-ID` is not offered (a replay buffer per stream is
//! what the bounds forbid), so a reconnecting client gets a fresh stream.

use crate::http::reply::{json, status_for};
use crate::http::streams::Subscription;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use gateway::{Drain, Id, Outgoing};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::time::Duration;

/// How often a quiet SSE stream carries a comment line.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Where a response's messages come from: a legacy session's routed stream, or a modern request's own session.
pub(crate) enum Source {
    Routed(Subscription),
    Direct(Drain),
}

impl Source {
    async fn next(&mut self) -> Option<Outgoing> {
        match self {
            Source::Routed(s) => s.next().await,
            Source::Direct(d) => d.next().await,
        }
    }
}

/// What a response stream ends on: the response to `Id` (a POSTed request), or nothing (the GET stream).
#[derive(Clone)]
pub(crate) enum Until {
    Response(Id),
    Closed,
}

/// The shape of a message, read without building it.
#[derive(Deserialize)]
struct Peek {
    id: Option<serde_json::Value>,
    method: Option<IgnoredAny>,
    error: Option<PeekError>,
}

#[derive(Deserialize)]
struct PeekError {
    code: Option<i64>,
}

/// Whether `message` is the response to the request `id`.
pub(crate) fn answers(message: &Outgoing, id: &Id) -> bool {
    ends(message, &Until::Response(id.clone())).is_some()
}

/// Whether `message` is the response that ends the stream; with the response's error code, if any.
fn ends(message: &Outgoing, until: &Until) -> Option<Option<i64>> {
    let Until::Response(id) = until else {
        return None;
    };
    let peek: Peek = serde_json::from_slice(message.json()).ok()?;
    (peek.method.is_none() && peek.id.as_ref() == Some(&id.to_value()))
        .then(|| peek.error.and_then(|e| e.code))
}

/// The response for a request's messages. `keep` lives until the body ends (a concurrency permit, a session
/// that ends with the response). `modern` picks the 2026-07-28 statuses for errors.
pub(crate) async fn respond<K: Send + 'static>(
    mut source: Source,
    until: Until,
    modern: bool,
    keep: K,
) -> Response {
    let first = match &until {
        Until::Response(_) => source.next().await,
        Until::Closed => None,
    };
    if let Some(first) = &first {
        if let Some(code) = ends(first, &until) {
            return json(
                status_for(code, modern),
                Bytes::copy_from_slice(first.json()),
            );
        }
    }
    event_stream(source, until, first, keep)
}

/// An SSE response: `first` (already taken), then the source's messages until the end.
pub(crate) fn event_stream<K: Send + 'static>(
    source: Source,
    until: Until,
    first: Option<Outgoing>,
    keep: K,
) -> Response {
    let state = Events {
        source,
        until,
        pending: first,
        next_id: 1,
        done: false,
        _keep: keep,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let frame = st.next_frame().await?;
        Some((Ok::<_, std::convert::Infallible>(frame), st))
    });
    let mut r = Response::new(Body::from_stream(stream));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

struct Events<K> {
    source: Source,
    until: Until,
    pending: Option<Outgoing>,
    next_id: u64,
    done: bool,
    _keep: K,
}

impl<K> Events<K> {
    async fn next_frame(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let message = match self.pending.take() {
            Some(m) => m,
            None => {
                tokio::select! {
                    m = self.source.next() => m?,
                    () = tokio::time::sleep(KEEPALIVE) => return Some(Bytes::from_static(b":\n\n")),
                }
            }
        };
        if ends(&message, &self.until).is_some() {
            self.done = true;
        }
        let id = self.next_id;
        self.next_id += 1;
        let json = message.json();
        let mut frame = Vec::with_capacity(json.len() + 40);
        frame.extend_from_slice(format!("event: message\nid: {id}\ndata: ").as_bytes());
        frame.extend_from_slice(json);
        frame.extend_from_slice(b"\n\n");
        Some(Bytes::from(frame))
    }
}
