//! The queue of messages to one client, bounded in messages and in bytes (of the encoded lines), between the code
//! that produces them and the front end's writer.
//!
//! Two ways in. `send` is for the answers to the client's own requests: it waits for room, and what waits is one
//! of the client's requests (bounded by `session::MAX_IN_FLIGHT`), so a client that does not read slows itself
//! down and stops being read. `post` is for everything else — notifications, progress, requests relayed from
//! upstreams, list changes — which the event loop and the upstreams' readers deliver: it never waits. A message
//! that does not fit means the client has stopped reading; the outbox is then closed (logged once, with the
//! reason), its messages are dropped, and the front end ends the session. One client that does not read therefore
//! never stalls an upstream or the event loop for anyone, and never makes toolgate hold more than the bounds.
//! This module does not write to the client (the front end's writer does) nor decide what is sent.
//!
//! Every message is tagged with the stream it belongs to (`Stream`): a front end that gives each request its own
//! response stream (Streamable HTTP) sends it there, one with a single stream (stdio) ignores the tag. Messages
//! keep one order across streams, and the bounds are the session's, whatever stream a message is for.

use jsonrpc::Id;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// Messages queued for one client at most.
pub(crate) const MAX_MESSAGES: usize = 1024;
/// Bytes queued for one client at most, in multiples of the largest message: room for a few of the largest
/// answers, not for a backlog of them.
const BYTES_PER_MAX_MESSAGE: usize = 4;
/// The byte budget is counted by a semaphore, whose permits are a `u32`.
const MAX_BYTES_CEILING: usize = 1 << 30;

/// The stream an outgoing message belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// What belongs to one of the client's requests: its response, its progress, the notifications of a call
    /// held for approval, and requests toolgate sends the client about that call (approval elicitation).
    Request(Id),
    /// Everything else: what no single request of this client caused (a legacy client's list changes, upstream
    /// notifications that are not about one call).
    Session,
}

/// One encoded message on its way to the client. Its room in the session's bounds is given back when it is
/// dropped, so a front end drops it once written: until then it still counts against a client that does not read.
pub struct Outgoing {
    stream: Stream,
    bytes: Vec<u8>,
    permits: u32,
    shared: Arc<Shared>,
}

impl Outgoing {
    /// The stream this message belongs to.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The message as one line of JSON text ending in a newline, at most the session's message limit long.
    pub fn line(&self) -> &[u8] {
        &self.bytes
    }

    /// The message's JSON text without the newline (for framings other than newline-delimited).
    pub fn json(&self) -> &[u8] {
        self.bytes.strip_suffix(b"\n").unwrap_or(&self.bytes)
    }
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("stream", &self.stream)
            .field("json", &String::from_utf8_lossy(self.json()))
            .finish()
    }
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        self.shared.release(self.permits);
    }
}

/// One encoded line and the byte permits it holds, until it is handed to the front end as an `Outgoing`.
struct Line {
    stream: Stream,
    bytes: Vec<u8>,
    permits: u32,
}

/// The producers' end. The channel's senders live only here, so the front end's `Drain` ends once every
/// producer (the session and its running requests, progress routes) is gone.
#[derive(Clone)]
pub(crate) struct Outbox {
    shared: Arc<Shared>,
    lines: mpsc::UnboundedSender<Line>,
}

struct Shared {
    messages: Semaphore,
    bytes: Semaphore,
    max_bytes: usize,
    max_line: usize,
    closed: CancellationToken,
    /// Bytes queued now, and the most ever queued (what the bound is checked against in tests).
    queued_bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
    /// Bytes of answers waiting for room.
    waiting_bytes: AtomicUsize,
}

/// The front end's end of a session's outbox: its outgoing messages in order, each tagged with its stream.
pub struct Drain {
    lines: mpsc::UnboundedReceiver<Line>,
    shared: Arc<Shared>,
}

impl Outbox {
    /// An outbox for a client whose messages are at most `max_line` bytes (longer responses are replaced by an
    /// error, longer notifications dropped, as they are encoded).
    pub(crate) fn new(max_line: usize) -> (Self, Drain) {
        let max_bytes = max_line
            .saturating_mul(BYTES_PER_MAX_MESSAGE)
            .clamp(1 << 20, MAX_BYTES_CEILING);
        Self::with_bounds(max_line, MAX_MESSAGES, max_bytes)
    }

    pub(crate) fn with_bounds(max_line: usize, messages: usize, max_bytes: usize) -> (Self, Drain) {
        let (tx, rx) = mpsc::unbounded_channel();
        let max_bytes = max_bytes.min(MAX_BYTES_CEILING);
        let shared = Arc::new(Shared {
            messages: Semaphore::new(messages),
            bytes: Semaphore::new(max_bytes),
            max_bytes,
            max_line,
            closed: CancellationToken::new(),
            queued_bytes: AtomicUsize::new(0),
            peak_bytes: AtomicUsize::new(0),
            waiting_bytes: AtomicUsize::new(0),
        });
        let drain = Drain {
            lines: rx,
            shared: Arc::clone(&shared),
        };
        (Self { shared, lines: tx }, drain)
    }

    /// Queues the answer to one of the client's requests, waiting for room. Returns once queued, or at once when
    /// the outbox is closed (the answer is dropped: nobody is reading).
    ///
    /// Answers waiting for room count too: past twice the byte budget (queued and waiting), the client is not
    /// reading and is closed, so a few huge answers cannot pin memory behind a client that never reads.
    pub(crate) async fn send(&self, stream: Stream, msg: Value) {
        let Some(bytes) = self.shared.encode(&msg) else {
            return;
        };
        drop(msg);
        let permits = self.shared.permits_for(bytes.len());
        let waiting = self
            .shared
            .waiting_bytes
            .fetch_add(permits as usize, Ordering::Relaxed)
            + permits as usize;
        let backlog = self.shared.queued_bytes.load(Ordering::Relaxed) + waiting;
        if backlog > self.shared.max_bytes.saturating_mul(2) {
            self.close(&format!(
                "it has not read {backlog} bytes of answers (at most {} are kept)",
                self.shared.max_bytes.saturating_mul(2)
            ));
        }
        let acquired = (
            self.shared.messages.acquire().await,
            self.shared.bytes.acquire_many(permits).await,
        );
        self.shared
            .waiting_bytes
            .fetch_sub(permits as usize, Ordering::Relaxed);
        let (Ok(m), Ok(b)) = acquired else {
            return;
        };
        m.forget();
        b.forget();
        self.queue(Line {
            stream,
            bytes,
            permits,
        });
    }

    /// Queues a message the client did not ask for; never waits. False when it was not queued: the outbox is
    /// closed, or it is full and is closed now, because a client this far behind is not reading.
    pub(crate) fn post(&self, stream: Stream, msg: Value) -> bool {
        if self.is_closed() {
            return false;
        }
        let Some(bytes) = self.shared.encode(&msg) else {
            return false;
        };
        let permits = self.shared.permits_for(bytes.len());
        let Ok(m) = self.shared.messages.try_acquire() else {
            self.close(&format!(
                "it has not read {MAX_MESSAGES} messages toolgate sent it",
            ));
            return false;
        };
        let Ok(b) = self.shared.bytes.try_acquire_many(permits) else {
            self.close(&format!(
                "it has not read {} bytes toolgate sent it (at most {} are kept)",
                self.shared.queued_bytes.load(Ordering::Relaxed) + bytes.len(),
                self.shared.max_bytes
            ));
            return false;
        };
        m.forget();
        b.forget();
        self.queue(Line {
            stream,
            bytes,
            permits,
        });
        true
    }

    fn queue(&self, line: Line) {
        let now = self
            .shared
            .queued_bytes
            .fetch_add(line.permits as usize, Ordering::Relaxed)
            + line.permits as usize;
        self.shared.peak_bytes.fetch_max(now, Ordering::Relaxed);
        let _ = self.lines.send(line);
    }

    /// Closes the outbox: waiting senders return, queued messages are dropped, the front end ends the session.
    pub(crate) fn close(&self, why: &str) {
        if self.shared.closed.is_cancelled() {
            return;
        }
        tracing::warn!("closing the client's session: {why}; its messages are dropped");
        self.shared.closed.cancel();
        self.shared.messages.close();
        self.shared.bytes.close();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Resolves when the outbox is closed.
    pub(crate) fn closed(&self) -> CancellationToken {
        self.shared.closed.clone()
    }

    /// The most bytes ever queued at once.
    #[cfg(test)]
    pub(crate) fn peak_bytes(&self) -> usize {
        self.shared.peak_bytes.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn max_bytes(&self) -> usize {
        self.shared.max_bytes
    }
}

impl Shared {
    /// A response too large to send becomes an error response for the same id; a notification is dropped.
    fn encode(&self, msg: &Value) -> Option<Vec<u8>> {
        match jsonrpc::encode_line(msg, self.max_line) {
            Ok(line) => Some(line),
            Err(len) => oversized_replacement(msg, len, self.max_line),
        }
    }

    /// A line longer than the whole budget takes the whole budget (it then goes alone).
    fn permits_for(&self, len: usize) -> u32 {
        len.clamp(1, self.max_bytes) as u32
    }

    /// A line was written (or dropped unwritten): its room is free again.
    fn release(&self, permits: u32) {
        self.queued_bytes
            .fetch_sub(permits as usize, Ordering::Relaxed);
        self.bytes.add_permits(permits as usize);
        self.messages.add_permits(1);
    }
}

impl Drain {
    /// The next message to send; `None` once the session is closed (its queued messages are dropped: a
    /// client that stopped reading would block the write forever) or has ended.
    pub async fn next(&mut self) -> Option<Outgoing> {
        let line = tokio::select! {
            biased;
            () = self.shared.closed.cancelled() => None,
            line = self.lines.recv() => line,
        }?;
        Some(self.outgoing(line))
    }

    /// The next message if one is queued now, without waiting: a front end that writes several at once (one
    /// system call for all the answers that are ready) takes the rest with this. `None` when none is queued or
    /// the session is closed.
    pub fn try_next(&mut self) -> Option<Outgoing> {
        if self.shared.closed.is_cancelled() {
            return None;
        }
        let line = self.lines.try_recv().ok()?;
        Some(self.outgoing(line))
    }

    fn outgoing(&self, line: Line) -> Outgoing {
        Outgoing {
            stream: line.stream,
            bytes: line.bytes,
            permits: line.permits,
            shared: Arc::clone(&self.shared),
        }
    }
}

fn oversized_replacement(msg: &Value, len: usize, max: usize) -> Option<Vec<u8>> {
    let id = msg.get("id").and_then(jsonrpc::Id::from_value);
    let is_response = msg.get("result").is_some() || msg.get("error").is_some();
    if !is_response {
        tracing::warn!("dropped a {len}-byte message to the client, over the {max}-byte limit");
        return None;
    }
    let err = jsonrpc::error_object(
        jsonrpc::INTERNAL_ERROR,
        format!(
            "the response of {len} bytes exceeds the limit of {max} bytes (limits.maxMessageBytes)"
        ),
        None,
    );
    jsonrpc::encode_line(&jsonrpc::error_response(id.as_ref(), err), max).ok()
}
