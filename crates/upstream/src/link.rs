//! The seam between the JSON-RPC peer (`Connection`) and how its messages travel: a `Link` carries one message at
//! a time to the upstream and delivers what the upstream sent as `Incoming` items; a `Connector` starts one life of
//! a transport (a process on stdio, a channel pair in memory, an HTTP session).
//!
//! A link knows framing and the transport's own resources (pipes, a process group, a socket); it does not know ids,
//! pending requests, eras or events, which stay in `Connection`. Futures are boxed so the traits stay object-safe
//! without a macro crate.

use config::ServerConfig;
use jsonrpc::{Id, Limits, Message};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;

/// A boxed, sendable future: what the link traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Bounded so a transport that reads faster than the connection dispatches pushes back on its reader.
pub(crate) const INCOMING_CAPACITY: usize = 256;

/// One item an upstream sent. The end of the stream is the end of the receiver (`recv` gives `None`).
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed JSON-RPC message.
    Message(Message),
    /// A well-formed message that arrived on the answer stream of the request `to` (a Streamable HTTP POST's
    /// event stream): a request among them was caused by that request, so it belongs to whoever sent `to`.
    Related { message: Message, to: Id },
    /// Something that is not JSON-RPC (a log line on stdout, a malformed message): counted and ignored.
    Garbage(String),
    /// A message over the size limit, dropped; `id` is the request id found at its edges, if any, so that request
    /// can fail at once instead of waiting for its timeout.
    Oversized {
        len: usize,
        max: usize,
        id: Option<Id>,
    },
}

/// Why a message could not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The message is larger than the transport allows; nothing was sent.
    TooLarge { len: usize, max: usize },
    /// The transport is gone (a broken pipe, a closed channel, a link that was shut down).
    Closed,
}

/// One live transport to an upstream, message by message.
pub trait Link: Send + Sync {
    /// Sends one message. Waits while the transport's outgoing buffer is full.
    fn send<'a>(&'a self, msg: &'a Value) -> BoxFuture<'a, Result<(), SendError>>;

    /// The last lines the upstream wrote to its diagnostics channel (stderr), for `doctor` and the status tool.
    fn stderr_tail(&self) -> Vec<String> {
        Vec::new()
    }

    /// How the process behind this life is contained, one `layer: state` per line, for `doctor` (nothing for
    /// a link without a process).
    fn containment(&self) -> Vec<String> {
        Vec::new()
    }

    /// Why this life of the transport ended, when the link ended it itself (an HTTP server that went away or
    /// forgot its session); the supervisor reports it instead of "the server exited".
    fn end_reason(&self) -> Option<String> {
        None
    }

    /// Ends this life of the transport: stop sending (stdio: stdin EOF, which asks the server to exit), give it
    /// `grace`, then end whatever is left (stdio: TERM, then KILL the process group). Returns when it is gone.
    fn shutdown(&self, grace: Duration) -> BoxFuture<'_, ()>;
}

/// A link just opened, with what it will deliver.
pub struct Opened {
    pub link: Box<dyn Link>,
    pub incoming: mpsc::Receiver<Incoming>,
    /// The process serving this life, when there is one (shown by `doctor` and the status tool).
    pub pid: Option<u32>,
}

/// Starts one life of a transport for a server; the supervisor calls it again for every restart.
pub trait Connector: Send + Sync {
    /// Opens a fresh link, or says why it could not (shown as the server's last error).
    fn connect<'a>(
        &'a self,
        config: &'a ServerConfig,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Opened, String>>;
}

/// What a decoded line or message becomes: the same strict decoding for every transport.
pub(crate) fn incoming_from_bytes(bytes: &[u8], limits: &Limits) -> Incoming {
    if bytes.len() > limits.max_message_bytes {
        let edge = bytes.len().min(256);
        let id = jsonrpc::recover_id(&bytes[..edge], &bytes[bytes.len() - edge..]);
        return Incoming::Oversized {
            len: bytes.len(),
            max: limits.max_message_bytes,
            id,
        };
    }
    match jsonrpc::decode(bytes, limits) {
        Ok(msg) => Incoming::Message(msg),
        Err(e) => Incoming::Garbage(e.message),
    }
}
