//! One client connection: its protocol era, its declared capabilities, the requests it has in flight (so it can
//! cancel them and cannot reuse their ids), and the upstream requests relayed to it.
//!
//! Requests in flight are bounded (`MAX_IN_FLIGHT`): when the bound is reached, the front end stops reading
//! until one finishes, so a client that floods requests (or never reads its answers) holds a fixed amount of
//! memory instead of one task per request.
//!
//! This is the API every front end drives (with `front`): `Session::open`, `handle` each decoded message with what
//! its transport said about it, take outgoing messages from the `Drain` (each tagged with its `Stream`), `close`.
//! Nothing here knows a transport.
//!
//! Era per connection: `initialize` makes it legacy; a request carrying
//! `_meta["io.modelcontextprotocol/protocolVersion"]` makes it modern. `server/discover` may come first either way,
//! because clients probe with it before choosing.

use crate::client::{ClientEra, LogLevel};
use crate::front::{Binding, RequestMeta};
use crate::gateway::Gateway;
use crate::outbox::{Outbox, Stream};
use crate::rebuild::ListKind;
use crate::wire::Reply;
use jsonrpc::{error_object, error_response, notification, result_response, Id, Message};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use upstream::{LEGACY_VERSIONS, MODERN_VERSION};

/// Every version this gateway speaks, newest first, as `server/discover` lists them.
pub const SUPPORTED_VERSIONS: &[&str] = &[
    MODERN_VERSION,
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// Requests of one client running at once. Past it the client's input is not read until one finishes: enough
/// for any agent's parallel calls, small enough that a flood costs a bounded amount of memory. A request held
/// for approval counts too; approval waits are bounded, so the slot comes back.
pub const MAX_IN_FLIGHT: usize = 64;

pub(crate) struct State {
    pub era: ClientEra,
    pub client_caps: Value,
    pub in_flight: HashMap<Id, CancellationToken>,
    /// The identity this session serves (`front`).
    pub binding: Binding,
    /// Gateway id sent to the client → the upstream request it stands for.
    pub relayed: HashMap<Id, Relayed>,
    /// Open `subscriptions/listen` streams of a modern client: (listen request id, filter).
    pub listens: Vec<(Id, Value)>,
    /// Requests toolgate itself sent the client (elicitation for approvals), awaiting answers.
    pub asked: HashMap<Id, oneshot::Sender<Result<Value, Value>>>,
    /// Resources this client subscribed to: (server, URI). Only these updates reach it.
    pub subscriptions: HashSet<(String, String)>,
    /// The log level this client set; `None` admits every message.
    pub log_level: Option<LogLevel>,
    pub closed: bool,
}

/// An upstream request relayed to this client.
pub(crate) struct Relayed {
    pub server: String,
    pub upstream_id: Value,
    /// The client request whose call caused it, when one did: the stream the request belongs to.
    pub cause: Option<Id>,
    /// Its records, closed with the client's answer (dropped unanswered: recorded as cancelled).
    pub records: Option<Box<dyn crate::client::RelayEnd>>,
}

/// What a closed session leaves upstream for `Gateway::session_closed` to settle.
pub(crate) struct Left {
    /// Upstream requests relayed to it and not yet answered.
    pub relayed: Vec<Relayed>,
    /// Whether it had set a log level.
    pub had_level: bool,
    /// Its resource subscriptions, as (server, uri).
    pub subscriptions: Vec<(String, String)>,
}

/// One client's session; front ends hold it as `Arc<Session>` (see `Session::open`).
pub struct Session {
    /// Identifies this connection for session grants.
    pub(crate) id: String,
    pub(crate) gateway: Arc<Gateway>,
    /// The profile this session runs under (`None`: the served one): each call is decided, and the catalog
    /// shown, by that profile's guard as it is when the call starts (`guard`), so a reload reaches open sessions.
    profile: Option<String>,
    /// The guard the session opened with, used only if its profile were gone (a reload refuses to remove a
    /// profile that open sessions run under).
    opened_with: Arc<crate::guard::Guard>,
    out: Outbox,
    pub(crate) state: Mutex<State>,
    pub(crate) next_relay: AtomicU64,
    /// One permit per request in flight (`MAX_IN_FLIGHT`).
    slots: Arc<Semaphore>,
}

impl Session {
    pub(crate) fn new(gateway: Arc<Gateway>, out: Outbox) -> Arc<Self> {
        let guard = gateway.stages.guard();
        Self::new_as(gateway, out, None, guard)
    }

    /// A session whose calls `guard` decides.
    pub(crate) fn new_as(
        gateway: Arc<Gateway>,
        out: Outbox,
        profile: Option<String>,
        guard: Arc<crate::guard::Guard>,
    ) -> Arc<Self> {
        let session = Arc::new(Self {
            id: crate::ids::session_id(),
            gateway: Arc::clone(&gateway),
            profile,
            opened_with: guard,
            out,
            state: Mutex::new(State {
                era: ClientEra::Unknown,
                client_caps: json!({}),
                in_flight: HashMap::new(),
                binding: Binding::Unbound,
                relayed: HashMap::new(),
                listens: Vec::new(),
                asked: HashMap::new(),
                subscriptions: HashSet::new(),
                log_level: None,
                closed: false,
            }),
            next_relay: AtomicU64::new(1),
            slots: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        });
        gateway.register_session(&session);
        session
    }

    /// The guard of this session's profile as it is now: the one a call or list starting now runs under.
    pub(crate) fn guard(&self) -> Arc<crate::guard::Guard> {
        self.gateway
            .guard_for(self.profile.as_deref())
            .unwrap_or_else(|_| Arc::clone(&self.opened_with))
    }

    /// The profile this session runs under (`None`: the served one).
    pub(crate) fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The identity this session serves (`RequestMeta::identity` of its first message).
    pub(crate) fn identity(&self) -> Option<String> {
        match &self.lock().binding {
            Binding::To(identity) => identity.clone(),
            Binding::Unbound => None,
        }
    }

    /// Whether the session still serves its client (not closed, and its outbox did not overflow).
    pub fn is_open(&self) -> bool {
        !self.lock().closed && !self.out.is_closed()
    }

    /// Ends the session: every request still running is cancelled (and its upstream told so), requests relayed to
    /// it are answered upstream with an error and its subscriptions no other session shares are ended upstream
    /// (`Gateway::session_closed`), and the session's grants are revoked
    /// (its id is never used again, so they could only ever be clutter). What is already queued stays in the
    /// drain, which ends once the session and its requests are gone.
    /// Questions toolgate asked the client (elicitation) are answered with an error at once: a waiter kept for
    /// an answer that cannot come would keep the session, and so its drain, alive. Closing twice does nothing more.
    pub fn close(&self) {
        let (relayed, had_level, asked, subscriptions) = {
            let mut st = self.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            for (_, token) in st.in_flight.drain() {
                token.cancel();
            }
            let relayed: Vec<_> = st.relayed.drain().map(|(_, r)| r).collect();
            let asked: Vec<_> = st.asked.drain().map(|(_, waiter)| waiter).collect();
            let subscriptions: Vec<_> = st.subscriptions.drain().collect();
            (relayed, st.log_level.is_some(), asked, subscriptions)
        };
        // Dropped outside the lock: each waiter wakes and takes it to remove nothing.
        drop(asked);
        if !relayed.is_empty() || had_level || !subscriptions.is_empty() {
            let left = Left {
                relayed,
                had_level,
                subscriptions,
            };
            tokio::spawn(Arc::clone(&self.gateway).session_closed(left));
        }
        self.gateway.stages.code_sessions.forget(&self.id);
        if let Some(state) = &self.gateway.stages.state {
            if let Err(e) = state.store(|s| s.revoke_session(&self.id)) {
                tracing::warn!("session grants not revoked: {e}");
            }
        }
    }

    /// Resolves once none of this session's requests is running (each holds a slot until its answer is queued,
    /// or until its task ends). `Gateway::shutdown` waits here after closing the session, so a cancelled call
    /// records its end before the audit queue is flushed.
    pub(crate) async fn settled(&self) {
        let _all = self.slots.acquire_many(MAX_IN_FLIGHT as u32).await;
    }

    /// This client's outbox, for messages that must keep their order with responses.
    pub(crate) fn outbox(&self) -> Outbox {
        self.out.clone()
    }

    /// Queues the answer to request `id` on its stream; waits for room (the waiting task is that request).
    pub(crate) async fn send(&self, id: &Id, msg: Value) {
        self.out.send(Stream::Request(id.clone()), msg).await;
    }

    /// Queues a message the client did not ask for on the session's stream; never waits, so the event loop and the
    /// upstreams' readers are never held by a client that does not read (its outbox closes instead). False when
    /// not queued.
    pub(crate) fn post(&self, msg: Value) -> bool {
        self.post_on(Stream::Session, msg)
    }

    /// Like `post`, on the given stream (what belongs to one request goes on that request's stream).
    pub(crate) fn post_on(&self, stream: Stream, msg: Value) -> bool {
        self.out.post(stream, msg)
    }

    /// A notification to the client on the session's stream; like `post`, it never waits.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        self.post(notification(method, params));
    }

    /// A notification on the given stream; never waits.
    pub(crate) fn notify_on(&self, stream: Stream, method: &str, params: Option<Value>) {
        self.post_on(stream, notification(method, params));
    }

    /// Waits for a free request slot. The front end's reader waits here, which is what stops it reading.
    async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).acquire_owned().await.ok()
    }

    /// Handles one decoded message from the client, with what its transport said about it (`meta`). Requests
    /// run as their own tasks, at most `MAX_IN_FLIGHT` at once: a request beyond that waits here for a slot, and
    /// so does the reader that called this, which is what stops a flood from being read.
    pub async fn handle(self: &Arc<Self>, msg: Message, meta: &RequestMeta) {
        if let Err(e) = self.admit(&msg, meta) {
            // Only a request can be answered; anything else that is not admitted is dropped.
            if let Message::Request { id, .. } = msg {
                self.send(&id, error_response(Some(&id), e)).await;
            }
            return;
        }
        match msg {
            Message::Request { id, method, params } => {
                let Some(slot) = self.slot().await else {
                    return;
                };
                let params = params.unwrap_or_else(|| json!({}));
                let modern = match self.era_gate(&method, &params) {
                    Ok(m) => m,
                    Err(e) => return self.send(&id, error_response(Some(&id), e)).await,
                };
                let token = CancellationToken::new();
                let duplicate = {
                    let mut st = self.lock();
                    let dup = st.in_flight.contains_key(&id);
                    if !dup {
                        st.in_flight.insert(id.clone(), token.clone());
                    }
                    dup
                };
                if duplicate {
                    let err = error_object(
                        jsonrpc::INVALID_REQUEST,
                        format!("request id {id} is already in flight; ids must be unique among open requests"),
                        None,
                    );
                    self.send(&id, error_response(Some(&id), err)).await;
                    return;
                }
                let session = Arc::clone(self);
                let traceparent = meta
                    .traceparent
                    .clone()
                    .filter(|_| self.gateway.stages.opts.telemetry.is_on());
                // Boxed: the task is spawned, polled and completed as a pointer, not as its few KB of state,
                // which the runtime would otherwise copy on each of those steps.
                tokio::spawn(Box::pin(crate::front::with_traceparent(
                    traceparent,
                    async move {
                        let outcome = session.dispatch(&id, &method, params, modern, &token).await;
                        session.lock().in_flight.remove(&id);
                        match outcome {
                            Reply::Result(result) => {
                                session.send(&id, result_response(&id, result)).await
                            }
                            Reply::Error(error) => {
                                session.send(&id, error_response(Some(&id), error)).await
                            }
                            Reply::Cancelled | Reply::StreamOpen => {}
                        }
                        // Released only once the answer is queued: a client that does not read its answers fills
                        // the bounded outbox, then the slots, then stops being read.
                        drop(slot);
                    },
                )));
            }
            Message::Notification { method, params } => self.on_notification(&method, params).await,
            Message::Response {
                id: Some(id),
                outcome,
            } => {
                let (relayed, asked) = {
                    let mut st = self.lock();
                    (st.relayed.remove(&id), st.asked.remove(&id))
                };
                if let Some(waiter) = asked {
                    let _ = waiter.send(outcome);
                } else if let Some(mut r) = relayed {
                    tracing::debug!(server = r.server, cause = ?r.cause, "relayed request answered");
                    if let Some(records) = r.records.take() {
                        records.answered(&outcome).await;
                    }
                    let stages = &self.gateway.stages;
                    stages.correlation.relay_ended(&r.server, &r.upstream_id);
                    stages
                        .answer_upstream(&r.server, r.upstream_id, outcome)
                        .await;
                }
            }
            Message::Response { id: None, .. } => {}
        }
    }

    async fn on_notification(&self, method: &str, params: Option<Value>) {
        match method {
            "notifications/cancelled" => {
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(Id::from_value);
                let token = id.and_then(|id| self.lock().in_flight.get(&id).cloned());
                if let Some(token) = token {
                    token.cancel();
                }
            }
            "notifications/initialized" => {}
            "notifications/roots/list_changed" => self.roots_changed().await,
            _ => tracing::debug!("ignoring client notification {method}"),
        }
    }

    /// Tells the client a merged list changed: legacy clients directly, modern ones on matching listen streams.
    pub(crate) async fn list_changed(&self, kind: ListKind) {
        let (era, listens) = {
            let st = self.lock();
            (st.era.clone(), st.listens.clone())
        };
        match era {
            ClientEra::Legacy(_) => self.notify(kind.method(), None).await,
            ClientEra::Modern => {
                for (id, filter) in listens {
                    if filter.get(kind.filter_key()) == Some(&Value::Bool(true)) {
                        let meta = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": id.to_value()}});
                        // It answers that listen request, whose stream stays open for it.
                        self.notify_on(Stream::Request(id), kind.method(), Some(meta));
                    }
                }
            }
            ClientEra::Unknown => {}
        }
    }

    /// Upstream notifications other than progress and cancellation (log messages, resource updates) go to legacy
    /// clients as they came, once `route` decided they concern this one. Modern clients have no session stream:
    /// they receive log messages only on the stream of a request that asked for them (`route`).
    pub(crate) async fn forward_notification(&self, method: &str, params: Option<Value>) {
        if matches!(self.lock().era, ClientEra::Legacy(_)) {
            self.notify(method, params).await;
        }
    }

    pub(crate) fn is_modern(&self) -> bool {
        matches!(self.lock().era, ClientEra::Modern)
    }

    /// Why this client cannot take an upstream's request needing capability `cap`; `None` when it can.
    pub(crate) fn relay_refusal(&self, method: &str, cap: &str) -> Option<String> {
        let st = self.lock();
        match &st.era {
            ClientEra::Legacy(_) if st.client_caps.get(cap).is_some() => None,
            ClientEra::Legacy(_) => Some(format!(
                "toolgate cannot relay {method}: the client did not declare the {cap:?} capability"
            )),
            ClientEra::Unknown => Some(format!(
                "toolgate cannot relay {method}: the client has not initialized its connection"
            )),
            ClientEra::Modern => Some(format!(
                "toolgate cannot relay {method}: the client speaks protocol {MODERN_VERSION}, which has no \
                 server requests; toolgate turns them into input_required results of tools/call only"
            )),
        }
    }

    /// Sends toolgate's own request to the client and waits for the answer (bounded: a client that never answers
    /// must not keep a waiter forever).
    /// `stream` is the stream of the call the question is about.
    pub(crate) async fn ask_client(
        &self,
        stream: Stream,
        method: &str,
        params: Value,
    ) -> Result<Value, Value> {
        let id = Id::Str(format!(
            "tg-ask-{}",
            self.next_relay.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        self.lock().asked.insert(id.clone(), tx);
        if !self.post_on(stream, jsonrpc::request(&id, method, Some(params))) {
            self.lock().asked.remove(&id);
            return Err(error_object(
                jsonrpc::INTERNAL_ERROR,
                "the request could not be queued for the client (its session is closed, or it is over the message limit)",
                None,
            ));
        }
        match tokio::time::timeout(std::time::Duration::from_secs(600), rx).await {
            Ok(Ok(answer)) => answer,
            _ => {
                self.lock().asked.remove(&id);
                Err(error_object(
                    jsonrpc::REQUEST_TIMEOUT,
                    "the client did not answer",
                    None,
                ))
            }
        }
    }

    pub(crate) fn legacy_version_for(requested: &str) -> &'static str {
        LEGACY_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or(LEGACY_VERSIONS[0])
    }
}
