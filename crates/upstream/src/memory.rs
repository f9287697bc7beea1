//! The in-memory transport: an upstream served in this process over a pair of channels of JSON values, for tests
//! and for embedding a server without a process.
//!
//! Each message is serialised and decoded with the same strict rules and size limit as a stdio line, so what a
//! connection sees over memory is what it would see over a pipe (a non-JSON-RPC value is garbage, an oversized one
//! is dropped with its id recovered). There is no process: no pid, no stderr, and shutdown only ends the channels.

use crate::link::INCOMING_CAPACITY;
use crate::link::{incoming_from_bytes, BoxFuture, Connector, Incoming, Link, Opened, SendError};
use config::ServerConfig;
use jsonrpc::{encode_line, Limits};
use serde_json::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Messages buffered towards the server, as a pipe would buffer them.
const TO_SERVER_CAPACITY: usize = 256;

/// The server's side of a memory link: what the connection sends, and where the server writes. Dropping
/// `outgoing` (with every clone of it) ends the stream, as a process closing its stdout does; `incoming` ends when
/// the link is shut down, as stdin reaching EOF does.
pub struct ServerEnd {
    pub incoming: mpsc::Receiver<Value>,
    pub outgoing: mpsc::Sender<Value>,
}

/// Opens one memory link: the connection's side (`Opened`) and the server's side.
pub fn open(limits: Limits) -> (Opened, ServerEnd) {
    let (to_server, server_incoming) = mpsc::channel(TO_SERVER_CAPACITY);
    let (server_outgoing, from_server) = mpsc::channel::<Value>(TO_SERVER_CAPACITY);
    let (incoming_tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
    let ended = CancellationToken::new();
    tokio::spawn(pump(from_server, incoming_tx, limits, ended.clone()));
    let link = MemoryLink {
        to_server: Mutex::new(Some(to_server)),
        max_message_bytes: limits.max_message_bytes,
        ended,
    };
    let opened = Opened {
        link: Box::new(link),
        incoming,
        pid: None,
    };
    let server = ServerEnd {
        incoming: server_incoming,
        outgoing: server_outgoing,
    };
    (opened, server)
}

type Serve = dyn Fn(ServerEnd) + Send + Sync;

/// Starts an in-process server for every life of an upstream: `serve` is given the server's end of a fresh link
/// and must start serving it (spawn a task) without blocking.
pub struct MemoryConnector {
    serve: Arc<Serve>,
    lives: AtomicU32,
}

impl MemoryConnector {
    pub fn new(serve: impl Fn(ServerEnd) + Send + Sync + 'static) -> Self {
        Self {
            serve: Arc::new(serve),
            lives: AtomicU32::new(0),
        }
    }

    /// How many links this connector has opened (one per start and restart).
    pub fn lives(&self) -> u32 {
        self.lives.load(Ordering::Relaxed)
    }
}

impl Connector for MemoryConnector {
    fn connect<'a>(
        &'a self,
        _config: &'a ServerConfig,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Opened, String>> {
        Box::pin(async move {
            let (opened, server) = open(limits);
            self.lives.fetch_add(1, Ordering::Relaxed);
            (self.serve)(server);
            Ok(opened)
        })
    }
}

struct MemoryLink {
    /// Taken by `shutdown`, so the server's incoming stream ends.
    to_server: Mutex<Option<mpsc::Sender<Value>>>,
    max_message_bytes: usize,
    ended: CancellationToken,
}

impl Link for MemoryLink {
    fn send<'a>(&'a self, msg: &'a Value) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let max = self.max_message_bytes;
            encode_line(msg, max).map_err(|len| SendError::TooLarge { len, max })?;
            let to_server = self
                .to_server
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            match to_server {
                Some(tx) => tx.send(msg.clone()).await.map_err(|_| SendError::Closed),
                None => Err(SendError::Closed),
            }
        })
    }

    fn shutdown(&self, _grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.to_server
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            self.ended.cancel();
        })
    }
}

/// Carries the server's values to the connection, decoded as a stdio line would be.
async fn pump(
    mut from_server: mpsc::Receiver<Value>,
    incoming: mpsc::Sender<Incoming>,
    limits: Limits,
    ended: CancellationToken,
) {
    loop {
        let value = tokio::select! {
            v = from_server.recv() => v,
            () = ended.cancelled() => None,
        };
        let Some(value) = value else { break };
        let item = match serde_json::to_vec(&value) {
            Ok(bytes) => incoming_from_bytes(&bytes, &limits),
            Err(e) => Incoming::Garbage(e.to_string()),
        };
        if incoming.send(item).await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
