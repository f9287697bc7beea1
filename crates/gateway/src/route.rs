//! Where what an upstream sends on its own goes, and whom a client's own settings reach: upstream requests
//! (sampling, elicitation, roots) to the session whose call caused them, log messages and resource updates to
//! the sessions they concern, cancellations to the session the request was relayed to; a client's log level and
//! roots change reach upstreams on that client's behalf only.
//!
//! Every upstream request is labelled with its server before it is routed (`elicit::label_relayed`), so an
//! elicitation can never pass for toolgate's own approval question, and is decided and recorded by the pipeline
//! (`pipeline::asks`) before it is relayed; here is only where it would go.
//!
//! The rule for an upstream's request: attributed by the calls in flight on that upstream (`correlate`). Calls of
//! one session only: that session, which must be able to answer (else refused, never handed to another client).
//! Calls of several sessions: refused, because a stdio server's request names no call (an HTTP upstream's
//! request that came on a call's own answer stream names it, and goes to that call exactly: `correlate`). No call in flight (a
//! server asking for roots after start-up, say): the only open session that can answer it, else refused. A
//! client's `roots/list_changed` reaches an upstream only when that client is the one a `roots/list` from it
//! would go to now, by the same rule.
//!
//! Log messages go to the session whose calls are the only ones in flight on that upstream, else to every
//! session; either way only where that session's own level admits them. Each upstream is set to the most verbose
//! level any open session asked for. Resource updates go only to the sessions subscribed to that URI on that
//! upstream; the upstream holds one subscription for all of them, ended when the last one unsubscribes or closes.
//!
//! A call bridged for a modern client (`bridge`) is attributed like any other; what it asks goes to the bridge,
//! which turns it into the `inputRequests` of the client's result, instead of to a session. A modern client
//! hears log messages only on the stream of a request that asked for them (`_meta` log level) while that
//! request's call is the only one in flight on the upstream; it has no session stream for anything else.

use crate::client::{needed_capability, Client, LogLevel};
use crate::correlate::Cause;
use crate::errors::invalid_params;
use crate::gateway::Gateway;
use crate::outbox::Stream;
use crate::pipeline::asks::Target;
use crate::session::{Left, Session};
use jsonrpc::error_object;
use serde_json::{json, Value};
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;
use upstream::Upstream;

impl Gateway {
    /// The session an upstream's request goes to and the client request that caused it (when one did), or the
    /// error the upstream is answered with.
    pub(crate) fn route_request(
        &self,
        server: &str,
        method: &str,
        caller: Option<u64>,
    ) -> Result<Target, Value> {
        let refused = |why: String| Err(error_object(jsonrpc::METHOD_NOT_FOUND, why, None));
        let unattributed = |why: String| Err(error_object(jsonrpc::INTERNAL_ERROR, why, None));
        let Some(cap) = needed_capability(method) else {
            return refused(format!("toolgate does not relay {method} to clients"));
        };
        // The client's roots would replace the directories the policy resolves this server's paths in.
        if cap == "roots" && self.stages.guard().keeps_own_directories(server) {
            return refused(format!(
                "toolgate does not relay {method} to {server}: its policy resolves paths in the directories the \
                 server was started with"
            ));
        }
        match self.stages.correlation.cause_of(server, caller) {
            Cause::Call {
                bridge: Some(sink),
                client,
                ..
            } => Ok(Target::Bridge(sink, client)),
            Cause::Call {
                client, request, ..
            } => {
                let Some(session) = self.session_of(client.as_ref()).filter(|s| s.is_open()) else {
                    return unattributed(format!(
                        "toolgate cannot relay {method}: the call that caused it has no client to ask (the client is gone, or no client session stands behind the call)"
                    ));
                };
                match session.relay_refusal(method, cap) {
                    Some(why) => refused(why),
                    None => Ok(Target::Client(session, request)),
                }
            }
            Cause::Ambiguous { sessions } => unattributed(format!(
                "toolgate cannot relay {method}: calls of {sessions} clients are in flight on {server}, and a \
                 server's request does not say which call caused it, so toolgate refuses rather than guess"
            )),
            Cause::Idle => {
                let open: Vec<_> = self
                    .live_sessions()
                    .into_iter()
                    .filter(|s| s.is_open())
                    .collect();
                let able: Vec<_> = open
                    .iter()
                    .filter(|s| s.relay_refusal(method, cap).is_none())
                    .collect();
                match (able.as_slice(), open.as_slice()) {
                    ([one], _) => Ok(Target::Client(Arc::clone(one) as Arc<dyn Client>, None)),
                    ([], []) => unattributed("no client is connected".to_owned()),
                    ([], [only]) => refused(only.relay_refusal(method, cap).unwrap_or_default()),
                    ([], _) => refused(format!(
                        "toolgate cannot relay {method}: no connected client declared the {cap:?} capability"
                    )),
                    (several, _) => unattributed(format!(
                        "toolgate cannot relay {method}: it came outside any call, and {} connected clients could \
                         answer it; toolgate refuses rather than guess",
                        several.len()
                    )),
                }
            }
        }
    }

    /// An upstream's request: governed, then relayed to the session it is attributed to, or refused
    /// (`pipeline::govern_upstream_request`).
    pub(crate) async fn on_upstream_request(
        &self,
        server: &str,
        id: Value,
        method: String,
        params: Option<Value>,
        caller: Option<u64>,
    ) {
        let routed = self.route_request(server, &method, caller);
        let parent = self.stages.correlation.trace_of(server, caller);
        let asked = crate::pipeline::asks::UpstreamRequest {
            server,
            id,
            method,
            params,
            parent,
        };
        crate::pipeline::govern_upstream_request(&self.stages, asked, routed).await;
    }

    /// An upstream's notification other than what its reader delivered itself (routed progress).
    pub(crate) async fn on_notification(
        &self,
        server: &str,
        method: String,
        params: Option<Value>,
    ) {
        match method.as_str() {
            // Routed progress went straight to its client from the upstream's reader; the rest has no owner.
            "notifications/progress" => {}
            "notifications/cancelled" => {
                // An upstream withdrawing a request it relayed: only the client it went to hears of it.
                let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) else {
                    return;
                };
                let client = self.stages.correlation.relay_ended(server, id);
                if let Some(session) = client.and_then(|c| self.session(c.session_id())) {
                    session.relay_cancelled(server, id).await;
                }
            }
            "notifications/tasks/status" | "notifications/tasks" => {
                if let Some(params) = params {
                    // To the session that owns the task, under toolgate's id.
                    let owned = self.stages.task_status(server, params);
                    if let Some((session, params)) = owned {
                        if let Some(session) = self.session(&session) {
                            session.forward_notification(&method, Some(params)).await;
                        }
                    }
                }
            }
            "notifications/subscriptions/acknowledged" => {
                self.stages.listens.acknowledged(server, params.as_ref())
            }
            "notifications/resources/updated" => {
                let Some(uri) = params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                else {
                    return;
                };
                for session in self.live_sessions() {
                    if session.is_subscribed(server, uri) {
                        session.forward_notification(&method, params.clone()).await;
                    }
                }
            }
            "notifications/message" => {
                // A level toolgate does not know is treated as the least severe: only sessions that want
                // everything (or set no level) see it.
                let level = params
                    .as_ref()
                    .and_then(|p| p.get("level"))
                    .and_then(Value::as_str)
                    .and_then(LogLevel::parse)
                    .unwrap_or(LogLevel::Debug);
                // A modern client's request that opted in hears its call's log lines on its own stream.
                if let Cause::Call {
                    client,
                    request: Some(request),
                    log_level: Some(least),
                    ..
                } = self.stages.correlation.cause(server)
                {
                    if let Some(s) = self.session_of(client.as_ref()).filter(|s| s.is_modern()) {
                        if level >= least {
                            s.notify_on(Stream::Request(request), &method, params.clone());
                        }
                        return;
                    }
                }
                for session in self.concerned(server) {
                    if session.admits(level) {
                        session.forward_notification(&method, params.clone()).await;
                    }
                }
            }
            _ => {
                for session in self.concerned(server) {
                    session.forward_notification(&method, params.clone()).await;
                }
            }
        }
    }

    /// The live session behind a client the correlation table names.
    fn session_of(&self, client: Option<&Weak<dyn Client>>) -> Option<Arc<Session>> {
        let client = client?.upgrade()?;
        self.session(client.session_id())
    }

    /// The sessions a notification of `server` concerns: the one whose calls are the only ones in flight on it,
    /// else every session.
    fn concerned(&self, server: &str) -> Vec<Arc<Session>> {
        match self.stages.correlation.cause(server) {
            Cause::Call { client, .. } => self.session_of(client.as_ref()).into_iter().collect(),
            Cause::Ambiguous { .. } | Cause::Idle => self.live_sessions(),
        }
    }

    /// The upstreams a roots change of `session` is passed to: those whose `roots/list` would go to it now.
    pub(crate) fn roots_targets(&self, session: &Session) -> Vec<Arc<Upstream>> {
        self.upstreams()
            .iter()
            .filter(|up| {
                matches!(self.route_request(up.name(), "roots/list", None), Ok(Target::Client(c, _)) if c.session_id() == session.id)
            })
            .cloned()
            .collect()
    }

    /// The level upstreams are set to: the most verbose any open session asked for (`None` when none did).
    pub(crate) fn upstream_log_level(&self) -> Option<LogLevel> {
        self.live_sessions()
            .iter()
            .filter(|s| s.is_open())
            .filter_map(|s| s.lock().log_level)
            .min()
    }

    /// Sets every upstream that logs to `level`.
    async fn set_upstream_level(&self, level: LogLevel) {
        for up in self.upstreams().iter() {
            if up.catalog().has("logging") {
                if let Ok(conn) = up.connection() {
                    let never = CancellationToken::new();
                    let params = json!({"level": level.as_str()});
                    let _ = conn
                        .request(
                            "logging/setLevel",
                            Some(params),
                            up.request_timeout(),
                            &never,
                        )
                        .await;
                }
            }
        }
    }

    /// What a closed session leaves upstream: the requests relayed to it are answered with an error (nobody will
    /// answer them); each subscription no open session still shares is ended upstream, else the upstream would go
    /// on sending updates nobody hears of; and when it had set a log level, upstreams follow the sessions still
    /// open (unchanged when no open session set one: MCP has no way back to a server's default).
    pub(crate) async fn session_closed(self: Arc<Self>, left: Left) {
        for r in left.relayed {
            self.stages
                .correlation
                .relay_ended(&r.server, &r.upstream_id);
            let err = error_object(
                jsonrpc::INTERNAL_ERROR,
                "the client this request was relayed to has disconnected",
                None,
            );
            self.stages
                .answer_upstream(&r.server, r.upstream_id, Err(err))
                .await;
        }
        for (server, uri) in left.subscriptions {
            if !self.subscribed_anywhere(&server, &uri) {
                // One task each: an upstream slow to answer holds up neither the others nor this close.
                tokio::spawn(Arc::clone(&self).end_subscription(server, uri));
            }
        }
        if let Some(level) = self.upstream_log_level().filter(|_| left.had_level) {
            self.set_upstream_level(level).await;
        }
    }

    /// Tells `server` that nobody is subscribed to `uri` any more; best effort (the upstream may be gone).
    async fn end_subscription(self: Arc<Self>, server: String, uri: String) {
        if self.stages.listens.close(&server, &uri) {
            return;
        }
        let Some(up) = self.upstream(&server) else {
            return;
        };
        let never = CancellationToken::new();
        let answer = match up.connection() {
            Ok(conn) => {
                conn.request(
                    "resources/unsubscribe",
                    Some(json!({"uri": uri})),
                    up.request_timeout(),
                    &never,
                )
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = answer {
            tracing::debug!(
                server,
                uri,
                "subscription of a closed session not ended upstream: {e}"
            );
        }
    }

    /// Whether an open session is subscribed to `uri` on `server`.
    fn subscribed_anywhere(&self, server: &str, uri: &str) -> bool {
        self.live_sessions()
            .iter()
            .any(|s| s.is_open() && s.is_subscribed(server, uri))
    }
}

impl Session {
    pub(crate) fn is_subscribed(&self, server: &str, uri: &str) -> bool {
        self.lock()
            .subscriptions
            .contains(&(server.to_owned(), uri.to_owned()))
    }

    /// Records a subscription the upstream accepted for this session.
    pub(crate) fn subscribed(&self, server: &str, uri: &str) {
        self.lock()
            .subscriptions
            .insert((server.to_owned(), uri.to_owned()));
    }

    /// Whether a log message of `level` reaches this client: its own level admits it (no level set admits all).
    pub(crate) fn admits(&self, level: LogLevel) -> bool {
        self.lock().log_level.is_none_or(|own| level >= own)
    }

    /// `resources/unsubscribe`: this session stops hearing of `uri` at once. Whether the upstream must be told:
    /// only when no other session is still subscribed to it there (its subscription is shared).
    pub(crate) fn unsubscribe(&self, server: &str, uri: &str) -> bool {
        self.lock()
            .subscriptions
            .remove(&(server.to_owned(), uri.to_owned()));
        !self.gateway.subscribed_anywhere(server, uri)
    }

    /// `logging/setLevel`: this session's level, kept by toolgate; upstreams that log are set to the most
    /// verbose level any open session asked for.
    pub(crate) async fn set_level(&self, params: Value) -> Result<Value, Value> {
        let Some(level) = params
            .get("level")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse)
        else {
            let names: Vec<_> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
            return Err(invalid_params(format!(
                "logging/setLevel needs \"level\", one of {}",
                names.join(", ")
            )));
        };
        self.lock().log_level = Some(level);
        let upstream_level = self.gateway.upstream_log_level().unwrap_or(level);
        self.gateway.set_upstream_level(upstream_level).await;
        Ok(json!({}))
    }

    /// `notifications/roots/list_changed` from this client: passed to the upstreams whose roots it provides.
    pub(crate) async fn roots_changed(&self) {
        for up in self.gateway.roots_targets(self) {
            if let Ok(conn) = up.connection() {
                let _ = conn.notify("notifications/roots/list_changed", None).await;
            }
        }
    }
}

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
