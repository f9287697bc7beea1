//! The deprecated HTTP+SSE link of protocol 2024-11-05 (`"type": "sse"`): a GET opens an event stream whose first
//! `endpoint` event names where to POST; each message is one POST there, and everything the server sends, answers
//! included, comes on the stream. The stream's end is the end of this life of the link.
//!
//! The endpoint must have the configured URL's origin (scheme, host and port): a server must not be able to
//! send toolgate's configured headers, which often hold credentials, to another address.

use super::answer::{failure, from_status};
use super::body;
use super::life::Life;
use super::sse::{SseItem, SseParser};
use super::streamable::SESSION_EXPIRED;
use super::{describe, same_origin, shown, Endpoint};
use crate::link::INCOMING_CAPACITY;
use crate::link::{incoming_from_bytes, BoxFuture, Incoming, Link, Opened, SendError};
use jsonrpc::Id;
use jsonrpc::UPSTREAM_UNAVAILABLE;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long one POST may take; the server answers on the stream, so the POST itself is quick.
const POST_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the event stream and waits (at most `wait`) for the endpoint to post to.
pub(crate) async fn open(ep: Endpoint, wait: Duration) -> Result<Opened, String> {
    let url = shown(&ep.url);
    let get = ep
        .client
        .get(ep.url.clone())
        .headers(ep.headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send();
    let mut resp = match tokio::time::timeout(wait, get).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => return Err(format!("cannot reach {url}: {}", describe(e))),
        Err(_) => return Err(format!("{url} did not answer within {} s", wait.as_secs())),
    };
    if !resp.status().is_success() || !body::is_event_stream(&resp) {
        let status = resp.status();
        let text = body::error_text(&mut resp).await;
        let text: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
        return Err(format!(
            "{url} answered HTTP {status} without an event stream to the HTTP+SSE GET: {text}"
        ));
    }
    let mut parser = SseParser::new(ep.limits.max_message_bytes);
    let endpoint = tokio::time::timeout(wait, endpoint_event(&mut resp, &mut parser))
        .await
        .map_err(|_| format!("{url} sent no endpoint event within {} s", wait.as_secs()))??;
    let endpoint = ep
        .url
        .join(endpoint.trim())
        .map_err(|e| format!("the endpoint event of {url} is not a valid URL: {e}"))?;
    if !same_origin(&ep.url, &endpoint) {
        return Err(format!(
            "the endpoint event of {url} names another origin ({}); refused, so the configured headers are \
             never sent there",
            endpoint.origin().ascii_serialization()
        ));
    }
    let (tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
    let shared = Arc::new(Shared {
        shown: url,
        endpoint,
        ep,
        life: Life::new(tx),
    });
    tokio::spawn(Arc::clone(&shared).read(resp, parser));
    Ok(Opened {
        link: Box::new(SseLink { shared }),
        incoming,
        pid: None,
    })
}

async fn endpoint_event(resp: &mut Response, parser: &mut SseParser) -> Result<String, String> {
    loop {
        match body::next_events(resp, parser).await {
            Ok(Some(items)) => {
                for item in items {
                    if let SseItem::Event { event, data, .. } = item {
                        if event == "endpoint" {
                            return String::from_utf8(data)
                                .map_err(|_| "the endpoint event is not UTF-8".to_owned());
                        }
                    }
                }
            }
            Ok(None) => return Err("the event stream ended before its endpoint event".to_owned()),
            Err(e) => return Err(format!("the event stream broke: {e}")),
        }
    }
}

pub(crate) struct SseLink {
    shared: Arc<Shared>,
}

struct Shared {
    ep: Endpoint,
    shown: String,
    endpoint: Url,
    life: Life,
}

impl Link for SseLink {
    fn send<'a>(&'a self, msg: &'a Value) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(self.shared.send(msg))
    }

    fn end_reason(&self) -> Option<String> {
        self.shared.life.reason()
    }

    fn shutdown(&self, _grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.shared.end("the link was shut down".to_owned()) })
    }
}

impl Shared {
    async fn send(&self, msg: &Value) -> Result<(), SendError> {
        let body = serde_json::to_vec(msg).map_err(|_| SendError::Closed)?;
        let max = self.ep.limits.max_message_bytes;
        if body.len() > max {
            return Err(SendError::TooLarge {
                len: body.len(),
                max,
            });
        }
        if self.life.ended.is_cancelled() {
            return Err(SendError::Closed);
        }
        let id = msg
            .get("method")
            .and(msg.get("id"))
            .and_then(Id::from_value);
        let post = self
            .ep
            .client
            .post(self.endpoint.clone())
            .headers(self.ep.headers.clone())
            .header(CONTENT_TYPE, "application/json");
        let post = super::for_caller(post, &self.ep.server).body(body).send();
        let resp = tokio::select! {
            r = tokio::time::timeout(POST_TIMEOUT, post) => r,
            () = self.life.ended.cancelled() => return Err(SendError::Closed),
        };
        let mut resp = match resp {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) if e.is_connect() => {
                self.end(format!("cannot reach {}: {}", self.shown, describe(e)));
                return Err(SendError::Closed);
            }
            Ok(Err(e)) => {
                let why = format!("posting to {} failed: {}", self.shown, describe(e));
                return self.fail(id.as_ref(), why, None).await;
            }
            Err(_) => {
                let why = format!(
                    "{} did not accept the message within {} s",
                    self.shown,
                    POST_TIMEOUT.as_secs()
                );
                return self.fail(id.as_ref(), why, None).await;
            }
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            // The server no longer knows the stream this endpoint belonged to.
            self.fail(id.as_ref(), SESSION_EXPIRED.to_owned(), Some(404))
                .await?;
            self.end(SESSION_EXPIRED.to_owned());
            return Ok(());
        }
        if !status.is_success() {
            let text = body::error_text(&mut resp).await;
            match id {
                Some(id) => {
                    let answer = from_status(&id, status.as_u16(), &text, None, &self.shown);
                    self.life.deliver(answer).await;
                }
                None => {
                    tracing::warn!(server = %self.ep.server, "{} answered HTTP {status} to a notification", self.shown)
                }
            }
        }
        Ok(())
    }

    async fn fail(
        &self,
        id: Option<&Id>,
        why: String,
        status: Option<u16>,
    ) -> Result<(), SendError> {
        match id {
            Some(id) => {
                self.life
                    .deliver(failure(id, UPSTREAM_UNAVAILABLE, why, status))
                    .await;
                Ok(())
            }
            None => {
                tracing::warn!(server = %self.ep.server, "{why}");
                Ok(())
            }
        }
    }

    /// Delivers the stream's messages until it ends, which ends this life of the link.
    async fn read(self: Arc<Self>, mut resp: Response, mut parser: SseParser) {
        let ended = self.life.ended.clone();
        let why = tokio::select! {
            why = self.read_loop(&mut resp, &mut parser) => why,
            () = ended.cancelled() => return,
        };
        self.end(why);
    }

    async fn read_loop(&self, resp: &mut Response, parser: &mut SseParser) -> String {
        loop {
            match body::next_events(resp, parser).await {
                Ok(Some(items)) => {
                    for item in items {
                        self.deliver_event(item).await;
                    }
                }
                Ok(None) => return format!("the event stream from {} ended", self.shown),
                Err(e) => return format!("the event stream from {} broke: {e}", self.shown),
            }
        }
    }

    async fn deliver_event(&self, item: SseItem) {
        let item = match item {
            SseItem::Event { event, data, .. } if event.is_empty() || event == "message" => {
                incoming_from_bytes(&data, &self.ep.limits)
            }
            SseItem::Event { .. } => return,
            SseItem::Oversized { len, head, tail } => Incoming::Oversized {
                len,
                max: self.ep.limits.max_message_bytes,
                id: jsonrpc::recover_id(&head, &tail),
            },
        };
        self.life.deliver(item).await;
    }

    fn end(&self, why: String) {
        self.life.end(why);
    }
}
