//! `GET /mcp/status`: readiness, as MCP Unified's package mount gives it — status, runtime name and version, the
//! profile store, the default profile, whether admin and caller authentication are configured, server counts,
//! warnings and next actions. The document is the gateway's (`Gateway::readiness`) plus what only the transport
//! knows.
//!
//! Who may read it: whoever may call `/mcp` (the same caller check, so with `http.auth` configured a caller
//! without a valid key or token gets 401, and without it the server listens on loopback only), or the admin.
//! Server counts, profile names and warnings describe the deployment, so they are not for anyone who can merely
//! reach the port; and a client that may call tools may know whether they can run. Only the admin gets servers
//! named and the audit log's own error (`readiness(named)`), and only the admin's reads are audited (a client
//! polling readiness would otherwise fill the audit log). An admin key presented and wrong is refused, never
//! read as a plain caller. Nothing here is secret: no key, digest, token, path or argument.

use crate::http::admin::{admitted, count_admin_connection, problem, ADMIN_HEADER};
use crate::http::reply::json;
use crate::http::App;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json as value, Map, Value};
use std::sync::Arc;

/// Where the served profiles come from, which only whoever read the config knows (`HttpServer::profile_store`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileStore {
    /// The config file's `profiles`, read at start.
    #[default]
    Config,
    /// Also profiles stored beside the state (MCP Unified's `duplicate-preset` and `create-profile`), read at
    /// start: one stored later is served after a restart.
    File,
}

/// `GET /mcp/status`, behind the Host/Origin gate only: the caller check is here, since either of two
/// credentials admits.
pub(crate) async fn status(State(app): State<Arc<App>>, request: Request) -> Response {
    let headers = request.headers();
    let admin = app.admin.is_some_and(|d| admitted(&d, headers));
    if admin {
        if let Some(refused) = count_admin_connection(&request) {
            return refused;
        }
        app.gateway.audit_admin("admin.status", None, None);
    } else if headers.contains_key(ADMIN_HEADER) {
        tracing::warn!("refused a status request with a wrong admin key");
        return problem(StatusCode::UNAUTHORIZED, "the admin key is refused");
    } else {
        match app.auth.load().authenticate(headers) {
            Ok(principal) => {
                let ticket = request
                    .extensions()
                    .get::<Arc<crate::http::connections::Ticket>>();
                if ticket.is_some_and(|t| !t.authenticated(&principal.identity)) {
                    return crate::http::too_many_connections(&app);
                }
            }
            Err(rejection) => return rejection.into_response(),
        }
    }
    let mut response = json(StatusCode::OK, document(&app, admin).to_string());
    // Readiness is of this moment: no cache may answer for it later.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The gateway's readiness with the transport's facts, `status` first.
fn document(app: &App, admin: bool) -> Value {
    let mut ready = app.gateway.readiness(admin);
    let ok = ready["ready"] == Value::Bool(true);
    if app.admin.is_none() {
        if let Some(next) = ready["next_actions"].as_array_mut() {
            next.push(value!(
                "configure \"http\": {\"admin\": {\"keySha256\": …}} to use the admin API (policy/explain, \
                 profiles/{id}/tool-preview)"
            ));
        }
    }
    let mut doc = Map::new();
    doc.insert(
        "status".into(),
        value!(if ok { "ready" } else { "degraded" }),
    );
    doc.insert(
        "caller".into(),
        value!(if admin { "admin" } else { "client" }),
    );
    if let Value::Object(rest) = ready {
        doc.extend(rest);
    }
    let store = match app.profile_store {
        ProfileStore::Config => value!({"kind": "config", "persistent": true}),
        ProfileStore::File => value!({"kind": "file", "persistent": true}),
    };
    doc.insert("profile_store".into(), store);
    doc.insert(
        "admin_auth".into(),
        value!({"configured": app.admin.is_some()}),
    );
    doc.insert(
        "auth".into(),
        value!({"configured": app.auth.load().configured()}),
    );
    Value::Object(doc)
}
