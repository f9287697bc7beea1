//! One legacy session's outgoing messages, sorted onto the HTTP streams that carry them.
//!
//! A session has one `Drain`; Streamable HTTP has a response stream per POSTed request and one GET stream. The
//! `Router`'s dispatcher task is the only reader of the drain: it hands each message to the stream its tag names
//! through a small bounded channel, and waits while that channel is full. So the drain is pulled only as fast as
//! the sockets take what it yields (hyper polls a body only when it can write), and a client that stops reading
//! leaves its messages in the session's bounded outbox, which closes on overflow (`gateway`'s `outbox`) — then
//! `stop` ends the dispatcher and every stream. A message for a request stream nobody holds (the client hung up
//! its POST) is dropped: there is no one to deliver it to. Session messages sent before the client opened its GET
//! stream (a list change right after `initialize`, before the client got to open it) are kept, a few and small,
//! and delivered first when it opens; past that bound the oldest are dropped, as the SDK servers drop them all.
//! The router also keeps the session's idle clock, which only requests move: a request opening its stream or
//! ending it, and the GET stream's opening. An open GET stream, however long, does not.
//! This module does not write HTTP (`sse` does) nor decide anything about a message.

use gateway::{Drain, Outgoing, Stream};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Messages waiting between the dispatcher and one stream's writer. Small: the session's outbox is the buffer;
/// this only lets the writer take the next message while the socket sends the last.
const STREAM_CAPACITY: usize = 16;
/// Session messages kept while no GET stream is open: how many, and how many bytes.
const BACKLOG_MESSAGES: usize = 32;
const BACKLOG_BYTES: usize = 256 * 1024;

/// Where one session's streams are held.
pub(crate) struct Router {
    routes: Mutex<Routes>,
    /// Cancelled when the session ends (DELETE, expiry, overflow, shutdown): the dispatcher stops waiting on a
    /// stream whose reader is stuck, and every stream ends.
    stop: CancellationToken,
    /// When a request last came or ended.
    used: Mutex<Instant>,
}

#[derive(Default)]
struct Routes {
    open: HashMap<Stream, (u64, mpsc::Sender<Outgoing>)>,
    next: u64,
    /// Session messages waiting for a GET stream, and their bytes.
    backlog: VecDeque<Outgoing>,
    backlog_bytes: usize,
}

impl Routes {
    fn keep(&mut self, message: Outgoing) {
        self.backlog_bytes += message.json().len();
        self.backlog.push_back(message);
        while self.backlog.len() > BACKLOG_MESSAGES || self.backlog_bytes > BACKLOG_BYTES {
            let Some(old) = self.backlog.pop_front() else {
                break;
            };
            self.backlog_bytes -= old.json().len();
            tracing::debug!("dropped a session message no GET stream took");
        }
    }
}

/// The receiving end of one stream; it unregisters itself when dropped (the HTTP response ended or its client
/// hung up).
pub(crate) struct Subscription {
    /// Messages that waited for this stream to open, delivered first.
    pending: VecDeque<Outgoing>,
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
            used: Mutex::new(Instant::now()),
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
        let pending = match stream {
            Stream::Session => {
                routes.backlog_bytes = 0;
                std::mem::take(&mut routes.backlog)
            }
            Stream::Request(_) => VecDeque::new(),
        };
        Some(Subscription {
            pending,
            rx,
            router: Arc::clone(self),
            stream,
            generation,
        })
    }

    /// Whether the session ended (its streams can no longer be opened).
    pub(crate) fn stopped_now(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Ends `stream` (its request was cancelled: no answer will come).
    pub(crate) fn end(&self, stream: &Stream) {
        self.routes().open.remove(stream);
    }

    /// How many requests are in flight: a session with one is in use, however long ago it came.
    pub(crate) fn requests_open(&self) -> usize {
        self.routes()
            .open
            .keys()
            .filter(|s| matches!(s, Stream::Request(_)))
            .count()
    }

    /// A request came (or ended): the idle clock starts again.
    pub(crate) fn touch(&self) {
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// When a request last came or ended.
    pub(crate) fn used_at(&self) -> Instant {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the dispatcher and every stream.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
        let mut routes = self.routes();
        routes.open.clear();
        routes.backlog.clear();
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
            let tx = {
                let mut routes = self.routes();
                match routes.open.get(message.stream()) {
                    Some((_, tx)) => tx.clone(),
                    None if *message.stream() == Stream::Session => {
                        routes.keep(message);
                        continue;
                    }
                    None => {
                        tracing::debug!(stream = ?message.stream(), "dropped a message for a stream nobody holds");
                        continue;
                    }
                }
            };
            tokio::select! {
                () = self.stop.cancelled() => break,
                // A failed send means the reader just went: the message has no one to go to.
                _ = tx.send(message) => {}
            }
        }
        let mut routes = self.routes();
        routes.open.clear();
        routes.backlog.clear();
    }
}

impl Subscription {
    pub(crate) async fn next(&mut self) -> Option<Outgoing> {
        match self.pending.pop_front() {
            Some(m) => Some(m),
            None => self.rx.recv().await,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        {
            let mut routes = self.router.routes();
            if routes.open.get(&self.stream).map(|(g, _)| *g) == Some(self.generation) {
                routes.open.remove(&self.stream);
            }
        }
        // A request that ran long must not leave its session to be swept the moment it ends.
        if matches!(self.stream, Stream::Request(_)) {
            self.router.touch();
        }
    }
}
