//! One live connection to an upstream: the JSON-RPC peer over any `Link` — a reader task dispatching what arrives,
//! and the table of requests awaiting answers. Framing and the transport's resources belong to the link.
//!
//! Ids sent upstream are toolgate's own integers, so client ids never reach an upstream and two clients' ids can
//! never collide there. Each request waits with a timeout and a cancellation token; either sends
//! `notifications/cancelled` upstream so the server can stop work nobody will read.

use crate::era::{
    Era, CLIENT_CAPABILITIES_META, CLIENT_INFO_META, MODERN_VERSION, PROTOCOL_META_PREFIX,
    PROTOCOL_VERSION_META,
};
use crate::error::{CallError, Result};
use crate::link::{Incoming, Link, SendError};
use crate::own_meta::strip_own_meta;
use jsonrpc::{notification, request, Id, Message};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Something an upstream sent that the gateway must handle.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A notification (progress, cancelled, message, resources/updated, …), as sent.
    Notification {
        server: String,
        method: String,
        params: Option<Value>,
    },
    /// A request to the client (sampling, elicitation, roots); answer with `Connection::respond`. `caller` is
    /// set when the link tells which request it came with (it arrived on that request's own answer stream) and
    /// that request was sent with `Connection::request_for`: it names that call, exactly.
    Request {
        server: String,
        id: Value,
        method: String,
        params: Option<Value>,
        caller: Option<u64>,
    },
    /// The server's catalog was (re)loaded: after a start, a restart or a `list_changed`.
    CatalogChanged { server: String },
    /// The server's state changed (ready, exited, backing off).
    StatusChanged { server: String },
}

/// Delivers, while a progress notification is read, to the client that owns its token. Delivering it from the
/// reader keeps it ahead of the response that follows it on the same stdout; a detour through the event loop could
/// let the response overtake it, and clients drop progress that arrives after the result. It must not wait: the
/// reader serves every client of this upstream, so one client that does not read must not stall it.
pub trait ProgressRoutes: Send + Sync {
    /// `params` as the upstream sent them (with toolgate's token); false when no client owns the token.
    fn deliver(&self, params: &Value) -> bool;
}

/// Where a connection delivers what it reads.
#[derive(Clone)]
pub struct Sinks {
    pub events: mpsc::Sender<Event>,
    pub progress: Option<Arc<dyn ProgressRoutes>>,
}

/// Notifications the supervisor handles itself (catalog refreshes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refresh {
    Tools,
    Resources,
    Prompts,
}

type Waiter = oneshot::Sender<Result<Value>>;

pub struct Connection {
    server: String,
    link: Box<dyn Link>,
    pending: Mutex<HashMap<i64, Waiter>>,
    /// The caller each pending request was sent for (`request_for`), by toolgate's id of the request.
    callers: Mutex<HashMap<i64, u64>>,
    next_id: AtomicI64,
    era: RwLock<Option<Era>>,
    closed: CancellationToken,
    garbage_lines: AtomicU64,
}

impl Connection {
    /// Starts the reader task over a link that was just opened.
    pub(crate) fn start(
        server: &str,
        link: Box<dyn Link>,
        incoming: mpsc::Receiver<Incoming>,
        sinks: Sinks,
        refresh: mpsc::UnboundedSender<Refresh>,
    ) -> Arc<Self> {
        let conn = Arc::new(Self {
            server: server.to_owned(),
            link,
            pending: Mutex::new(HashMap::new()),
            callers: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            era: RwLock::new(None),
            closed: CancellationToken::new(),
            garbage_lines: AtomicU64::new(0),
        });
        tokio::spawn(Arc::clone(&conn).read_loop(incoming, sinks, refresh));
        conn
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn era(&self) -> Option<Era> {
        self.era.read().ok().and_then(|e| e.clone())
    }

    pub(crate) fn set_era(&self, era: Era) {
        if let Ok(mut e) = self.era.write() {
            *e = Some(era);
        }
    }

    /// Resolves when the connection is gone (the link's stream ended: the process closed stdout, a pipe broke).
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Marks the connection closed and ends the link (stdio: stdin EOF, grace, then the process group is ended);
    /// returns when the transport is gone.
    pub(crate) async fn end(&self, grace: Duration) {
        self.closed.cancel();
        self.link.shutdown(grace).await;
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    pub fn garbage_lines(&self) -> u64 {
        self.garbage_lines.load(Ordering::Relaxed)
    }

    pub fn stderr_tail(&self) -> Vec<String> {
        self.link.stderr_tail()
    }

    /// Why the link ended this life itself, if it did (see `Link::end_reason`).
    pub(crate) fn end_reason(&self) -> Option<String> {
        self.link.end_reason()
    }

    /// Sends a request and waits for its answer, the timeout, the cancellation, or the end of the connection.
    /// `params` are adapted to the upstream's era (`_meta` protocol keys added or removed).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value> {
        let params = self.adapt_params(params);
        self.request_raw(method, params, timeout, cancel).await
    }

    /// `request`, sent for `caller` (a call as the gateway names it): what the upstream asks on this request's
    /// own answer stream is delivered as `Event::Request` with `caller` set, so it reaches that call's client
    /// and no other, however many calls are in flight.
    pub async fn request_for(
        &self,
        caller: u64,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value> {
        let params = self.adapt_params(params);
        self.exchange(method, params, timeout, cancel, Some(caller))
            .await
    }

    pub(crate) async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value> {
        self.exchange(method, params, timeout, cancel, None).await
    }

    async fn exchange(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
        caller: Option<u64>,
    ) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.lock_pending().insert(id, tx);
        if let Some(caller) = caller {
            lock(&self.callers).insert(id, caller);
        }
        // Forgets the caller however the request ends (answered, timed out, cancelled, dropped).
        let _forget = ForgetCaller {
            callers: &self.callers,
            id,
        };
        if let Err(e) = self.send(&request(&Id::Int(id), method, params)).await {
            self.lock_pending().remove(&id);
            return Err(e);
        }
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(self.unavailable("connection closed"))),
            () = tokio::time::sleep(timeout) => {
                self.abandon(id, "timed out").await;
                Err(CallError::Timeout { server: self.server.clone(), secs: timeout.as_secs() })
            }
            () = cancel.cancelled() => {
                self.abandon(id, "cancelled by the client").await;
                Err(CallError::Cancelled)
            }
        }
    }

    /// Sends a notification to the upstream.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        self.send(&notification(method, params)).await
    }

    /// Answers a request the upstream sent (`Event::Request`), with a result or an error object.
    pub async fn respond(
        &self,
        id: Value,
        outcome: std::result::Result<Value, Value>,
    ) -> Result<()> {
        let msg = match outcome {
            Ok(result) => {
                jsonrpc::object([("jsonrpc", "2.0".into()), ("id", id), ("result", result)])
            }
            Err(error) => {
                jsonrpc::object([("jsonrpc", "2.0".into()), ("id", id), ("error", error)])
            }
        };
        self.send(&msg).await
    }

    async fn abandon(&self, id: i64, reason: &str) {
        self.lock_pending().remove(&id);
        let _ = self
            .notify(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": reason})),
            )
            .await;
    }

    async fn send(&self, msg: &Value) -> Result<()> {
        if self.closed.is_cancelled() {
            return Err(self.unavailable("connection closed"));
        }
        self.link.send(msg).await.map_err(|e| match e {
            SendError::TooLarge { len, max } => CallError::TooLarge {
                server: self.server.clone(),
                len,
                max,
            },
            SendError::Closed => self.unavailable("connection closed"),
        })
    }

    fn unavailable(&self, why: &str) -> CallError {
        CallError::Unavailable {
            server: self.server.clone(),
            why: audit::redact(why),
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Waiter>> {
        // A poisoned map only means a panic elsewhere mid-insert; the map itself is still consistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Modern upstreams need the protocol keys on every request; legacy ones get them removed, since they belong
    /// to the client's era, not theirs.
    /// Before the era is known the params go as given (they used to be dropped whole).
    fn adapt_params(&self, params: Option<Value>) -> Option<Value> {
        let Some(era) = self.era() else {
            return params;
        };
        let mut params = match params {
            Some(Value::Object(m)) => m,
            other => return other,
        };
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        match era {
            Era::Modern => {
                meta.insert(PROTOCOL_VERSION_META.to_owned(), MODERN_VERSION.into());
                meta.entry(CLIENT_CAPABILITIES_META.to_owned())
                    .or_insert_with(|| json!({}));
                meta.entry(CLIENT_INFO_META.to_owned())
                    .or_insert_with(crate::handshake::client_info);
            }
            Era::Legacy(_) => meta.retain(|k, _| !k.starts_with(PROTOCOL_META_PREFIX)),
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        Some(Value::Object(params))
    }

    async fn read_loop(
        self: Arc<Self>,
        mut incoming: mpsc::Receiver<Incoming>,
        sinks: Sinks,
        refresh: mpsc::UnboundedSender<Refresh>,
    ) {
        while let Some(item) = incoming.recv().await {
            match item {
                Incoming::Message(msg) => self.dispatch(msg, None, &sinks, &refresh).await,
                Incoming::Related { message, to } => {
                    self.dispatch(message, Some(to), &sinks, &refresh).await
                }
                Incoming::Garbage(why) => self.garbage(&why),
                Incoming::Oversized { len, max, id } => self.oversized(len, max, id),
            }
        }
        // Closed before its output ended: toolgate ended it (`end`), the server did not go on its own.
        let stopped = self.closed.is_cancelled();
        self.closed.cancel();
        let why = self.end_reason().unwrap_or_else(|| {
            match stopped {
                true => {
                    "toolgate stopped it (shutting down, or a reload removed or changed its entry)"
                }
                false => "the server exited",
            }
            .to_owned()
        });
        let waiters: Vec<Waiter> = self.lock_pending().drain().map(|(_, w)| w).collect();
        for w in waiters {
            let _ = w.send(Err(self.unavailable(&why)));
        }
    }

    /// Handles one message; `related` is the request whose answer stream it arrived on, when the link knows.
    async fn dispatch(
        &self,
        mut msg: Message,
        related: Option<Id>,
        sinks: &Sinks,
        refresh: &mpsc::UnboundedSender<Refresh>,
    ) {
        let events = &sinks.events;
        let server = self.server.clone();
        let forged = match &mut msg {
            Message::Response { outcome, .. } => match outcome {
                Ok(v) | Err(v) => strip_own_meta(v),
            },
            Message::Request { params, .. } | Message::Notification { params, .. } => {
                params.as_mut().map_or(0, strip_own_meta)
            }
        };
        if forged > 0 {
            tracing::warn!(
                server = %server,
                "removed {forged} toolgate/* _meta field(s) the upstream sent: only toolgate writes them"
            );
        }
        match msg {
            Message::Response {
                id: Some(Id::Int(id)),
                outcome,
            } => {
                if let Some(w) = self.lock_pending().remove(&id) {
                    let _ = w.send(outcome.map_err(CallError::Rpc));
                }
            }
            Message::Response { .. } => self.garbage("response with an id toolgate never sent"),
            Message::Request { id, method, .. } if method == "ping" => {
                let _ = self.respond(id.to_value(), Ok(json!({}))).await;
            }
            Message::Request { id, method, params } => {
                let caller = match related.map(|to| self.caller_of(&to)) {
                    None => None,
                    Some(Ok(caller)) => caller,
                    Some(Err(why)) => {
                        tracing::info!(server = %server, method, "{why}");
                        let error = jsonrpc::error_object(jsonrpc::INTERNAL_ERROR, why, None);
                        let _ = self.respond(id.to_value(), Err(error)).await;
                        return;
                    }
                };
                let _ = events
                    .send(Event::Request {
                        server,
                        id: id.to_value(),
                        method,
                        params,
                        caller,
                    })
                    .await;
            }
            // Progress for a routed call goes straight to its client; any other progress is a plain notification.
            Message::Notification {
                method,
                params: Some(p),
            } if method == "notifications/progress"
                && sinks
                    .progress
                    .as_ref()
                    .is_some_and(|routes| routes.deliver(&p)) => {}
            Message::Notification { method, params } => {
                let kind = match method.as_str() {
                    "notifications/tools/list_changed" => Some(Refresh::Tools),
                    "notifications/resources/list_changed" => Some(Refresh::Resources),
                    "notifications/prompts/list_changed" => Some(Refresh::Prompts),
                    _ => None,
                };
                match kind {
                    Some(k) => {
                        let _ = refresh.send(k);
                    }
                    None => {
                        let _ = events
                            .send(Event::Notification {
                                server,
                                method,
                                params,
                            })
                            .await;
                    }
                }
            }
        }
    }

    /// The caller of the request `to` a request arrived with: `None` when it was sent without one, an error
    /// when it is no longer pending (timed out or cancelled: the request belongs to a call nobody waits for, and
    /// handing it to whoever else has calls in flight would be a guess).
    fn caller_of(&self, to: &Id) -> std::result::Result<Option<u64>, String> {
        let pending = match to {
            Id::Int(n) => self.lock_pending().contains_key(n).then_some(*n),
            _ => None,
        };
        match pending {
            Some(n) => Ok(lock(&self.callers).get(&n).copied()),
            None => Err(format!(
                "toolgate cannot relay this request: it came with request {to}, which is no longer pending"
            )),
        }
    }

    fn garbage(&self, why: &str) {
        let n = self.garbage_lines.fetch_add(1, Ordering::Relaxed);
        // Log the first few and then every thousandth, so a chatty server cannot flood toolgate's stderr.
        if n < 5 || n % 1000 == 0 {
            tracing::warn!(server = %self.server, "ignoring a line on stdout that is not JSON-RPC ({why}); total {}", n + 1);
        }
    }

    /// An oversized line is dropped; if its id can be found at either edge, that request fails with a clear error
    /// instead of waiting for its timeout.
    fn oversized(&self, len: usize, max: usize, id: Option<Id>) {
        let id = match id {
            Some(Id::Int(n)) => Some(n),
            _ => None,
        };
        let waiter = id.and_then(|id| self.lock_pending().remove(&id));
        match waiter {
            Some(w) => {
                let _ = w.send(Err(CallError::TooLarge {
                    server: self.server.clone(),
                    len,
                    max,
                }));
            }
            None => {
                tracing::warn!(server = %self.server, "dropped a {len}-byte message over the {max}-byte limit")
            }
        }
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;

/// Removes a request's caller when the request ends, however it ends.
struct ForgetCaller<'a> {
    callers: &'a Mutex<HashMap<i64, u64>>,
    id: i64,
}

impl Drop for ForgetCaller<'_> {
    fn drop(&mut self) {
        lock(self.callers).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned map only means a panic elsewhere mid-update; the map itself is still consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
