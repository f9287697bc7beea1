//! Sending a 2026-07-28 request on to the replica that holds what it names: a bridged call waiting for the
//! retry's answers, or a task in that replica's upstream.
//!
//! Behind a load balancer a client's retry of a bridged call (a `requestState` toolgate minted) or its task method
//! (a toolgate task id) may reach any replica, but the upstream call or task lives in one. The gateway reads the
//! sealed state or id and says where (`Gateway::holder_of`); this sends the request there as it came: the same body bytes, the
//! headers that authenticate the caller and that the holder checks (its `Host` too, which every replica
//! accepts), and nothing else. The holder authenticates it and checks the retry against its state as for any
//! request; its answer streams back as it is written, and a client that hangs up ends it there too.
//!
//! Bounds: the address comes only from a state sealed under the team's key (a caller cannot name one); a
//! request is sent on at most once (`HOP_HEADER`: a replica never sends on a request that carries it, so no loop
//! is possible); connecting is bounded by `CONNECT_TIMEOUT`; the request keeps its slot here while it is served
//! there. When the holder cannot be reached the request fails closed with 502, saying what is lost.

use crate::http::reply::Refusal;
use crate::http::shares::Held;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Request, Uri};
use axum::response::Response;
use futures_util::StreamExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// Marks a request one replica sent on to another; such a request is served where it arrives or refused, never
/// sent on again. A caller may send it too: it can only keep its own retry from being sent on.
pub(crate) const HOP_HEADER: &str = "toolgate-forwarded";

/// How long connecting to the holder may take before the retry fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The request headers sent on.
const SENT_ON: &[&str] = &[
    "authorization",
    "host",
    "origin",
    "content-type",
    "accept",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "traceparent",
];

/// The response headers carried back.
const CARRIED_BACK: &[&str] = &[
    "content-type",
    "cache-control",
    "retry-after",
    "www-authenticate",
];

/// The client replicas reach each other with.
pub(crate) struct Forwarder {
    client: Client<HttpConnector, Body>,
}

impl Forwarder {
    pub(crate) fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Sends the request (`headers`, `body`) on to the replica at `address` and streams its answer back; the
    /// request slot `permit` is held until the answer ends.
    pub(crate) async fn send(
        &self,
        address: &str,
        headers: &HeaderMap,
        body: Bytes,
        permit: Held,
    ) -> Result<Response, Refusal> {
        let lost = |why: String| {
            tracing::warn!("could not send a retry on to the replica at {address}: {why}");
            Refusal::Holder(format!(
                "toolgate could not reach the replica at {address} that holds what this request names \
                 ({why}): a call waiting for its answers there is lost, make the call again; a task there \
                 cannot be reached until that replica is back"
            ))
        };
        let uri: Uri = format!("http://{address}/mcp")
            .parse()
            .map_err(|_| lost("its address is not a host and port".to_owned()))?;
        let mut request = Request::post(uri)
            .body(Body::from(body))
            .map_err(|e| lost(e.to_string()))?;
        for name in SENT_ON {
            for value in headers.get_all(*name) {
                request.headers_mut().append(*name, value.clone());
            }
        }
        request
            .headers_mut()
            .insert(HOP_HEADER, HeaderValue::from_static("1"));
        let answer = self
            .client
            .request(request)
            .await
            .map_err(|e| lost(e.to_string()))?;
        tracing::info!("sent a retry on to the replica at {address} that holds its call");
        let (parts, incoming) = answer.into_parts();
        let stream = Body::new(incoming).into_data_stream().map(move |chunk| {
            // The slot is this request's until the holder's answer has passed through.
            let _ = &permit;
            chunk
        });
        let mut response = Response::new(Body::from_stream(stream));
        *response.status_mut() = parts.status;
        for name in CARRIED_BACK {
            for value in parts.headers.get_all(*name) {
                response.headers_mut().append(*name, value.clone());
            }
        }
        Ok(response)
    }
}
