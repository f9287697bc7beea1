//! What a front end (stdio, Streamable HTTP) gives a session besides the messages themselves: what its transport
//! said about each message (`RequestMeta`) and the frames it could not decode (`FramingError`). The session checks
//! the first and answers the second, so every front end behaves the same. Nothing here reads or writes a
//! transport: a front end decodes its frames, calls `Session::handle`, and writes what the session's `Drain`
//! yields to the stream each message names.

use crate::client::ClientEra;
use crate::errors::{invalid_request, unsupported_version};
use crate::gateway::Gateway;
use crate::outbox::{Drain, Outbox, Stream};
use crate::session::{Session, SUPPORTED_VERSIONS};
use jsonrpc::{error_object, error_response, DecodeError, Id, Message};
use serde_json::{json, Value};
use std::sync::Arc;
use upstream::PROTOCOL_VERSION_META;

/// What the transport carried alongside one message. A transport that carries nothing of the kind (stdio) passes
/// `RequestMeta::default()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestMeta {
    /// The protocol version the transport declared for this message (HTTP's `MCP-Protocol-Version` header).
    /// A request whose declared version disagrees with its own `_meta` version, or with the version its legacy
    /// session negotiated, is refused (`HEADER_MISMATCH`): the two layers must not be read as two protocols.
    pub protocol_version: Option<String>,
    /// Who the transport authenticated as the sender (a token's subject, a client certificate's name). The first
    /// message binds the session to it; a later message from anyone else is refused or dropped, so a session's id
    /// that leaks does not let another identity drive the session, answer its questions, or cancel its calls.
    pub identity: Option<String>,
    /// The W3C `traceparent` the transport received with this message (an HTTP request's header): the spans of
    /// the calls it causes are its children. Links spans only; nothing is decided on it.
    pub traceparent: Option<String>,
}

tokio::task_local! {
    /// The `traceparent` of the message whose request this task runs (`RequestMeta::traceparent`).
    static TRACEPARENT: String;
}

/// Runs `fut`, the task of one request, with the `traceparent` its transport carried. The future it gives is
/// `fut`'s size (an `async fn` would hold `fut` and its scope both, and the task copies it whole).
pub(crate) fn with_traceparent<F: std::future::Future>(
    traceparent: Option<String>,
    fut: F,
) -> impl std::future::Future<Output = F::Output> {
    match traceparent {
        Some(value) => tokio_util::either::Either::Left(TRACEPARENT.scope(value, fut)),
        None => tokio_util::either::Either::Right(fut),
    }
}

/// The `traceparent` of the request this task runs, if its transport carried one.
pub(crate) fn traceparent() -> Option<String> {
    TRACEPARENT.try_with(Clone::clone).ok()
}

/// A frame the front end could not turn into a message. Answered with a JSON-RPC error on the stream of the
/// message's id when one could be read, else on the session's stream.
#[derive(Clone, Debug, PartialEq)]
pub enum FramingError {
    /// Not a valid JSON-RPC message (invalid JSON or UTF-8, too deep, a batch, a wrong envelope).
    Undecodable(DecodeError),
    /// Longer than the message limit: its length, and its id when the front end recovered one from its edges.
    Oversized { len: usize, id: Option<Id> },
}

/// The identity a session serves, fixed by its first message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Binding {
    #[default]
    Unbound,
    To(Option<String>),
}

impl Session {
    /// Opens a session on `gateway`: the session, and the receiving end of its outgoing messages, bounded by the
    /// gateway's message limit. The session lives while the front end holds it and its requests run; the drain
    /// ends once the session is closed by overflow, or once it is gone and its last message was taken.
    pub fn open(gateway: &Arc<Gateway>) -> (Arc<Session>, Drain) {
        let (outbox, drain) = Outbox::new(gateway.stages.opts.limits.max_message_bytes);
        (Session::new(Arc::clone(gateway), outbox), drain)
    }

    /// Opens a session that runs under `profile` (`None`: the gateway's own): its calls are decided, and its
    /// tools listed, by that profile's policy. Fails for a profile the configuration does not define or that
    /// sets the other mode; an HTTP front end answers 403 then.
    pub fn open_as(
        gateway: &Arc<Gateway>,
        profile: Option<&str>,
    ) -> Result<(Arc<Session>, Drain), crate::Error> {
        let guard = gateway.guard_for(profile)?;
        let (outbox, drain) = Outbox::new(gateway.stages.opts.limits.max_message_bytes);
        let profile = profile.map(str::to_owned);
        Ok((
            Session::new_as(Arc::clone(gateway), outbox, profile, guard),
            drain,
        ))
    }

    /// The identity this session serves, once its first message bound it (`None`: unauthenticated).
    pub(crate) fn principal(&self) -> Option<String> {
        match &self.lock().binding {
            Binding::To(identity) => identity.clone(),
            Binding::Unbound => None,
        }
    }

    /// The limits the front end decodes this session's frames under.
    pub fn limits(&self) -> jsonrpc::Limits {
        self.gateway.stages.opts.limits
    }

    /// Resolves once the session can no longer deliver: its client stopped reading and its outbox overflowed
    /// (see `outbox`). A front end stops reading the client then and closes the session.
    pub async fn closed(&self) {
        self.outbox().closed().cancelled().await;
    }

    /// Answers a frame that did not decode, the same way for every front end. It waits for room in the outbox
    /// like a response, so a client that floods bad frames and reads nothing stops being read.
    pub async fn answer_framing_error(&self, error: FramingError) {
        let (id, error) = match error {
            FramingError::Undecodable(e) => (e.id, error_object(e.code, e.message, None)),
            FramingError::Oversized { len, id } => {
                let max = self.gateway.stages.opts.limits.max_message_bytes;
                let why = format!("message of {len} bytes exceeds the limit of {max} bytes");
                (id, error_object(jsonrpc::PARSE_ERROR, why, None))
            }
        };
        let stream = id.clone().map_or(Stream::Session, Stream::Request);
        self.outbox()
            .send(stream, error_response(id.as_ref(), error))
            .await;
    }

    /// Whether this message may be handled, given what its transport said: `Err` with the error to answer a
    /// request with (other messages that fail are dropped, since they have no answer).
    pub(crate) fn admit(&self, msg: &Message, meta: &RequestMeta) -> Result<(), Value> {
        let mut st = self.lock();
        match &st.binding {
            Binding::Unbound => st.binding = Binding::To(meta.identity.clone()),
            Binding::To(bound) if *bound == meta.identity => {}
            Binding::To(_) => {
                tracing::warn!("refused a message from an identity other than the session's");
                return Err(invalid_request(
                    "this session belongs to another identity; open a session of your own",
                ));
            }
        }
        let (Some(declared), Message::Request { method, params, .. }) =
            (&meta.protocol_version, msg)
        else {
            return Ok(());
        };
        let in_meta = params
            .as_ref()
            .and_then(|p| jsonrpc::meta_field(p, PROTOCOL_VERSION_META));
        let expected = match (in_meta, &st.era) {
            // The message's own version is checked by the era gate; the transport must agree with it.
            (Some(v), _) => v.as_str().map(str::to_owned),
            // The handshake itself carries the version being chosen, which no header can know yet.
            (None, _) if method == "initialize" => return Ok(()),
            (None, ClientEra::Legacy(v)) => Some(v.clone()),
            (None, ClientEra::Modern | ClientEra::Unknown) => {
                return if SUPPORTED_VERSIONS.contains(&declared.as_str()) {
                    Ok(())
                } else {
                    Err(unsupported_version(SUPPORTED_VERSIONS, &json!(declared)))
                };
            }
        };
        if expected.as_deref() == Some(declared.as_str()) {
            return Ok(());
        }
        Err(error_object(
            jsonrpc::HEADER_MISMATCH,
            format!(
                "the transport declared protocol {declared}, the message is for {}",
                expected.as_deref().unwrap_or("another version")
            ),
            None,
        ))
    }
}

#[cfg(test)]
#[path = "front_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "backpressure_tests.rs"]
mod backpressure_tests;
