//! The admin routes of a product's CLI verbs, for `--remote`: the presets, the package, the config check, the
//! stored profiles (duplicate, create) and the reporting events (report, export, cleanup). Read-only verbs are
//! GET, the ones that change the stored profiles or the reporting store POST. Each sits behind the admin key
//! with the other admin routes (`admin::routes`) and is audited by its route; none carries arguments.
//!
//! This module only carries: what each verb does is whoever started the server's (`HttpServer::admin_verbs`),
//! which holds the config the gateway was started on and does exactly what the local verb does with it. Without
//! one every verb route is 404 with the reason.

use crate::http::admin::problem;
use crate::http::reply::json;
use crate::http::App;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{Map, Value};
use std::sync::Arc;

/// One verb, as the route received it; the values are checked by whoever answers.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminVerb {
    ListPresets,
    PackageInfo,
    ValidateConfig,
    /// Store a copy of preset (or stored profile) `id` as `profile_id`.
    DuplicatePreset {
        id: String,
        profile_id: String,
    },
    /// Store this profile (its `id` names it).
    CreateProfile {
        profile: Map<String, Value>,
    },
    /// The aggregate report, rendered in `format`.
    ToolEventsReport {
        group_by: String,
        since_ms: Option<i64>,
        format: Option<String>,
    },
    /// The events themselves, metadata only.
    ToolEventsExport {
        since_ms: Option<i64>,
        limit: u64,
    },
    /// Apply the retention now, the config's or the limits given.
    ToolEventsCleanup {
        max_age_days: Option<u32>,
        max_events: Option<u64>,
    },
}

/// Why a verb was not done: the request is wrong (400), or it cannot be done here as asked (409).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerbRefusal {
    Invalid(String),
    Refused(String),
}

/// Answers the verbs. Called off the async threads: an answer may read the store or write a file.
pub trait AdminVerbs: Send + Sync + 'static {
    fn answer(&self, verb: AdminVerb) -> Result<Value, VerbRefusal>;
}

/// The verb routes; the caller puts them behind the admin key.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/mcp/presets", get(presets))
        .route("/mcp/presets/{id}/duplicate", post(duplicate))
        .route("/mcp/profiles", post(create))
        .route("/mcp/package-info", get(package))
        .route("/mcp/config/validate", get(validate))
        .route("/mcp/tool-events/report", get(report))
        .route("/mcp/tool-events/export", get(export))
        .route("/mcp/tool-events/cleanup", post(cleanup))
}

/// Audits the request under `route`, then answers it off the async threads.
async fn run(app: Arc<App>, route: &str, profile: Option<&str>, verb: AdminVerb) -> Response {
    app.gateway.audit_admin(route, profile, None);
    let Some(verbs) = app.verbs.clone() else {
        return problem(
            StatusCode::NOT_FOUND,
            "this gateway answers no product verbs (it was not started by `toolgate serve`)",
        );
    };
    match tokio::task::spawn_blocking(move || verbs.answer(verb)).await {
        Ok(Ok(answer)) => json(StatusCode::OK, answer.to_string()),
        Ok(Err(VerbRefusal::Invalid(why))) => problem(StatusCode::BAD_REQUEST, &why),
        Ok(Err(VerbRefusal::Refused(why))) => problem(StatusCode::CONFLICT, &why),
        Err(e) => {
            tracing::warn!("an admin verb failed: {e}");
            problem(StatusCode::INTERNAL_SERVER_ERROR, "the verb failed")
        }
    }
}

async fn presets(State(app): State<Arc<App>>) -> Response {
    run(app, "admin.list_presets", None, AdminVerb::ListPresets).await
}

async fn package(State(app): State<Arc<App>>) -> Response {
    run(app, "admin.package_info", None, AdminVerb::PackageInfo).await
}

async fn validate(State(app): State<Arc<App>>) -> Response {
    run(
        app,
        "admin.validate_config",
        None,
        AdminVerb::ValidateConfig,
    )
    .await
}

/// `POST /mcp/presets/{id}/duplicate` `{"profile_id"}`.
async fn duplicate(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Response {
    let map = match super::admin::object(&app, body).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let Some(Value::String(new)) = map.get("profile_id") else {
        return problem(StatusCode::BAD_REQUEST, "profile_id (a string) is required");
    };
    let verb = AdminVerb::DuplicatePreset {
        id: id.clone(),
        profile_id: new.clone(),
    };
    run(app, "admin.duplicate_preset", Some(new.as_str()), verb).await
}

/// `POST /mcp/profiles` `{"profile": {"id", …}}`.
async fn create(State(app): State<Arc<App>>, body: Body) -> Response {
    let map = match super::admin::object(&app, body).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let Some(Value::Object(profile)) = map.get("profile") else {
        return problem(
            StatusCode::BAD_REQUEST,
            "profile (a JSON object) is required",
        );
    };
    let id = profile.get("id").and_then(Value::as_str).map(str::to_owned);
    let verb = AdminVerb::CreateProfile {
        profile: profile.clone(),
    };
    run(app, "admin.create_profile", id.as_deref(), verb).await
}

/// `GET /mcp/tool-events/report?group_by=…&since_ms=…&format=…`.
async fn report(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    let q = match Query::parse(q.as_deref(), &["group_by", "since_ms", "format"]) {
        Ok(q) => q,
        Err(why) => return problem(StatusCode::BAD_REQUEST, &why),
    };
    let (Some(group_by), Ok(since_ms)) = (q.text("group_by"), q.number("since_ms")) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "group_by is required, since_ms a number",
        );
    };
    let verb = AdminVerb::ToolEventsReport {
        group_by,
        since_ms,
        format: q.text("format"),
    };
    run(app, "admin.tool_events_report", None, verb).await
}

/// `GET /mcp/tool-events/export?since_ms=…&limit=…`.
async fn export(State(app): State<Arc<App>>, RawQuery(q): RawQuery) -> Response {
    let q = match Query::parse(q.as_deref(), &["since_ms", "limit"]) {
        Ok(q) => q,
        Err(why) => return problem(StatusCode::BAD_REQUEST, &why),
    };
    let (Ok(since_ms), Ok(Some(limit))) = (q.number("since_ms"), q.number("limit")) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "limit is required, since_ms a number",
        );
    };
    let Ok(limit) = u64::try_from(limit) else {
        return problem(StatusCode::BAD_REQUEST, "limit must not be negative");
    };
    let verb = AdminVerb::ToolEventsExport { since_ms, limit };
    run(app, "admin.tool_events_export", None, verb).await
}

/// `POST /mcp/tool-events/cleanup` `{"max_age_days"?, "max_events"?}`.
async fn cleanup(State(app): State<Arc<App>>, body: Body) -> Response {
    let map = match super::admin::object(&app, body).await {
        Ok(m) => m,
        Err(r) => return r.into_response(),
    };
    let count = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or(()),
    };
    let (Ok(days), Ok(max_events)) = (count("max_age_days"), count("max_events")) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "max_age_days and max_events are whole numbers",
        );
    };
    let Ok(max_age_days) = days.map(u32::try_from).transpose() else {
        return problem(StatusCode::BAD_REQUEST, "max_age_days is too large");
    };
    let verb = AdminVerb::ToolEventsCleanup {
        max_age_days,
        max_events,
    };
    run(app, "admin.tool_events_cleanup", None, verb).await
}

/// A query string of plain values: known keys, each once, values of letters, digits, `-` and `_` (so nothing
/// needs decoding, and nothing else is accepted).
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: Option<&str>, known: &[&str]) -> Result<Self, String> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for part in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            let plain = value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
            if !known.contains(&key) || !plain || pairs.iter().any(|(k, _)| k == key) {
                return Err(format!(
                    "the query takes {} once each, plain values",
                    known.join(", ")
                ));
            }
            pairs.push((key.to_owned(), value.to_owned()));
        }
        Ok(Self(pairs))
    }

    fn text(&self, key: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, v)| k == key && !v.is_empty())
            .map(|(_, v)| v.clone())
    }

    fn number(&self, key: &str) -> Result<Option<i64>, ()> {
        self.text(key)
            .map(|v| v.parse().map_err(|_| ()))
            .transpose()
    }
}
