//! `--remote`: every `mcp-unified-gateway` verb asks a running toolgate's admin API
//! (`toolgate serve --http` with `"http": {"admin": {"keySha256": …}}`) instead of starting a gateway of their own.
//! The endpoint comes from `MCP_UNIFIED_GATEWAY_URL` (the MCP endpoint, `http://HOST:PORT/mcp`; the admin routes
//! are beneath it, `…/mcp/policy/explain`, `…/mcp/profiles/{id}/tool-preview`, `…/mcp/presets` and the rest of
//! the frontend's `admin_verbs`), the admin key from
//! `MCP_UNIFIED_GATEWAY_ADMIN_KEY`, sent in `X-MCP-Gateway-Admin-Key`. The key is never a flag (shell history and
//! process listings would show it) and never part of a message; it is not sent in the clear beyond this host
//! (plain `http://` only to a loopback address), nor after a redirect (none is followed).
//!
//! Every way a request can fail gets its own message: no URL or key, an unusable URL, nobody listening, the key
//! refused, no admin API at that path, a profile or tool the gateway does not serve.

use anyhow::Context;
use serde_json::Value;
use std::time::Duration;

/// The gateway's MCP endpoint.
pub(crate) const URL_VAR: &str = "MCP_UNIFIED_GATEWAY_URL";
/// The admin key.
pub(crate) const KEY_VAR: &str = "MCP_UNIFIED_GATEWAY_ADMIN_KEY";
/// The header the admin key is sent in.
const ADMIN_HEADER: &str = "X-MCP-Gateway-Admin-Key";
/// How long one question may take: an explanation or a preview is answered from memory.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an answer read: a preview of a large catalog is well under it.
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// A running gateway's admin API.
pub(crate) struct Remote {
    endpoint: reqwest::Url,
    key: String,
}

impl Remote {
    /// From `MCP_UNIFIED_GATEWAY_URL` and `MCP_UNIFIED_GATEWAY_ADMIN_KEY`.
    pub(crate) fn from_env() -> anyhow::Result<Self> {
        let url = std::env::var(URL_VAR).ok().filter(|v| !v.trim().is_empty());
        let key = std::env::var(KEY_VAR).ok().filter(|v| !v.trim().is_empty());
        let url = url.with_context(|| {
            format!(
                "--remote needs the gateway's endpoint in {URL_VAR} (for `toolgate serve --http`: \
                 http://127.0.0.1:8787/mcp)"
            )
        })?;
        let key = key.with_context(|| {
            format!(
                "--remote needs the admin key in {KEY_VAR} (the key whose SHA-256 is the gateway's \
                 http.admin.keySha256; it is read from the environment only, never from a flag)"
            )
        })?;
        Self::new(url.trim(), key.trim().to_owned())
    }

    fn new(url: &str, key: String) -> anyhow::Result<Self> {
        let endpoint = reqwest::Url::parse(url).map_err(|e| {
            anyhow::anyhow!("{URL_VAR} is not a URL ({e}): give http://HOST:PORT/mcp")
        })?;
        anyhow::ensure!(
            matches!(endpoint.scheme(), "http" | "https"),
            "{URL_VAR} must be an http:// or https:// URL, not {}:",
            endpoint.scheme()
        );
        anyhow::ensure!(
            endpoint.username().is_empty() && endpoint.password().is_none(),
            "{URL_VAR} must not hold credentials: the admin key goes in {KEY_VAR}"
        );
        anyhow::ensure!(
            endpoint.query().is_none() && endpoint.fragment().is_none(),
            "{URL_VAR} must be the endpoint alone (http://HOST:PORT/mcp), without a query or fragment"
        );
        anyhow::ensure!(
            endpoint.scheme() == "https" || is_loopback(&endpoint),
            "refusing to send the admin key in the clear to {}: use https:// for a gateway on another host",
            endpoint.host_str().unwrap_or_default()
        );
        Ok(Self { endpoint, key })
    }

    /// POSTs `body` to the admin route `segments` beneath the endpoint and returns the JSON answer.
    pub(crate) fn post(&self, segments: &[&str], body: &Value) -> anyhow::Result<Value> {
        self.send(reqwest::Method::POST, segments, &[], Some(body))
    }

    /// GETs the admin route `segments` with the query `query` (plain values) and returns the JSON answer.
    pub(crate) fn get(&self, segments: &[&str], query: &[(&str, String)]) -> anyhow::Result<Value> {
        self.send(reqwest::Method::GET, segments, query, None)
    }

    fn send(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let mut url = self.endpoint.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow::anyhow!("{URL_VAR} cannot hold a path"))?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let shown = shown(&self.endpoint);
        let rt = crate::runtime::tokio()?;
        rt.block_on(async {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(TIMEOUT)
                .user_agent(concat!("mcp-unified-gateway (toolgate ", env!("CARGO_PKG_VERSION"), ")"))
                .build()
                .context("cannot build the HTTP client")?;
            let mut request = client.request(method, url).header(ADMIN_HEADER, &self.key);
            if let Some(body) = body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_string());
            }
            let sent = request
                .send()
                .await;
            let response = match sent {
                Ok(r) => r,
                Err(e) if e.is_timeout() => {
                    anyhow::bail!("the gateway at {shown} did not answer within {} s", TIMEOUT.as_secs())
                }
                Err(e) => anyhow::bail!(
                    "cannot reach the gateway at {shown} ({}): is `toolgate serve --http` running there, and \
                     does {URL_VAR} name its endpoint (http://HOST:PORT/mcp)?",
                    reason(&e)
                ),
            };
            let status = response.status();
            let bytes = read_capped(response).await?;
            let answer: Option<Value> = serde_json::from_slice(&bytes).ok();
            let said = answer
                .as_ref()
                .and_then(|a| a.get("error"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if status.is_success() {
                return answer.with_context(|| format!("the gateway at {shown} answered with something not JSON"));
            }
            Err(refusal(status.as_u16(), said, &shown))
        })
    }
}

/// What a refusal from the gateway means, in the terms of what the user can change.
fn refusal(status: u16, said: Option<String>, shown: &str) -> anyhow::Error {
    match (status, said) {
        (401, _) => anyhow::anyhow!(
            "the gateway at {shown} refused the admin key in {KEY_VAR}: it is not the key whose SHA-256 the \
             gateway's http.admin.keySha256 holds"
        ),
        (403, said) => anyhow::anyhow!(
            "the gateway at {shown} refused this request ({}): add the host you reach it by to its \
             http.allowedHosts",
            said.unwrap_or_else(|| "Host or Origin not allowed".to_owned())
        ),
        (404, Some(said)) => anyhow::anyhow!("the gateway at {shown}: {said}"),
        (400 | 409, Some(said)) => anyhow::anyhow!("the gateway at {shown} refused: {said}"),
        (404 | 405, None) => anyhow::anyhow!(
            "the gateway at {shown} has no admin API there: configure \"http\": {{\"admin\": {{\"keySha256\": \
             …}}}} in its config, and give {URL_VAR} as its endpoint (http://HOST:PORT/mcp)"
        ),
        (429 | 503, said) => anyhow::anyhow!(
            "the gateway at {shown} is busy ({}); try again",
            said.unwrap_or_else(|| "no room now".to_owned())
        ),
        (code, said) => anyhow::anyhow!(
            "the gateway at {shown} answered {code}{}",
            said.map(|s| format!(": {s}")).unwrap_or_default()
        ),
    }
}

/// The body, refused past `MAX_ANSWER_BYTES`.
async fn read_capped(mut response: reqwest::Response) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .context("the gateway's answer broke off")?
    {
        anyhow::ensure!(
            out.len() + chunk.len() <= MAX_ANSWER_BYTES,
            "the gateway's answer is larger than {MAX_ANSWER_BYTES} bytes"
        );
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The innermost cause of a failed request (connection refused, no such host), which is what the user acts on.
fn reason(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Whether the URL names this host: a loopback address, or `localhost`.
fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The endpoint as messages show it: scheme, host, port and path.
fn shown(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> String {
        match Remote::new(url, "k".into()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_admin_key_never_leaves_this_host_in_the_clear() {
        assert!(refused("http://gateway.example:8787/mcp").contains("in the clear"));
        assert!(refused("http://10.0.0.5:8787/mcp").contains("in the clear"));
        for fine in [
            "http://127.0.0.1:8787/mcp",
            "http://localhost:8787/mcp",
            "http://[::1]:8787/mcp",
            "https://gateway.example/mcp",
        ] {
            assert_eq!(refused(fine), "", "{fine}");
        }
    }

    #[test]
    fn the_url_is_the_endpoint_alone() {
        assert!(refused("http://user:pw@127.0.0.1/mcp").contains("credentials"));
        assert!(refused("http://127.0.0.1/mcp?key=x").contains("without a query"));
        assert!(refused("ftp://127.0.0.1/mcp").contains("http:// or https://"));
        assert!(refused("127.0.0.1:8787/mcp").contains("http"));
    }
}
