//! What arrives on event streams: a request's answer stream read (and resumed with `Last-Event-ID` when it ends
//! early), the session's GET stream kept open with backoff, and each event delivered, as related to the request
//! whose stream carried it.

use super::{
    body, describe, lock, related, session_gone, Shared, MAX_RECONNECT_DELAY, RESUME_ATTEMPTS,
    SESSION_EXPIRED,
};
use crate::http::sse::{SseItem, SseParser};
use crate::link::{incoming_from_bytes, Incoming};
use jsonrpc::{Id, Message};
use reqwest::header::ACCEPT;
use reqwest::{Method, StatusCode};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl Shared {
    /// Delivers the events of one stream; true once the answer to `id` was among them.
    pub(super) async fn read_stream(
        &self,
        id: &Id,
        resp: &mut reqwest::Response,
        parser: &mut SseParser,
    ) -> bool {
        while let Ok(Some(items)) = body::next_events(resp, parser).await {
            let mut answered = false;
            for item in items {
                answered |= self.deliver_event(Some(id), item).await;
            }
            // The answer ends the request's stream (a server that keeps it open gains nothing).
            if answered {
                return true;
            }
        }
        false
    }

    /// A request's stream ended before its answer: when the server gave event ids, ask for the rest on a GET
    /// with `Last-Event-ID`, as the 2025-11-25 revision lets servers close streams early.
    pub(super) async fn resume(&self, id: &Id, mut parser: SseParser) -> bool {
        for _ in 0..RESUME_ATTEMPTS {
            let Some(last) = parser.last_id.clone() else {
                return false;
            };
            let delay =
                Duration::from_millis(parser.retry_ms.unwrap_or(0)).min(MAX_RECONNECT_DELAY);
            tokio::time::sleep(delay).await;
            let get = self
                .builder(Method::GET, Some(&last))
                .header(ACCEPT, "text/event-stream");
            let mut resp = match get.send().await {
                Ok(resp) if resp.status().is_success() && body::is_event_stream(&resp) => resp,
                _ => return false,
            };
            if self.read_stream(id, &mut resp, &mut parser).await {
                return true;
            }
        }
        false
    }

    /// The GET stream of a legacy session: what the server starts itself. Reopened with backoff while the link
    /// lives; none when the server answers 405.
    pub(super) async fn listen(self: Arc<Self>) {
        if self.modern.load(Ordering::Relaxed) && lock(&self.legacy_version).is_none() {
            return;
        }
        let ended = self.life.ended.clone();
        tokio::select! {
            () = self.listen_loop() => {}
            () = ended.cancelled() => {}
        }
    }

    pub(super) async fn listen_loop(&self) {
        let mut parser = SseParser::new(self.ep.limits.max_message_bytes);
        let mut delay = Duration::from_secs(1);
        loop {
            let had_session = lock(&self.session).is_some();
            let get = self
                .builder(Method::GET, parser.last_id.clone().as_deref())
                .header(ACCEPT, "text/event-stream");
            match get.send().await {
                Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                Ok(mut resp) if resp.status().is_success() && body::is_event_stream(&resp) => {
                    while let Ok(Some(items)) = body::next_events(&mut resp, &mut parser).await {
                        delay = Duration::from_secs(1);
                        for item in items {
                            self.deliver_event(None, item).await;
                        }
                    }
                }
                Ok(mut resp) => {
                    let status = resp.status();
                    let text = body::error_text(&mut resp).await;
                    if had_session && session_gone(status, &text) {
                        return self.end(SESSION_EXPIRED.to_owned());
                    }
                    tracing::debug!(server = %self.ep.server, "the GET stream was refused (HTTP {status}); not listening");
                    return;
                }
                Err(e) if e.is_connect() => {
                    return self.end(format!("cannot reach {}: {}", self.shown, describe(e)))
                }
                Err(e) => {
                    tracing::debug!(server = %self.ep.server, "the GET stream failed: {}", describe(e))
                }
            }
            let wait = parser.retry_ms.map_or(delay, Duration::from_millis);
            tokio::time::sleep(wait.min(MAX_RECONNECT_DELAY)).await;
            delay = (delay * 2).min(MAX_RECONNECT_DELAY);
        }
    }

    /// Delivers one event; true when it was the answer to `id`.
    pub(super) async fn deliver_event(&self, id: Option<&Id>, item: SseItem) -> bool {
        match item {
            SseItem::Event { event, data, .. } if event.is_empty() || event == "message" => {
                // A priming event carries an id and no message.
                if data.iter().all(u8::is_ascii_whitespace) {
                    return false;
                }
                match id {
                    Some(id) => self.deliver_message(id, &data).await,
                    None => {
                        let item = incoming_from_bytes(&data, &self.ep.limits);
                        self.life.deliver(item).await;
                        false
                    }
                }
            }
            SseItem::Event { .. } => false,
            SseItem::Oversized { len, head, tail } => {
                let found = jsonrpc::recover_id(&head, &tail);
                let answered = found.is_some() && found.as_ref() == id;
                let max = self.ep.limits.max_message_bytes;
                self.life
                    .deliver(Incoming::Oversized {
                        len,
                        max,
                        id: found,
                    })
                    .await;
                answered
            }
        }
    }

    /// Delivers one message read for request `id`; true when it is the answer to `id`. What is not JSON-RPC is
    /// garbage and, in a JSON body, the request's answer too, so it does not wait for its timeout.
    pub(super) async fn deliver_message(&self, id: &Id, bytes: &[u8]) -> bool {
        let mut item = incoming_from_bytes(bytes, &self.ep.limits);
        if let Incoming::Message(Message::Response {
            id: Some(got),
            outcome: Ok(result),
        }) = &mut item
        {
            self.tool_headers.screen(&self.ep.server, got, result);
        }
        let answered = match &item {
            Incoming::Message(Message::Response { id: Some(got), .. }) => got == id,
            Incoming::Oversized { id: Some(got), .. } => got == id,
            _ => false,
        };
        if let Incoming::Message(Message::Response {
            id: Some(got),
            outcome: Ok(result),
        }) = &item
        {
            self.learn(got, result);
        }
        self.life.deliver(related(item, id)).await;
        answered
    }
}
