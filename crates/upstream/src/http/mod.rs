//! HTTP upstreams: the Streamable HTTP transport (`"type": "http"`, both eras) and the deprecated 2024-11-05
//! HTTP+SSE transport (`"type": "sse"`), each a `Link` opened by `HttpConnector`, so the connection, handshake,
//! era probe, catalog and restarts above them are the stdio ones.
//!
//! What every HTTP link shares lives here: the client (rustls on ring, platform roots, connect timeout, TCP
//! keep-alive, no redirects at all, so configured headers never reach an address the config does not name) and
//! how a URL is shown (origin and path only: a query may carry a key). The links never see a client's request:
//! their only headers are the configured ones and the protocol's own.
//!
//! `streamable` and `legacy` are the two links, `life` what one life of either keeps (its sender, end and reason), `sse` parses event streams, `headers` builds the protocol headers
//! of each message, `params` the ones mirrored from a tool's arguments, `answer` turns HTTP failures into JSON-RPC answers, and `body` reads bodies within the limit.

mod answer;
mod body;
mod headers;
mod legacy;
mod life;
mod params;
mod sse;
mod streamable;

pub(crate) use answer::probe_falls_back;

use crate::link::{BoxFuture, Connector, Opened};
use config::{ServerConfig, Transport};
use jsonrpc::Limits;
use reqwest::Url;
use std::sync::Once;
use std::time::Duration;

/// How long a TCP connection (and TLS handshake) to an upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answer's body may stay silent between two chunks (event streams excepted: they idle by design).
pub(crate) const READ_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Opens an HTTP link for every life of an `"http"` or `"sse"` server.
#[derive(Debug, Default, Clone, Copy)]
pub struct HttpConnector;

impl Connector for HttpConnector {
    fn connect<'a>(
        &'a self,
        config: &'a ServerConfig,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Opened, String>> {
        Box::pin(async move {
            let Transport::Http { url, headers, sse } = &config.transport else {
                return Err("not an HTTP server".to_owned());
            };
            let url = Url::parse(url).map_err(|e| format!("the URL is not valid: {e}"))?;
            let headers = headers::configured(headers)?;
            let client = client()?;
            let link = Endpoint {
                server: config.name.clone(),
                client,
                url,
                headers,
                limits,
            };
            if *sse {
                let wait = config.startup_timeout.unwrap_or(Duration::from_secs(30));
                legacy::open(link, wait).await
            } else {
                Ok(streamable::open(link))
            }
        })
    }
}

/// Where a link sends and what it sends with every request.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub server: String,
    pub client: reqwest::Client,
    pub url: Url,
    pub headers: reqwest::header::HeaderMap,
    pub limits: Limits,
}

/// The process-wide TLS provider is installed once, before the first client is built.
static PROVIDER: Once = Once::new();

/// `request` with what the caller's task adds to a message it sends `server`: the call's `traceparent`, and the
/// headers of the credentials granted to the caller for that server (they replace configured ones of the same
/// name). Both links build their POSTs through this.
pub(crate) fn for_caller(
    mut request: reqwest::RequestBuilder,
    server: &str,
) -> reqwest::RequestBuilder {
    if let Some(traceparent) = crate::trace_context::traceparent() {
        request = request.header(crate::trace_context::TRACEPARENT, traceparent);
    }
    if let Some(granted) = crate::call_headers::for_server(server) {
        request = request.headers((*granted).clone());
    }
    request
}

/// A client for one life of a link.
pub(crate) fn client() -> Result<reqwest::Client, String> {
    PROVIDER.call_once(|| {
        // Another part of the process may have installed one already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_keepalive(Duration::from_secs(30))
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// A URL as shown in errors and status: scheme, host, port and path; never the query, fragment or credentials.
pub(crate) fn shown(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// Whether two URLs share scheme, host and port.
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// What a failed request says: the error chain, which names a refused connection or a TLS failure; never the
/// URL, whose query may hold a key (messages name the URL as `shown` gives it).
pub(crate) fn describe(e: reqwest::Error) -> String {
    use std::error::Error;
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_drop_query_and_credentials() {
        let url = Url::parse("https://user:pw@mcp.example.com:8443/mcp?key=secret#x").unwrap();
        assert_eq!(shown(&url), "https://mcp.example.com:8443/mcp");
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let base = Url::parse("http://127.0.0.1:9000/sse").unwrap();
        assert!(same_origin(&base, &base.join("/messages?s=1").unwrap()));
        for other in [
            "http://127.0.0.1:9001/messages",
            "https://127.0.0.1:9000/messages",
            "http://localhost:9000/messages",
            "http://127.0.0.1:9000@evil.example/messages",
        ] {
            let other = base.join(other).unwrap();
            assert!(!same_origin(&base, &other), "{other}");
        }
        // A protocol-relative endpoint names another host.
        assert!(!same_origin(&base, &base.join("//evil.example/m").unwrap()));
    }
}
