//! GET and DELETE `/mcp`, the legacy era's session routes: the GET stream carries what belongs to no request of
//! the session (at most one per session), DELETE ends the session. A modern client has no session, so both need
//! an `Mcp-Session-Id`. `Last-Event-ID` is ignored: streams are not resumable (see `sse`).

use crate::http::auth::Principal;
use crate::http::reply::Refusal;
use crate::http::sse::{event_stream, Source, Until};
use crate::http::{accepts, single_header, App, SESSION_HEADER};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use gateway::Stream;
use std::sync::Arc;

pub(crate) async fn get(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let opened = (|| {
        if !accepts(&headers).1 {
            return Err(Refusal::NotAcceptable(
                "Not Acceptable: the client must accept text/event-stream",
            ));
        }
        let id = single_header(&headers, SESSION_HEADER)?.ok_or_else(|| {
            Refusal::BadRequest("Bad Request: Mcp-Session-Id header is required".into())
        })?;
        let entry = app
            .sessions
            .get(id, &principal.identity)
            .ok_or(Refusal::UnknownSession)?;
        entry
            .router
            .open(Stream::Session)
            .ok_or(Refusal::StreamTaken)
    })();
    match opened {
        Ok(sub) => event_stream(Source::Routed(sub), Until::Closed, None, ()),
        Err(refusal) => refusal.into_response(),
    }
}

pub(crate) async fn delete(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let ended = (|| {
        let id = single_header(&headers, SESSION_HEADER)?.ok_or_else(|| {
            Refusal::BadRequest("Bad Request: Mcp-Session-Id header is required".into())
        })?;
        app.sessions
            .get(id, &principal.identity)
            .ok_or(Refusal::UnknownSession)?;
        app.sessions.remove(id);
        Ok::<_, Refusal>(())
    })();
    match ended {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => refusal.into_response(),
    }
}
