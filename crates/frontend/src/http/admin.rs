//! The admin surface, as MCP Unified documents it, under the endpoint's path: `POST /mcp/policy/explain` (how a
//! profile would decide a hypothetical call) and `POST /mcp/profiles/{id}/tool-preview` (a profile's tool
//! surface), `GET /metrics` (the Prometheus text, with `telemetry.metrics`), and the product verbs' routes
//! (`admin_verbs`). Routed only when `http.admin` names a key, so every admin route is 404 otherwise. `GET /mcp/status`
//! is `status`'s: the admin reads it with more detail, but it is not admin-only.
//!
//! The admin key comes in `X-MCP-Gateway-Admin-Key` (or `Authorization: Bearer`), compared by SHA-256 digest
//! in constant time; an MCP API key is never an admin key (config refuses the same digest for both, and only the
//! admin digest is compared here). Answers never echo raw arguments (sizes and hashes only), and each request is
//! audited without them. The Host/Origin gate applies as it does for `/mcp`. The answers are the gateway's
//! (`Gateway::explain_call`, `tool_preview`); this module only carries them.

use crate::http::connections::Ticket;
use crate::http::reply::json;
use crate::http::App;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use policy::Visibility;
use serde_json::{json as value, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The header the admin key is sent in.
pub(crate) const ADMIN_HEADER: &str = "x-mcp-gateway-admin-key";

/// The identity admin connections count under; no API key or token identity is spelled so.
pub(crate) const ADMIN_IDENTITY: &str = "admin";

/// The admin routes, behind the admin key `digest`.
pub(crate) fn routes(digest: [u8; 32]) -> Router<Arc<App>> {
    Router::new()
        .route("/mcp/policy/explain", post(explain))
        .route("/mcp/profiles/{id}/tool-preview", post(preview))
        .route("/metrics", axum::routing::get(metrics))
        .merge(super::admin_verbs::routes())
        .route_layer(middleware::from_fn(
            move |request: Request, next: Next| async move {
                if admitted(&digest, request.headers()) {
                    if let Some(refused) = count_admin_connection(&request) {
                        return refused;
                    }
                    next.run(request).await
                } else {
                    tracing::warn!("refused an admin request without the admin key");
                    problem(StatusCode::UNAUTHORIZED, "the admin key is required")
                }
            },
        ))
}

/// The admin is an identity of its own among connections (`connections`): its connection is no longer closed as
/// unauthenticated, and counts against its own share. The 429 to answer past it, if it is past it.
pub(crate) fn count_admin_connection(request: &Request) -> Option<Response> {
    let ticket = request.extensions().get::<Arc<Ticket>>();
    ticket
        .is_some_and(|t| !t.authenticated(&Some(ADMIN_IDENTITY.to_owned())))
        .then(|| {
            problem(
                StatusCode::TOO_MANY_REQUESTS,
                "the admin holds its share of open connections (http.limits.maxConnectionsPerIdentity)",
            )
        })
}

/// Whether the request carries the admin key: in its own header, else as a bearer token; exactly one value.
pub(crate) fn admitted(digest: &[u8; 32], headers: &HeaderMap) -> bool {
    let mut own = headers.get_all(ADMIN_HEADER).iter();
    let presented = match (own.next(), own.next()) {
        (Some(v), None) => v.to_str().ok().map(str::trim),
        (Some(_), Some(_)) => None,
        (None, _) => {
            let mut auth = headers.get_all(header::AUTHORIZATION).iter();
            match (auth.next(), auth.next()) {
                (Some(v), None) => v
                    .to_str()
                    .ok()
                    .and_then(|v| v.split_once(' '))
                    .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                    .map(|(_, token)| token.trim()),
                _ => None,
            }
        }
    };
    let Some(key) = presented.filter(|k| !k.is_empty()) else {
        return false;
    };
    let got: [u8; 32] = Sha256::digest(key.as_bytes()).into();
    // Every byte is compared whatever differs first.
    let diff = digest
        .iter()
        .zip(got.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0
}

pub(crate) fn problem(status: StatusCode, message: &str) -> Response {
    json(status, value!({"error": message}).to_string())
}

/// A request the admin surface refuses before asking the gateway anything.
pub(crate) struct Problem(StatusCode, String);

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        problem(self.0, &self.1)
    }
}

/// The request body as a JSON object (an empty body is `{}`), within the transport's body limit.
pub(crate) async fn object(
    app: &App,
    body: Body,
) -> Result<serde_json::Map<String, Value>, Problem> {
    let bytes = axum::body::to_bytes(body, app.limits.max_body_bytes)
        .await
        .map_err(|_| {
            Problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is too large".into(),
            )
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Problem(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object".into(),
        )),
    }
}

fn text<'a>(
    map: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, Problem> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Problem(
            StatusCode::BAD_REQUEST,
            format!("{key} must be a string"),
        )),
    }
}

/// A profile the configuration does not define (or that the gateway cannot serve) is 404.
fn no_profile(e: &gateway::Error) -> Response {
    tracing::debug!("admin request for a profile that cannot be served: {e}");
    problem(StatusCode::NOT_FOUND, "no such profile is served here")
}

/// `GET /metrics`: the Prometheus text (`telemetry.metrics`), 404 when metrics are off. Scrapes are not audited
/// one by one: a scraper asks every few seconds, and the answer holds counts only (no call, argument or identity).
async fn metrics(State(app): State<Arc<App>>) -> Response {
    match app.gateway.metrics() {
        Some(text) => Response::builder()
            .status(StatusCode::OK)
            .header(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )
            .body(Body::from(text))
            .unwrap_or_else(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "metrics")),
        None => problem(
            StatusCode::NOT_FOUND,
            "metrics are off: set \"telemetry\": {\"metrics\": true} in the config",
        ),
    }
}

/// `POST /mcp/policy/explain` `{"profile_id"?, "tool_name", "arguments"?}`.
async fn explain(State(app): State<Arc<App>>, body: Body) -> Response {
    let map = match object(&app, body).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let (profile, tool) = match (text(&map, "profile_id"), text(&map, "tool_name")) {
        (Ok(p), Ok(Some(t))) => (p, t),
        (Err(r), _) | (_, Err(r)) => return r.into_response(),
        (_, Ok(None)) => return problem(StatusCode::BAD_REQUEST, "tool_name is required"),
    };
    let arguments = map.get("arguments").cloned().unwrap_or_else(|| value!({}));
    app.gateway
        .audit_admin("admin.policy_explain", profile, Some(tool));
    match app.gateway.explain_call(profile, tool, &arguments) {
        Ok(Some(explained)) => json(StatusCode::OK, explained.to_string()),
        Ok(None) => problem(StatusCode::NOT_FOUND, "no such tool is listed here"),
        Err(e) => no_profile(&e),
    }
}

/// The categories a preview is narrowed to: a visibility, or a kind of tool (`Gateway::tool_preview`'s
/// `category` of each row).
const KINDS: [&str; 4] = ["filesystem", "git", "fetch", "generic"];

/// What a session changes in a preview, said whenever one is named: nothing, by toolgate's design.
const SESSION_NOTE: &str =
    "no tool's visibility depends on a session: a session grant covers one call's \
                            arguments (or a command prefix), never a whole tool";

/// `POST /mcp/profiles/{id}/tool-preview` `{"category"?, "include_denied"?, "session_id"?}`.
async fn preview(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Response {
    let map = match object(&app, body).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let (visibility, kind) = match text(&map, "category") {
        Ok(None) => (None, None),
        Ok(Some(c)) => match serde_json::from_value::<Visibility>(Value::String(c.to_owned())) {
            Ok(v) => (Some(v), None),
            Err(_) if KINDS.contains(&c) => (None, Some(c.to_owned())),
            Err(_) => {
                return problem(
                    StatusCode::BAD_REQUEST,
                    "category is a visibility (visible, deferred, blocked, unavailable) or a kind (filesystem, \
                     git, fetch, generic)",
                )
            }
        },
        Err(r) => return r.into_response(),
    };
    let include_denied = match map.get("include_denied") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return problem(StatusCode::BAD_REQUEST, "include_denied must be a boolean"),
    };
    let session = match text(&map, "session_id") {
        Ok(None) => None,
        Ok(Some(s)) if is_session_id(s) => Some(s.to_owned()),
        Ok(Some(_)) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "session_id must be 1 to 128 visible ASCII characters",
            )
        }
        Err(r) => return r.into_response(),
    };
    app.gateway
        .audit_admin("admin.tool_preview", Some(&id), None);
    // Blocked tools are what `include_denied` asks for; a category of blocked asks for them too.
    let include = include_denied || visibility == Some(Visibility::Blocked);
    let mut preview = match app.gateway.tool_preview(Some(&id), visibility, include) {
        Ok(preview) => preview,
        Err(e) => return no_profile(&e),
    };
    if let (Some(kind), Some(rows)) = (kind, preview["tools"].as_array_mut()) {
        rows.retain(|row| row["category"] == kind.as_str());
    }
    if let Some(session) = session {
        preview["session"] = value!({"id": session, "effect": SESSION_NOTE});
    }
    json(StatusCode::OK, preview.to_string())
}

/// A session id as a client holds one (an `Mcp-Session-Id`): short visible ASCII, so it can be shown back.
fn is_session_id(s: &str) -> bool {
    (1..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}
