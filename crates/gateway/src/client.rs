//! The client behind a governed request, as the stages reach it: never a concrete session. A client session
//! implements `Client` (`requester`); the pipeline, the bridge, tasks and code mode see only this trait, the
//! progress sink and the way to ask a human, so no stage depends on how sessions are kept or framed.
//!
//! It holds no state and decides nothing: a leaf the stages and the sessions both import.

use crate::guard::Guard;
use crate::outbox::Stream;
use jsonrpc::Id;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The protocol era a client's connection settled in (`Session::era_gate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ClientEra {
    Unknown,
    Legacy(String),
    Modern,
}

/// MCP's log levels (RFC 5424's), least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub(crate) const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// How progress reaches whoever asked for a call. Implementations never wait: they run on an upstream's reader
/// and inside held calls, and a requester that does not read must stall neither.
pub(crate) trait ProgressSink: Send + Sync {
    /// Posts one `notifications/progress` with these params; false when it could not be queued.
    fn post_progress(&self, params: Value) -> bool;
}

/// Progress the requester asked for: its own token, and where the notifications go.
#[derive(Clone)]
pub(crate) struct Progress {
    pub token: Value,
    pub sink: Arc<dyn ProgressSink>,
}

impl Progress {
    /// One notification, `params` carrying the requester's own token (an upstream's carries the gateway's).
    pub(crate) fn report(&self, mut params: Value) -> bool {
        params["progressToken"] = self.token.clone();
        self.sink.post_progress(params)
    }
}

/// What `AskHuman::ask` returns: the answer, or the error the requester gave (or made up when it could not ask).
pub(crate) type AskFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, Value>> + Send + 'a>>;

/// A way to put a held request to a human besides the admin channels (today: MCP elicitation through the
/// client). Only the asking is the requester's; the question and what the answer does are `elicit`'s.
pub(crate) trait AskHuman: Send + Sync {
    /// Whether a human can be asked this way at all (the client declared elicitation).
    fn can_ask(&self) -> bool;
    /// Sends one `elicitation/create` with these params and waits, bounded, for the answer.
    fn ask(&self, params: Value) -> AskFuture<'_>;
}

/// The client capability an upstream request needs; `None` for requests toolgate never relays.
pub(crate) fn needed_capability(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// What a client's session is to the stages: its identity and era, what it declared, its subscriptions, and
/// how to put a request to it. Implementations never block on the client: asking waits for an answer, bounded;
/// everything else only posts.
pub(crate) trait Client: Send + Sync {
    /// The session's id: whose grants apply, which legacy session owns a task, who a relayed request went to.
    fn session_id(&self) -> &str;
    fn era(&self) -> ClientEra;
    /// Who the front end authenticated (`None` on stdio or without auth).
    fn identity(&self) -> Option<String>;
    /// The guard of the profile the client runs under.
    fn guard(&self) -> Arc<Guard>;
    /// The capabilities the client declared (`{}` for a modern client, which declares them per request).
    fn capabilities(&self) -> Value;
    /// Why the client cannot take an upstream's request needing capability `cap`; `None` when it can.
    fn relay_refusal(&self, method: &str, cap: &str) -> Option<String>;
    /// Sends toolgate's own request to the client on `stream` and waits, bounded, for the answer.
    fn ask(&self, stream: Stream, method: &str, params: Value) -> AskFuture<'_>;
    /// Records a subscription the upstream accepted for this client.
    fn subscribed(&self, server: &str, uri: &str);
    /// Stops this client hearing of `uri`; whether the upstream must be told (no other client shares it).
    fn unsubscribe(&self, server: &str, uri: &str) -> bool;
    /// Relays an upstream's request to the client, remembered until it answers; the request's records close
    /// with that answer (`RelayEnd`).
    fn relay(self: Arc<Self>, relay: Relay) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// An upstream's request on its way to a client, decided and recorded (`pipeline::asks`).
pub(crate) struct Relay {
    pub server: String,
    pub upstream_id: Value,
    pub method: String,
    pub params: Option<Value>,
    /// The client request whose call caused it, when one did: the stream it belongs on.
    pub cause: Option<Id>,
    pub records: Box<dyn RelayEnd>,
}

/// What closes a relayed request's records once the client answers; dropped unanswered, they record that it
/// ended without an answer.
pub(crate) trait RelayEnd: Send {
    fn answered(
        self: Box<Self>,
        answer: &Result<Value, Value>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}
