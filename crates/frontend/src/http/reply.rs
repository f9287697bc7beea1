//! The HTTP front end's own refusals, decided before any message reaches a session: a status and a short JSON-RPC
//! error with no id (the spec's shape for transport errors). What a session answers is written as it came
//! (`stream`); only the status of a modern request's error is chosen here (`status_for`).

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use jsonrpc::{error_object, error_response};

/// Every refusal the transport itself makes, mapped to its status and JSON-RPC code in one place.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Host or Origin not allowed (DNS rebinding).
    Forbidden(String),
    /// The body is larger than `http.limits.maxBodyBytes`.
    TooLarge(usize),
    /// The body did not arrive within the wait.
    SlowBody,
    /// The client does not accept what this endpoint answers with.
    NotAcceptable(&'static str),
    /// The body is not declared as JSON.
    UnsupportedMedia,
    /// A malformed request the transport itself refuses (a missing session id, a duplicate request id).
    BadRequest(String),
    /// A session id nobody (or somebody else) holds.
    UnknownSession,
    /// A second GET stream for one session.
    StreamTaken,
    /// The server cannot serve this now for a reason of its own (no randomness for a session id).
    Busy(&'static str),
    /// A bound on what callers hold was reached: 429 when it is the caller's own share, 503 when it is the
    /// ceiling across all callers; the message names the bound and what frees it, `Retry-After` when to try.
    Limit {
        share: bool,
        message: String,
        retry_after_secs: u64,
    },
    /// A retry whose bridged call waits on another replica that cannot be reached (or on one it may not be sent
    /// on to): 502, saying the call is lost.
    Holder(String),
    /// A request whose headers disagree with its body, or that names an unsupported version: the JSON-RPC
    /// error response to send (−32020 or −32022), with 400.
    Protocol(serde_json::Value),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            Refusal::Forbidden(why) => (StatusCode::FORBIDDEN, jsonrpc::INVALID_REQUEST, why),
            Refusal::TooLarge(max) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                jsonrpc::INVALID_REQUEST,
                format!("request body exceeds the limit of {max} bytes"),
            ),
            Refusal::SlowBody => (
                StatusCode::REQUEST_TIMEOUT,
                jsonrpc::INVALID_REQUEST,
                "the request body did not arrive within http.limits.bodyTimeoutSeconds".to_owned(),
            ),
            Refusal::NotAcceptable(why) => (
                StatusCode::NOT_ACCEPTABLE,
                jsonrpc::INVALID_REQUEST,
                why.to_owned(),
            ),
            Refusal::UnsupportedMedia => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                jsonrpc::INVALID_REQUEST,
                "Content-Type must be application/json".to_owned(),
            ),
            Refusal::BadRequest(why) => (StatusCode::BAD_REQUEST, jsonrpc::INVALID_REQUEST, why),
            Refusal::Holder(why) => (StatusCode::BAD_GATEWAY, jsonrpc::INTERNAL_ERROR, why),
            Refusal::UnknownSession => (
                StatusCode::NOT_FOUND,
                jsonrpc::INVALID_REQUEST,
                "session not found (unknown, expired or ended): initialize a new one".to_owned(),
            ),
            Refusal::StreamTaken => (
                StatusCode::CONFLICT,
                jsonrpc::INVALID_REQUEST,
                "this session already has a GET stream open".to_owned(),
            ),
            Refusal::Busy(what) => {
                let mut r = (
                    StatusCode::SERVICE_UNAVAILABLE,
                    error_body(jsonrpc::INTERNAL_ERROR, what),
                )
                    .into_response();
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return r;
            }
            Refusal::Limit {
                share,
                message,
                retry_after_secs,
            } => {
                let status = if share {
                    StatusCode::TOO_MANY_REQUESTS
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                let mut r = (status, error_body(jsonrpc::INTERNAL_ERROR, &message)).into_response();
                r.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(retry_after_secs.max(1)),
                );
                return r;
            }
            Refusal::Protocol(response) => {
                return json(StatusCode::BAD_REQUEST, response.to_string())
            }
        };
        (status, error_body(code, &message)).into_response()
    }
}

/// A JSON-RPC error response with no id, as a JSON body.
pub(crate) fn error_body(code: i64, message: &str) -> Response {
    json(
        StatusCode::OK,
        error_response(None, error_object(code, message, None)).to_string(),
    )
}

/// A JSON body with `status`.
pub(crate) fn json(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut r = (status, body.into()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The status a modern request's JSON-RPC error is sent with: the 2026-07-28 transport gives header and version
/// errors 400 and an unknown method 404 (which a client tells from a legacy server's 404 by the body). Every
/// other answer, error or not, is 200.
pub(crate) fn status_for(error_code: Option<i64>, modern: bool) -> StatusCode {
    match error_code {
        Some(jsonrpc::HEADER_MISMATCH) => StatusCode::BAD_REQUEST,
        Some(
            jsonrpc::UNSUPPORTED_PROTOCOL_VERSION | jsonrpc::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ) if modern => StatusCode::BAD_REQUEST,
        Some(jsonrpc::METHOD_NOT_FOUND) if modern => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_protocol_errors_are_400_and_unknown_methods_404() {
        for code in [-32020, -32021, -32022] {
            assert_eq!(
                status_for(Some(code), true),
                StatusCode::BAD_REQUEST,
                "{code}"
            );
        }
        assert_eq!(status_for(Some(-32601), true), StatusCode::NOT_FOUND);
        assert_eq!(
            status_for(Some(-32601), false),
            StatusCode::OK,
            "legacy errors ride on 200"
        );
        assert_eq!(status_for(Some(-32602), true), StatusCode::OK);
        assert_eq!(status_for(None, true), StatusCode::OK);
    }
}
