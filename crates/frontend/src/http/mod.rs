//! The Streamable HTTP front end: `toolgate serve --http`, the MCP endpoint at `/mcp`, with a WebSocket entry point
//! beside it at `/mcp/ws` (`ws`: one message per text frame, a session per socket, the same gates and limits).
//!
//! Every request passes the same gates in order, each before anything later reads it: `Host` and `Origin`
//! (`origin`, 403), then the caller (`auth`, 401), then the method (405 with `Allow`), then what the route
//! needs (`post`, `session_routes`). Messages are decoded as stdio decodes them and handed to gateway sessions
//! through their public API; nothing here decides anything about a message. Both protocol eras are served on
//! the one endpoint: legacy clients (2025-03-26 … 2025-11-25) with `Mcp-Session-Id` sessions (`table`) whose
//! outgoing messages are sorted onto the POST and GET streams (`streams`), modern clients (2026-07-28) with a
//! session per request (`post`, `modern`); a modern retry of a bridged call another replica holds is sent on to
//! it (`forward`). Bounds: time to send a request head and a body, connections not yet
//! authenticated (`connections`), body size, sessions and requests in flight each with a share per identity
//! under a ceiling for all (`shares`, `table`), and per session the gateway's outbox, which the writers pull from
//! only as fast as sockets take it (`sse`).
//!
//! It refuses to listen on a non-loopback address unless callers must authenticate: loopback is the only
//! boundary an unauthenticated server has.

mod admin;
mod admin_verbs;
pub(crate) mod auth;
pub(crate) mod auth_live;
mod connections;
mod forward;
mod modern;
mod origin;
mod post;
pub(crate) mod reply;
mod session_routes;
mod shares;
mod sse;
mod status;
mod streams;
mod table;
mod ws;

use crate::http::auth::Authenticator;
use crate::http::auth_live::{AuthReload, LiveAuth};
use crate::http::connections::{Pending, Rules, Ticket};
use crate::http::origin::OriginPolicy;
use crate::http::reply::Refusal;
use crate::http::shares::Shares;
use crate::http::table::Table;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post as route_post;
use axum::Router;
use config::{HttpConfig, HttpLimits};
use gateway::{Gateway, Session};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use admin_verbs::{AdminVerb, AdminVerbs, VerbRefusal};
pub use status::ProfileStore;

/// The legacy session header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// The address served when neither `--http ADDR` nor `http.listen` names one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// How long connections get to finish after shutdown began before they are dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// Why the HTTP front end could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "refusing to listen on {0}: it is not a loopback address and no authentication is configured. \
         Configure \"http.auth\" (\"apiKeys\" or \"jwt\") in the config, or listen on 127.0.0.1"
    )]
    UnauthenticatedBind(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("authentication config: {0}")]
    Auth(String),
    /// The JWKS file named by `http.auth.jwt.jwksFile` is missing or malformed.
    #[error("the JWKS file {path} cannot be used: {why}")]
    Jwks {
        path: std::path::PathBuf,
        why: String,
    },
}

/// What every handler shares.
pub(crate) struct App {
    pub gateway: Arc<Gateway>,
    pub policy: OriginPolicy,
    /// The API keys and JWKS in force, replaced whole by a reload (`auth_live`).
    pub auth: Arc<LiveAuth>,
    /// The admin key's digest; the admin routes exist only with one.
    pub admin: Option<[u8; 32]>,
    /// Where the served profiles come from, for `GET /mcp/status`.
    pub profile_store: ProfileStore,
    /// What answers the product verbs' admin routes (`admin_verbs`); none unless the server was given one.
    pub verbs: Option<Arc<dyn AdminVerbs>>,
    pub limits: HttpLimits,
    pub sessions: Arc<Table>,
    /// Requests in flight (`maxConcurrentRequests`, `maxConcurrentRequestsPerIdentity`).
    pub requests: Arc<Shares>,
    /// Request bodies arriving: per identity as many as it may have requests in flight, and overall twice the
    /// requests in flight (every request in flight followed by its next body). Each holds up to `maxBodyBytes`
    /// of memory as its bytes arrive, for at most `bodyTimeout`, so this bounds that memory for all callers.
    pub bodies: Arc<Shares>,
    /// The limits messages are decoded under: the gateway's, as every session has them.
    pub decode_limits: jsonrpc::Limits,
    /// Sends a retry on to the replica holding its bridged call (`forward`).
    pub forwarder: forward::Forwarder,
    /// Cancelled when the server begins to shut down; ends every WebSocket (legacy sessions end through `sessions`).
    pub shutdown: CancellationToken,
}

/// A bound, not yet serving, HTTP front end.
pub struct HttpServer {
    listener: TcpListener,
    app: App,
    addr: SocketAddr,
}

impl HttpServer {
    /// Binds `addr` for `gateway` with the `http` section's rules; refuses a non-loopback address when nobody
    /// could authenticate.
    pub async fn bind(
        gateway: Arc<Gateway>,
        http: &HttpConfig,
        addr: SocketAddr,
    ) -> Result<Self, HttpError> {
        let auth = Authenticator::new(&http.auth)?;
        auth::check_profiles(&http.auth, |p| gateway.check_profile(p))?;
        if !addr.ip().is_loopback() && !auth.configured() {
            return Err(HttpError::UnauthenticatedBind(addr));
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| HttpError::Bind { addr, source })?;
        // The states of bridged calls name where the other replicas reach this one; an unspecified address names
        // nothing they could reach.
        match &http.advertise {
            Some(a) => gateway.advertise(a.clone()),
            None if !addr.ip().is_unspecified() => gateway.advertise(addr.to_string()),
            None => {}
        }
        // The gateway's decode limits are read off a session, the only public place they are exposed.
        let (probe, _drain) = Session::open(&gateway);
        let decode_limits = probe.limits();
        probe.close();
        let mut limits = http.limits;
        if !auth.configured() {
            // Every caller is the one anonymous identity: a share could not separate callers, only lower the
            // ceilings for all of them.
            limits.max_sessions_per_identity = limits.max_sessions;
            limits.max_concurrent_requests_per_identity = limits.max_concurrent_requests;
            limits.max_connections_per_identity = usize::MAX;
        }
        let app = App {
            policy: OriginPolicy::new(addr, &http.allowed_hosts, &http.allowed_origins),
            auth: Arc::new(LiveAuth::new(auth)),
            admin: http.admin.as_ref().map(|a| a.sha256),
            profile_store: ProfileStore::default(),
            verbs: None,
            limits,
            sessions: Table::new(
                limits.max_sessions,
                limits.max_sessions_per_identity,
                limits.session_idle,
            ),
            requests: Shares::new(
                limits.max_concurrent_requests,
                limits.max_concurrent_requests_per_identity,
            ),
            bodies: Shares::new(
                limits.max_concurrent_requests.saturating_mul(2),
                limits.max_concurrent_requests_per_identity,
            ),
            decode_limits,
            forwarder: forward::Forwarder::new(),
            gateway,
            shutdown: CancellationToken::new(),
        };
        Ok(Self {
            listener,
            app,
            addr,
        })
    }

    /// Says where the served profiles come from in `GET /mcp/status` (the config's alone by default).
    pub fn profile_store(mut self, store: ProfileStore) -> Self {
        self.app.profile_store = store;
        self
    }

    /// Answers the product verbs' admin routes with `verbs` (`--remote`); they are 404 without it.
    pub fn admin_verbs(mut self, verbs: Arc<dyn AdminVerbs>) -> Self {
        self.app.verbs = Some(verbs);
        self
    }

    /// What reloads this server's API keys and JWKS while it serves.
    pub fn auth_reload(&self) -> AuthReload {
        AuthReload {
            auth: Arc::clone(&self.app.auth),
            sessions: Arc::clone(&self.app.sessions),
            addr: self.addr,
        }
    }

    /// The address actually bound (the port chosen when `addr` named port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until `shutdown` resolves; then ends every session and gives open connections a short grace.
    /// The caller shuts the gateway down afterwards.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        let app = Arc::new(self.app);
        let stop = app.shutdown.clone();
        let sessions = Arc::clone(&app.sessions);
        let sweeper = tokio::spawn(sweep(Arc::clone(&sessions), stop.clone()));
        let trigger = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown => {}
                () = trigger.cancelled() => {}
            }
            // Open GET streams would hold the graceful shutdown forever: ending the sessions ends them.
            sessions.end_all();
            trigger.cancel();
        });
        let rules = Rules {
            header_timeout: app.limits.header_timeout,
            keep_alive: app.limits.keep_alive,
            pending: Pending::new(
                app.limits.max_pending_connections,
                app.limits.max_connections_per_identity,
            ),
        };
        connections::serve(
            self.listener,
            router(app),
            rules,
            stop.clone(),
            SHUTDOWN_GRACE,
        )
        .await;
        stop.cancel();
        sweeper.abort();
        Ok(())
    }
}

/// The routes: `/mcp` and `/mcp/ws` behind the caller check, `/mcp/status` behind the caller or the admin check
/// (`status`), the admin routes behind the admin check, everything behind the Host/Origin check.
fn router(app: Arc<App>) -> Router {
    let mcp = route_post(post::post)
        .get(session_routes::get)
        .delete(session_routes::delete)
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            authenticate,
        ));
    let ws = axum::routing::get(ws::upgrade).route_layer(middleware::from_fn_with_state(
        Arc::clone(&app),
        authenticate,
    ));
    let mut routes = Router::new()
        .route("/mcp", mcp)
        .route(ws::PATH, ws)
        .route(
            auth::METADATA_PATH,
            axum::routing::get(auth::metadata_route),
        )
        .route(
            auth::METADATA_MCP_PATH,
            axum::routing::get(auth::metadata_route),
        )
        .route("/mcp/status", axum::routing::get(status::status));
    if let Some(digest) = app.admin {
        routes = routes.merge(admin::routes(digest));
    }
    routes
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            check_origin,
        ))
        .with_state(app)
}

/// First gate: DNS rebinding (`origin`).
async fn check_origin(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    match app.policy.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(why) => {
            tracing::warn!("refused a request: {why}");
            Refusal::Forbidden(why.to_string()).into_response()
        }
    }
}

/// Second gate: who is calling; the principal rides along to the handler.
async fn authenticate(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    match app.auth.load().authenticate(request.headers()) {
        Ok(principal) => {
            if let Some(ticket) = request.extensions().get::<Arc<Ticket>>() {
                if !ticket.authenticated(&principal.identity) {
                    return too_many_connections(&app);
                }
            }
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(rejection) => rejection.into_response(),
    }
}

/// The refusal for a connection beyond its identity's share: 429, and the connection closed after it.
pub(crate) fn too_many_connections(app: &App) -> Response {
    let mut r = Refusal::Limit {
        share: true,
        message: format!(
            "this caller holds its share of {} open connections (http.limits.maxConnectionsPerIdentity): \
             closing one frees a place",
            app.limits.max_connections_per_identity
        ),
        retry_after_secs: 1,
    }
    .into_response();
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
}

async fn sweep(sessions: Arc<Table>, stop: CancellationToken) {
    let mut every = tokio::time::interval(sessions.sweep_every());
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => sessions.sweep(),
        }
    }
}

/// Whether `Accept` admits JSON and SSE. A missing header accepts anything (RFC 9110); wildcards count, as the
/// official Python server counts them.
pub(crate) fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let mut values = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .peekable();
    if values.peek().is_none() {
        return (true, true);
    }
    let (mut json, mut sse) = (false, false);
    for value in values {
        let Ok(text) = value.to_str() else { continue };
        for range in text.split(',') {
            let kind = range
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            json |= matches!(kind.as_str(), "application/json" | "application/*" | "*/*");
            sse |= matches!(kind.as_str(), "text/event-stream" | "text/*" | "*/*");
        }
    }
    (json, sse)
}

/// A header that must appear at most once, as visible ASCII.
pub(crate) fn single_header<'a>(
    headers: &'a HeaderMap,
    name: &str,
) -> Result<Option<&'a str>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::BadRequest(format!(
            "the {name} header is sent more than once"
        )));
    }
    origin::visible_ascii(first)
        .map(Some)
        .map_err(|why| Refusal::BadRequest(format!("the {name} header is {why}")))
}
