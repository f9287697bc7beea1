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

/// One encoded line and the byte permits it holds.
pub(crate) struct Line {
    pub bytes: Vec<u8>,
    permits: u32,
}

#[derive(Clone)]
pub(crate) struct Outbox {
    shared: Arc<Shared>,
}

struct Shared {
    lines: mpsc::UnboundedSender<Line>,
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

/// The writer's end: lines in order, and the permits to give back once each is written.
pub(crate) struct Drain {
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
            lines: tx,
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
        (Self { shared }, drain)
    }

    /// Queues the answer to one of the client's requests, waiting for room. Returns once queued, or at once when
    /// the outbox is closed (the answer is dropped: nobody is reading).
    ///
    /// Answers waiting for room count too: past twice the byte budget (queued and waiting), the client is not
    /// reading and is closed, so a few huge answers cannot pin memory behind a client that never reads.
    pub(crate) async fn send(&self, msg: Value) {
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
        self.shared.queue(Line { bytes, permits });
    }

    /// Queues a message the client did not ask for; never waits. False when it was not queued: the outbox is
    /// closed, or it is full and is closed now, because a client this far behind is not reading.
    pub(crate) fn post(&self, msg: Value) -> bool {
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
        self.shared.queue(Line { bytes, permits });
        true
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

    fn queue(&self, line: Line) {
        let now = self
            .queued_bytes
            .fetch_add(line.permits as usize, Ordering::Relaxed)
            + line.permits as usize;
        self.peak_bytes.fetch_max(now, Ordering::Relaxed);
        let _ = self.lines.send(line);
    }
}

impl Drain {
    /// The next line to write; `None` once the outbox is closed or every sender is gone.
    pub(crate) async fn next(&mut self) -> Option<Line> {
        tokio::select! {
            biased;
            () = self.shared.closed.cancelled() => None,
            line = self.lines.recv() => line,
        }
    }

    /// The line was written: its room is free again.
    pub(crate) fn written(&self, line: &Line) {
        self.shared
            .queued_bytes
            .fetch_sub(line.permits as usize, Ordering::Relaxed);
        self.shared.bytes.add_permits(line.permits as usize);
        self.shared.messages.add_permits(1);
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
