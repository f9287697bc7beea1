//! One legacy session's outgoing messages, sorted onto the HTTP streams that carry them.
//!
//! A session has one `Drain`; Streamable HTTP has a response stream per POSTed request and one GET stream. The
//! `Router`'s dispatcher task is the only reader of the drain: it hands each message to the stream its tag names
//! through a small bounded channel, and waits while that channel is full. So the drain is pulled only as fast as
//! the sockets take what it yields (hyper polls a body only when it can write), and a client that stops reading
//! leaves its messages in the session's bounded outbox, which closes on overflow (`gateway`'s `outbox`) — then
//! `stop` ends the dispatcher and every stream. A message for a stream nobody holds (the client hung up its POST,
//! or opened no GET stream) is dropped: there is no one to deliver it to, and keeping it would grow without bound.
//! This module does not write HTTP (`sse` does) nor decide anything about a message.

use gateway::{Drain, Outgoing, Stream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Messages waiting between the dispatcher and one stream's writer. Small: the session's outbox is the buffer;
/// this only lets the writer take the next message while the socket sends the last.
const STREAM_CAPACITY: usize = 16;

/// Where one session's streams are held.
pub(crate) struct Router {
    routes: Mutex<Routes>,
    /// Cancelled when the session ends (DELETE, expiry, overflow, shutdown): the dispatcher stops waiting on a
    /// stream whose reader is stuck, and every stream ends.
    stop: CancellationToken,
}

#[derive(Default)]
struct Routes {
    open: HashMap<Stream, (u64, mpsc::Sender<Outgoing>)>,
    next: u64,
}

/// The receiving end of one stream; it unregisters itself when dropped (the HTTP response ended or its client
/// hung up).
pub(crate) struct Subscription {
    rx: mpsc::Receiver<Outgoing>,
    router: Arc<Router>,
    stream: Stream,
    generation: u64,
}

impl Router {
    /// A router for a session's drain, and its dispatcher task.
    pub(crate) fn start(drain: Drain) -> Arc<Self> {
        let router = Arc::new(Self {
            routes: Mutex::new(Routes::default()),
            stop: CancellationToken::new(),
        });
        tokio::spawn(Arc::clone(&router).dispatch(drain));
        router
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens `stream`; `None` when it is already open (a second GET stream, or a request id already in flight
    /// on this session).
    pub(crate) fn open(self: &Arc<Self>, stream: Stream) -> Option<Subscription> {
        if self.stop.is_cancelled() {
            return None;
        }
        let mut routes = self.routes();
        if routes.open.contains_key(&stream) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        routes.next += 1;
        let generation = routes.next;
        routes.open.insert(stream.clone(), (generation, tx));
        Some(Subscription {
            rx,
            router: Arc::clone(self),
            stream,
            generation,
        })
    }

    /// Ends `stream` (its request was cancelled: no answer will come).
    pub(crate) fn end(&self, stream: &Stream) {
        self.routes().open.remove(stream);
    }

    /// How many streams are open: a session with one is in use, however long ago its last request came.
    pub(crate) fn open_streams(&self) -> usize {
        self.routes().open.len()
    }

    /// Ends the dispatcher and every stream.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
        self.routes().open.clear();
    }

    /// Resolves once the session ended.
    pub(crate) async fn stopped(&self) {
        self.stop.cancelled().await;
    }

    /// The drain's only reader, until the drain ends or `stop`.
    async fn dispatch(self: Arc<Self>, mut drain: Drain) {
        loop {
            let message = tokio::select! {
                () = self.stop.cancelled() => break,
                m = drain.next() => match m {
                    Some(m) => m,
                    None => break,
                },
            };
            let tx = self
                .routes()
                .open
                .get(message.stream())
                .map(|(_, tx)| tx.clone());
            let Some(tx) = tx else {
                tracing::debug!(stream = ?message.stream(), "dropped a message for a stream nobody holds");
                continue;
            };
            tokio::select! {
                () = self.stop.cancelled() => break,
                // A failed send means the reader just went: the message has no one to go to.
                _ = tx.send(message) => {}
            }
        }
        self.routes().open.clear();
    }
}

impl Subscription {
    pub(crate) async fn next(&mut self) -> Option<Outgoing> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut routes = self.router.routes();
        if routes.open.get(&self.stream).map(|(g, _)| *g) == Some(self.generation) {
            routes.open.remove(&self.stream);
        }
    }
}
